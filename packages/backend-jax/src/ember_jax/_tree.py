"""The arguments of a compiled step as (dynamic leaves, hashable structure), and their rebuilding while tracing.

:func:`flatten` walks the arguments of an :func:`ember_jax.jit` call once per call (the hot path) and returns
the jax arrays to pass to the compiled program (``Flat.leaves``) and a nested tuple of plain values describing
everything else (the *structure*, the cache key). :func:`~._rebuild.rebuild` runs only while jax traces: it walks
the same arguments again, in the same order, and makes the objects the step function receives, holding tracers.

What is what (by type, not annotation):

=======================  ==============================================================================
``Tensor``               one leaf (the inner array for a Float tensor on an ``Autodiff(jax)`` device); the
                         structure keeps the device, kind, tracking flag, shape and dtype.
``Param``                its tensor; the ``ParamId`` and ``require_grad`` are static.
``RunningState``         its tensor; the cell is rebuilt, and a new value set inside is written back.
``Module``               its fields (``__ember_fields__``), walked; the class is static.
``Optimizer``            its per-parameter ``_states`` (tensors are leaves; a Python int/float becomes an
                         Int/Float ``[1]`` tensor first); the rule and options are static.
``GradientsParams``      its tensors; the ids are static.
dataclass instances      their fields, walked (batches, outputs).
list, tuple, namedtuple  their items; dict: its values (keys static).
``jax.Array``/``ndarray``  a raw leaf (comes back as a ``jax.Array``).
anything else            static: hashed by value, or by identity when unhashable.
=======================  ==============================================================================

Objects met twice (a ``Param`` shared by two layers, one tensor at two places) are walked once: later
occurrences are a back-reference (``(REF, n)``), so they stay one leaf and one object inside the step.
Every object with an identity (tensor, param, running state, module, optimizer, gradients) gets a number
``n`` in walk order; ``Flat.objs[n]`` is the caller's object, which the output side uses to hand back inputs
the step returns unchanged and to write state back.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import jax
import numpy as np

from ember import Tensor, TensorData
from ember.backend import Device
from ember.backend.contract import AutodiffPrimitive as AP
from ember.module import Module, Param, RunningState
from ember.optim import GradientsParams, Optimizer

__all__ = [
    "Flat", "flatten", "device_info", "ForeignTensor", "Id", "static_key", "kind_of", "fast_spec", "Hashed",
    "dc_fields", "shift_spec",
]

# node tags (first item of every structure tuple)
TENSOR, ALIAS, REF, PARAM, RSTATE, MODULE, OPTIM, GRADS, SEQ, DICT, DCLASS, STATIC, STATIC_ID, ARRAY, NONE = range(15)

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


class Flat:
    """One call's flattened arguments: the leaves, the caller's objects by number and the two memos
    (object id -> number, array id -> leaf index)."""

    __slots__ = ("leaves", "objs", "memo", "pmemo", "fast", "hits", "marks")

    def __init__(self, fast: dict[int, Any] | None = None) -> None:
        self.leaves: list[Any] = []
        self.objs: list[Any] = []
        self.memo: dict[int, int] = {}
        self.pmemo: dict[int, int] = {}
        #: the previous call's flattened results (see :func:`fast_spec`), or None for a complete walk
        self.fast = fast
        self.hits = 0  # objects taken from ``fast``
        #: optimizer id -> (objects, leaves) counted before its states were walked (see :func:`shift_spec`)
        self.marks: dict[int, tuple[int, int]] = {}


# ---------------------------------------------------------------------- devices
#: Device -> (is an Autodiff(jax) device, its jax backend); filled on first use of a device
_DEVICES: dict[Device, tuple[bool, Any]] = {}


class ForeignTensor(Exception):
    """Internal: a tensor of another backend was met (the caller turns it into a BackendError with its path)."""

    def __init__(self, obj: Any) -> None:
        self.obj = obj


def device_info(dev: Device, obj: Any = None) -> tuple[bool, Any]:
    """``(autodiff, jax backend)`` of an Ember device.

    Raises:
        ForeignTensor: the device does not belong to the jax backend (or ``Autodiff`` of it).
    """
    info = _DEVICES.get(dev)
    if info is None:
        from ._backend import JaxBackend

        inner = dev.inner.backend
        if not isinstance(inner, JaxBackend):
            raise ForeignTensor(obj)
        info = _DEVICES[dev] = (bool(dev.backend.is_autodiff), inner)
    return info


# ---------------------------------------------------------------------- flatten (every call)
def _enter(fl: Flat, x: Any) -> Any:
    """Number ``x`` (its first visit: ``None``) or its back-reference ``(REF, n)`` when already walked."""
    memo = fl.memo
    n = memo.get(id(x))
    if n is not None:
        return (REF, n)
    memo[id(x)] = len(fl.objs)
    fl.objs.append(x)
    return None


# The structure of a tensor names its device, kind and tracking flag (0 plain, 1 untracked autodiff, 2 tracked)
# and either the shape and dtype of a new leaf or the index of an earlier leaf holding the same array. Devices
# are checked once per new structure (:func:`scan`), not here.
def flatten(fl: Flat, x: Any) -> Any:
    """The structure of ``x``; its leaves are appended to ``fl.leaves``."""
    h = _FLAT.get(x.__class__)
    if h is None:
        h = _classify(x.__class__)[0]
    return h(fl, x)


def _f_tensor(fl: Flat, t: Any) -> Any:
    memo = fl.memo
    k = id(t)
    n = memo.get(k)
    if n is not None:
        return (REF, n)
    objs = fl.objs
    memo[k] = len(objs)
    objs.append(t)
    p = t.primitive
    if p.__class__ is AP:
        flag = 1 if p.node is None else 2
        p = p.p
    else:
        flag = 0
    pm = fl.pmemo
    j = pm.get(id(p))
    if j is not None:
        return (ALIAS, t.device, t.kind, flag, j)
    leaves = fl.leaves
    pm[id(p)] = len(leaves)
    leaves.append(p)
    return (TENSOR, t.device, t.kind, flag, p.shape, p.dtype)


def _f_value(fl: Flat, t: Any) -> Any:
    """The structure of a parameter's value: a tensor, or another object a Param may hold (an
    ``ember.quantization.QuantizedTensor``, a dataclass of tensors)."""
    return _f_tensor(fl, t) if t.__class__ is Tensor else flatten(fl, t)


def _f_param(fl: Flat, x: Param) -> Any:
    ref = _enter(fl, x)
    if ref is not None:
        return ref
    return (PARAM, x.id._value, x.require_grad, _f_value(fl, x._tensor))


def _f_state(fl: Flat, x: RunningState) -> Any:
    ref = _enter(fl, x)
    if ref is not None:
        return ref
    return (RSTATE, x.id._value, _f_tensor(fl, x._tensor))


_FIELDS_MISSING = object()


def _f_module(fl: Flat, m: Any) -> Any:
    memo = fl.memo
    k = id(m)
    n = memo.get(k)
    if n is not None:
        return (REF, n)
    objs = fl.objs
    fast = fl.fast
    if fast is not None:
        c = fast.get(k)
        if c is not None and c[0] is m and (c[2] or (not objs and not fl.leaves)):
            memo[k] = len(objs)
            objs.extend(c[3])
            fl.leaves.extend(c[4])
            fl.hits += 1
            return c[1]
    memo[k] = len(objs)
    objs.append(m)
    cls = m.__class__
    d = m.__dict__
    out: list[Any] = []
    for f in cls.__ember_fields__:
        v = d.get(f, _FIELDS_MISSING)
        if v is _FIELDS_MISSING:
            v = getattr(m, f)
        c = v.__class__
        if c is Param:  # inlined _f_param: most fields of most modules
            k = id(v)
            n = memo.get(k)
            if n is not None:
                out.append((REF, n))
                continue
            memo[k] = len(objs)
            objs.append(v)
            out.append((PARAM, v.id._value, v.require_grad, _f_value(fl, v._tensor)))
            continue
        h = _FLAT.get(c)
        if h is None:
            h = _classify(c)[0]
        out.append(h(fl, v))
    return (MODULE, cls, tuple(out))


class _Normalize(Exception):
    """Internal: an optimizer state holds a Python number or TensorData (normalize, then flatten again)."""


def _f_optim(fl: Flat, o: Optimizer) -> Any:
    ref = _enter(fl, o)
    if ref is not None:
        return ref
    objs = fl.objs
    k = id(o)
    d = o.__dict__
    attrs = tuple([(a, static_key(v)) for a, v in d.items() if a != "_states"])
    fast = fl.fast
    if fast is not None:
        c = fast.get(k)
        if (c is not None and c[0] is o and c[1] is o._states and _same_values(o._states, c[2])
                and (c[6] is None or c[6] == (len(objs), len(fl.leaves)))):
            objs.extend(c[4])
            fl.leaves.extend(c[5])
            fl.hits += 1
            return (OPTIM, o.__class__, attrs, c[3])
    mark = fl.marks[k] = (len(objs), len(fl.leaves))
    try:
        states = tuple([(pid._value, _f_st(fl, st)) for pid, st in o._states.items()])
    except _Normalize:
        from ._states import normalize_states

        _rewind(fl, mark)
        normalize_states(o, fl)
        states = tuple([(pid._value, _f_st(fl, st)) for pid, st in o._states.items()])
    return (OPTIM, o.__class__, attrs, states)


def _same_values(d: dict[Any, Any], values: tuple[Any, ...]) -> bool:
    if len(d) != len(values):
        return False
    for a, b in zip(d.values(), values):
        if a is not b:
            return False
    return True


def _f_st(fl: Flat, x: Any) -> Any:
    """A per-parameter optimizer state: dicts / lists of tensors and ``None``."""
    c = x.__class__
    if c is dict:
        nodes = [_f_tensor(fl, v) if v.__class__ is Tensor else _f_st(fl, v) for v in x.values()]
        return (DICT, dict, tuple(x), tuple(nodes))
    if c is int or c is float or c is TensorData:
        raise _Normalize
    if c is list or c is tuple:
        return (SEQ, c, tuple([_f_st(fl, v) for v in x]))
    return flatten(fl, x)


def _rewind(fl: Flat, mark: tuple[int, int]) -> None:
    n_objs, n_leaves = mark
    for o in fl.objs[n_objs:]:
        del fl.memo[id(o)]
    del fl.objs[n_objs:]
    for p in fl.leaves[n_leaves:]:
        del fl.pmemo[id(p)]
    del fl.leaves[n_leaves:]


def _f_grads(fl: Flat, g: GradientsParams) -> Any:
    ref = _enter(fl, g)
    if ref is not None:
        return ref
    return (GRADS, tuple([(pid._value, _f_tensor(fl, t)) for pid, t in g._grads.items()]))


def _f_seq(fl: Flat, x: Any) -> Any:
    return (SEQ, x.__class__, tuple([flatten(fl, v) for v in x]))


def _f_dict(fl: Flat, x: dict[Any, Any]) -> Any:
    return (DICT, x.__class__, tuple(x), tuple([flatten(fl, v) for v in x.values()]))


def _f_dclass(fl: Flat, x: Any) -> Any:
    cls = x.__class__
    return (DCLASS, cls, tuple([flatten(fl, getattr(x, f)) for f in dc_fields(cls)]))


def _f_array(fl: Flat, x: Any) -> Any:
    pm = fl.pmemo
    j = pm.get(id(x))
    if j is None:
        j = pm[id(x)] = len(fl.leaves)
        fl.leaves.append(x)
    # jax keys its own cache on weak typing too (``jnp.asarray(1.0)`` is weakly typed): so must the structure
    return (ARRAY, x.__class__, x.shape, x.dtype, j, getattr(x, "weak_type", False))


def _f_plain(fl: Flat, x: Any) -> Any:
    if x.__class__ is float:  # by its bits: 0.0 and -0.0 differ, a NaN equals itself
        return (STATIC, float, x.hex())
    return (STATIC, x.__class__, x)


_NONE_NODE = (NONE,)


def _f_none(fl: Flat, x: Any) -> Any:
    return _NONE_NODE


def _f_static(fl: Flat, x: Any) -> Any:
    return static_key(x)


def _f_gradients(fl: Flat, x: Any) -> Any:
    raise TypeError(
        "ember_jax.jit: an ember.autodiff.Gradients (the result of loss.backward()) cannot cross the boundary of "
        "a compiled step: it is keyed by graph leaves that exist only inside the call. Convert it with "
        "GradientsParams.from_grads(grads, model) and pass or return that."
    )


def static_key(x: Any) -> Any:
    """The cache-key form of a plain value: itself (with its type, so ``1``, ``1.0`` and ``True`` differ) when
    hashable (a float by its bits), a list as a tuple, else its identity."""
    try:
        hash(x)
    except TypeError:
        if x.__class__ is list:
            return (SEQ, list, tuple(static_key(v) for v in x))
        return (STATIC_ID, Id(x))
    if x.__class__ is float:  # by its bits: 0.0 and -0.0 differ, a NaN equals itself
        return (STATIC, float, x.hex())
    return (STATIC, x.__class__, x)


_DC_FIELDS: dict[type, tuple[str, ...]] = {}


def dc_fields(cls: type) -> tuple[str, ...]:
    names = _DC_FIELDS.get(cls)
    if names is None:
        names = _DC_FIELDS[cls] = tuple(f.name for f in dataclasses.fields(cls))
    return names


# ---------------------------------------------------------------------- results flattened ahead (fast path)
# The step's results are usually its next call's arguments (``model, item = step(model, optim, ...)``, the
# optimizer's new state). Their structure is known when the step is traced, so the generated output code also
# records, per call, the objects and arrays of each result module and of each optimizer's new state in flatten
# order; the next call's flatten then checks identity and takes them as they are instead of walking them.
# Modules holding running states (mutable cells) or raw arrays are always walked.
class Hashed(tuple):  # type: ignore[type-arg]
    """A structure whose hash is computed once: the structures of results flattened ahead come back at every
    call as the same object, so the cache key's hash and equality cost nothing for them (equality finds the
    same object first)."""

    _h: int

    def __new__(cls, node: tuple[Any, ...]) -> Hashed:
        self = super().__new__(cls, node)
        self._h = tuple.__hash__(self)
        return self

    def __hash__(self) -> int:
        return self._h


def fast_spec(x: Any) -> tuple[Any, bool, list[Any], list[Any]] | None:
    """For an object built inside the trace (a module, or an optimizer's ``_states`` dict): ``(structure,
    position independent, objects, leaves)`` as a walk from an empty :class:`Flat` gives them, or ``None`` when
    the object cannot take the fast path."""
    fc = Flat()
    if isinstance(x, dict):
        node: Any = tuple([(pid._value, _f_st(fc, st)) for pid, st in x.items()])
    else:
        node = flatten(fc, x)
    tags = _tags(node) if node else set()
    if RSTATE in tags or ARRAY in tags or STATIC_ID in tags or OPTIM in tags:
        return None
    return Hashed(node), not ({REF, ALIAS} & tags), fc.objs, fc.leaves


def shift_spec(spec: tuple[Any, bool, list[Any], list[Any]], mark: tuple[int, int]
               ) -> tuple[Any, bool, list[Any], list[Any]] | None:
    """An optimizer-state :func:`fast_spec` whose back-references (the step counter shared by every parameter's
    state) are numbered from ``mark`` = (objects, leaves) walked before the states, as the walk of a call
    numbers them when the states come at that position; ``None`` for states holding other nodes."""
    try:
        node = tuple([(pid, _shift(c, *mark)) for pid, c in spec[0]])
    except _Unshiftable:
        return None
    return Hashed(node), spec[1], spec[2], spec[3]


class _Unshiftable(Exception):
    pass


def _shift(node: Any, dobj: int, dleaf: int) -> Any:
    tag = node[0]
    if tag == REF:
        return (REF, node[1] + dobj)
    if tag == ALIAS:
        return node[:4] + (node[4] + dleaf,)
    if tag == DICT:
        return (DICT, node[1], node[2], tuple([_shift(c, dobj, dleaf) for c in node[3]]))
    if tag == SEQ:
        return (SEQ, node[1], tuple([_shift(c, dobj, dleaf) for c in node[2]]))
    if tag == TENSOR or tag == NONE or tag == STATIC:
        return node
    raise _Unshiftable


def _tags(node: Any, out: set[int] | None = None) -> set[int]:
    """The tags of every node under ``node`` (a structure, or the ``(pid, state)`` pairs of optimizer states)."""
    out = set() if out is None else out
    tag = node[0]
    if isinstance(tag, tuple):  # optimizer states: ((pid, node), ...)
        for _pid, c in node:
            _tags(c, out)
        return out
    out.add(tag)
    if tag == PARAM:
        _tags(node[3], out)
    elif tag == RSTATE:
        _tags(node[2], out)
    elif tag in (MODULE, SEQ, DCLASS):
        for c in node[2]:
            _tags(c, out)
    elif tag == DICT:
        for c in node[3]:
            _tags(c, out)
    elif tag == GRADS:
        for _pid, c in node[1]:
            _tags(c, out)
    elif tag == OPTIM:
        for _pid, c in node[3]:
            _tags(c, out)
    return out


# ---------------------------------------------------------------------- classification of types
#: what a type is, for the walks here and in :mod:`._rebuild` (one classification, two handler tables)
KINDS: dict[type, str] = {}


def kind_of(cls: type) -> str:
    """The kind of a type: ``tensor``, ``param``, ``state``, ``module``, ``optim``, ``grads``, ``gradients``,
    ``none``, ``plain``, ``seq``, ``dict``, ``array``, ``dclass`` or ``static`` (cached)."""
    k = KINDS.get(cls)
    if k is not None:
        return k
    from ember.autodiff import Gradients

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
    elif issubclass(cls, (jax.Array, np.ndarray)):
        k = "array"
    elif dataclasses.is_dataclass(cls):
        k = "dclass"
    else:
        k = "static"
    KINDS[cls] = k
    return k


def _rebuildable_dict(cls: type) -> bool:
    try:
        cls([("k", 1)])  # type: ignore[call-arg]
    except Exception:
        return False
    return True


_FLAT: dict[type, Callable[[Flat, Any], Any]] = {}


_F_BY_KIND: dict[str, Callable[[Flat, Any], Any]] = {
    "tensor": _f_tensor, "param": _f_param, "state": _f_state, "module": _f_module, "optim": _f_optim,
    "grads": _f_grads, "gradients": _f_gradients, "none": _f_none, "plain": _f_plain, "seq": _f_seq,
    "dict": _f_dict, "array": _f_array, "dclass": _f_dclass, "static": _f_static,
}


def _classify(cls: type) -> tuple[Callable[[Flat, Any], Any]]:
    """The flatten handler of a type, cached."""
    h = _FLAT[cls] = _F_BY_KIND[kind_of(cls)]
    return (h,)
