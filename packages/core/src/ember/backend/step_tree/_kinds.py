"""The kinds of the values a compiled step takes, the node tags of its argument structure, static values as cache
keys, and :class:`StepTree`: one backend's classification and hooks."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from ...autodiff import Gradients
from ...module import Module, Param, RunningState
from ...optim import GradientsParams, Optimizer
from ...tensor import Tensor

__all__ = [
    "TENSOR", "ALIAS", "REF", "PARAM", "RSTATE", "MODULE", "OPTIM", "GRADS", "SEQ", "DICT", "DCLASS", "STATIC",
    "STATIC_ID", "ARRAY", "NONE", "KINDS", "Id", "StepTree", "static_key", "dc_fields",
]

# node tags: the first item of every structure tuple
TENSOR = 0
"""A tensor with a new leaf: ``(TENSOR, device, kind, flag, shape, dtype)``; ``flag`` 0 plain, 1 untracked on an
``Autodiff`` device, 2 tracked."""
ALIAS = 1
"""A tensor whose array is an earlier leaf: ``(ALIAS, device, kind, flag, leaf index)``."""
REF = 2
"""An object walked before: ``(REF, object number)``."""
PARAM = 3
"""A ``Param``: ``(PARAM, id, require_grad, value node)``."""
RSTATE = 4
"""A ``RunningState``: ``(RSTATE, id, tensor node)``."""
MODULE = 5
"""A ``Module``: ``(MODULE, class, field nodes)``."""
OPTIM = 6
"""An ``Optimizer``: ``(OPTIM, class, static attributes, ((param id, state node), ...))``."""
GRADS = 7
"""A ``GradientsParams``: ``(GRADS, ((param id, tensor node), ...))``."""
SEQ = 8
"""A list, tuple or namedtuple: ``(SEQ, class, item nodes)``."""
DICT = 9
"""A dict: ``(DICT, class, keys, value nodes)``."""
DCLASS = 10
"""A dataclass instance: ``(DCLASS, class, field nodes)``."""
STATIC = 11
"""A hashable static value: ``(STATIC, class, value)`` (a float: its ``hex()``)."""
STATIC_ID = 12
"""An unhashable static value, by identity: ``(STATIC_ID, Id(value))``."""
ARRAY = 13
"""A raw array of the backend: ``(ARRAY, class, shape, dtype, leaf index, array_extra(array))``."""
NONE = 14
"""``None``: ``(NONE,)``."""

KINDS = ("tensor", "param", "state", "module", "optim", "grads", "gradients", "none", "plain", "seq", "dict",
         "array", "dclass", "static")
"""The kinds :meth:`StepTree.kind_of` names."""


class Id:
    """A static value compared by identity (unhashable plain values: the cache key keeps it alive)."""

    __slots__ = ("obj",)

    def __init__(self, obj: Any) -> None:
        self.obj = obj

    def __hash__(self) -> int:
        return id(self.obj)

    def __eq__(self, other: object) -> bool:
        return other.__class__ is Id and other.obj is self.obj  # type: ignore[attr-defined]

    def __repr__(self) -> str:
        return f"Id({type(self.obj).__name__} at {id(self.obj):#x})"


def static_key(x: Any) -> Any:
    """The cache-key form of a plain value: itself (with its type, so ``1``, ``1.0`` and ``True`` differ) when
    hashable (a float by its bits: ``0.0`` and ``-0.0`` differ, a NaN equals itself), a list as a tuple of keys,
    else its identity (:class:`Id`)."""
    try:
        hash(x)
    except TypeError:
        if x.__class__ is list:
            return (SEQ, list, tuple(static_key(v) for v in x))
        return (STATIC_ID, Id(x))
    if x.__class__ is float:
        return (STATIC, float, x.hex())
    return (STATIC, x.__class__, x)


_DC_FIELDS: dict[type, tuple[str, ...]] = {}


def dc_fields(cls: type) -> tuple[str, ...]:
    """The field names of a dataclass (cached per class)."""
    names = _DC_FIELDS.get(cls)
    if names is None:
        names = _DC_FIELDS[cls] = tuple(f.name for f in dataclasses.fields(cls))  # type: ignore[arg-type]
    return names


def _rebuildable_dict(cls: type) -> bool:
    try:
        cls([("k", 1)])  # type: ignore[call-arg]
    except Exception:
        return False
    return True


class StepTree:
    """One backend's view of the arguments of a compiled step: which raw arrays are leaves, and its hooks.

    The walks (:func:`~ember.backend.step_tree.flatten`, :func:`~ember.backend.step_tree.rebuild`) are the same
    for every backend; what differs is given here.

    Args:
        name: the name of the compiling function in error messages (``"ember_jax.jit"``).
        array_types: the backend's raw array classes, taken as leaves (kind ``array``), e.g. ``(jax.Array,
            numpy.ndarray)``; other unknown classes are static values.
        array_extra: ``f(array) -> hashable``, what the structure of a raw array leaf records besides its class,
            shape and dtype (jax: its weak typing; torch: its device).
        place_states: optional ``f(optimizer, flat, states) -> states``, called after an optimizer's Python
            numbers became tensors (:func:`~ember.backend.step_tree.normalize_states`), to place the new tensors
            (jax: replicated over the devices the call spans).
        default_device: ``f() -> Device``, where a number of an optimizer state goes when the call holds no
            tensor (the backend's default device).
    """

    def __init__(self, name: str, array_types: tuple[type, ...], array_extra: Callable[[Any], Any],
                 default_device: Callable[[], Any],
                 place_states: Callable[[Any, Any, dict[Any, Any]], dict[Any, Any]] | None = None) -> None:
        self.name = name
        self.array_types = tuple(array_types)
        self.array_extra = array_extra
        self.default_device = default_device
        self.place_states = place_states
        self.kinds: dict[type, str] = {}
        #: per class: the flatten handler (filled by the walks on first use)
        self.flat: dict[type, Callable[[Any, Any], Any]] = {}
        #: per class: the rebuild handler
        self.build: dict[type, Callable[[Any, Any], Any]] = {}

    def __repr__(self) -> str:
        return f"StepTree({self.name!r}, arrays={[c.__name__ for c in self.array_types]})"

    def kind_of(self, cls: type) -> str:
        """The kind of a class, one of :data:`KINDS` (cached): ``tensor``, ``param``, ``state`` (a
        ``RunningState``), ``module``, ``optim``, ``grads`` (``GradientsParams``), ``gradients`` (the result of
        ``backward()``, refused), ``none``, ``plain`` (int, float, bool, str, bytes, complex), ``seq`` (list,
        tuple, namedtuple), ``dict`` (a dict, or a subclass constructible from pairs), ``array`` (the backend's
        raw arrays), ``dclass`` (dataclass instances) or ``static`` (anything else)."""
        k = self.kinds.get(cls)
        if k is not None:
            return k
        if issubclass(cls, Tensor):
            k = "tensor"
        elif issubclass(cls, Param):
            k = "param"
        elif issubclass(cls, RunningState):
            k = "state"
        elif issubclass(cls, Module):
            k = "module"
        elif issubclass(cls, Optimizer):
            k = "optim"
        elif issubclass(cls, GradientsParams):
            k = "grads"
        elif issubclass(cls, Gradients):
            k = "gradients"
        elif cls is type(None):
            k = "none"
        elif cls in (int, float, bool, str, bytes, complex):
            k = "plain"
        elif issubclass(cls, (list, tuple)):
            k = "seq"
        elif cls is dict or (issubclass(cls, dict) and _rebuildable_dict(cls)):
            k = "dict"
        elif self.array_types and issubclass(cls, self.array_types):
            k = "array"
        elif dataclasses.is_dataclass(cls):
            k = "dclass"
        else:
            k = "static"
        self.kinds[cls] = k
        return k
