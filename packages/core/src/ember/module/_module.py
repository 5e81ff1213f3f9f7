"""``Module``: the base class of immutable parameter trees (Burn's ``Module`` derive, Equinox style)."""

from __future__ import annotations

import dataclasses
import functools
import os
import sys
import threading
import types
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from ..backend._device import Device
from ..record import DefaultFileRecorder
from ._display import display
from ._param import Param, RunningState
from ._record import load_into, to_record
from ._tree import fields_of, map_leaves, rebuild, walk_state
from ._visitor import ModuleMapper, ModuleVisitor

__all__ = ["Module", "SUBCLASS_HOOKS"]

M = TypeVar("M", bound="Module")
_building = threading.local()

#: callables run with every new Module subclass once it is set up (``hook(cls)``). A backend that needs to know
#: module types registers here without the core importing its array library: ``ember_jax`` makes every module
#: class a JAX pytree. Classes defined before a hook was added are the hook owner's to handle
#: (``Module.__subclasses__()`` recursively).
SUBCLASS_HOOKS: list[Callable[[type], None]] = []


def _in_init(obj: Any) -> bool:
    return id(obj) in getattr(_building, "ids", ())


def _frozen_setattr(self: Any, name: str, value: Any) -> None:
    if _in_init(self):
        object.__setattr__(self, name, value)
        return
    raise dataclasses.FrozenInstanceError(
        f"cannot assign {type(self).__name__}.{name}: modules are immutable; use module.replace({name}=...) "
        "to get a new module."
    )


def _frozen_delattr(self: Any, name: str) -> None:
    raise dataclasses.FrozenInstanceError(f"cannot delete {type(self).__name__}.{name}: modules are immutable.")


def _wrap_init(init: Callable[..., None]) -> Callable[..., None]:
    @functools.wraps(init)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        ids = getattr(_building, "ids", None)
        if ids is None:
            ids = _building.ids = set()
        key = id(self)
        fresh = key not in ids
        ids.add(key)
        try:
            init(self, *args, **kwargs)
        finally:
            if fresh:
                ids.discard(key)

    __init__.__ember_wrapped__ = True  # type: ignore[attr-defined]
    return __init__


#: the classes whose ``__call__`` is their ``forward``, set by :func:`_alias_call` (not by the class's author)
_CALL_ALIASED: weakref.WeakSet[type] = weakref.WeakSet()


def _alias_call(cls: type) -> None:
    """Make ``cls.__call__`` its ``forward`` function (no extra frame per call) when ``cls`` defines ``forward`` and
    the ``__call__`` it inherits is Module's or such an alias, not one a class defined on purpose."""
    fn = cls.__dict__.get("forward")
    if not isinstance(fn, types.FunctionType) or "__call__" in cls.__dict__:
        return
    owner = next(c for c in cls.__mro__[1:] if "__call__" in c.__dict__)
    if owner is Module or owner in _CALL_ALIASED:
        cls.__call__ = fn  # type: ignore[method-assign]
        _CALL_ALIASED.add(cls)


if sys.version_info >= (3, 11):
    from typing import dataclass_transform
else:  # pragma: no cover - Python 3.10: the decorator only informs type checkers

    def dataclass_transform(**_kwargs: Any) -> Any:
        return lambda f: f


@dataclass_transform(kw_only_default=True, frozen_default=True, field_specifiers=(dataclasses.field,))
class Module:
    """Base class of models and layers: annotated fields make an immutable dataclass-like tree.

    ::

        class Mlp(Module):
            layers: list[Linear]
            dropout: Dropout
            head: Linear | None = None
            activation: str = "relu"      # a plain value (not a parameter)

        model = Mlp(layers=[...], dropout=Dropout(prob=0.1))
        model2 = model.replace(activation="gelu")   # a new module; model is unchanged

    Construct with keyword arguments (the generated ``__init__`` is keyword-only; a class may define its
    own ``__init__`` and assign ``self.x = ...`` inside it). Fields may hold sub-modules, :class:`Param`,
    :class:`RunningState`, lists / tuples / dicts of those, ``None`` (``Optional`` modules), any of several
    module types (a union, Burn's enum modules), constant tensors and plain values; constants and plain
    values are not parameters and are not saved in records (as Burn's ``Ignored`` / constant fields).

    Methods follow Burn: :meth:`visit`, :meth:`map`, :meth:`num_params`, :meth:`devices`, :meth:`fork`,
    :meth:`to_device`, :meth:`no_grad`, :meth:`valid`, :meth:`into_record`, :meth:`load_record`,
    :meth:`save_file`, :meth:`load_file`. ``repr`` shows the tree with shapes and parameter counts.

    Train-only behaviour (Dropout ...) tests :func:`ember.module.ad_enabled` on its input: it is active on
    an autodiff backend and inactive after :meth:`valid`, as in Burn.
    """

    __ember_fields__: tuple[str, ...] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        dataclasses.dataclass(frozen=True, eq=False, repr=False, kw_only=True)(cls)
        cls.__ember_fields__ = tuple(f.name for f in dataclasses.fields(cls))  # type: ignore[arg-type]
        init = cls.__dict__.get("__init__")
        if init is not None and not getattr(init, "__ember_wrapped__", False):
            cls.__init__ = _wrap_init(init)  # type: ignore[method-assign]
        cls.__setattr__ = _frozen_setattr  # type: ignore[method-assign, assignment]
        cls.__delattr__ = _frozen_delattr  # type: ignore[method-assign, assignment]
        _alias_call(cls)
        for hook in SUBCLASS_HOOKS:
            hook(cls)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """``module(x)`` is ``module.forward(x)``: every layer and model is called like a function (Burn's
        ``forward``; PyTorch's ``module(x)``). Subclasses define ``forward`` only, never ``__call__ = forward``.

        A class that defines ``forward`` gets it as its ``__call__`` when the class is created, so the call costs
        what ``forward`` costs (this method only serves a ``forward`` assigned after the class was created). A class
        that defines its own ``__call__`` keeps it, and so do its subclasses.
        """
        return self.forward(*args, **kwargs)  # type: ignore[attr-defined]

    # ------------------------------------------------------------------ structure
    def replace(self: M, **changes: Any) -> M:
        """A new module with some fields replaced (the others are shared, not copied).

        Raises:
            TypeError: a name that is not a field (the message lists the fields).
        """
        names = fields_of(self)
        unknown = [k for k in changes if k not in names]
        if unknown:
            raise TypeError(
                f"{type(self).__name__}.replace: no field named {', '.join(map(repr, unknown))}; "
                f"fields are {', '.join(names)}."
            )
        return rebuild(self, changes)  # type: ignore[no-any-return]

    def named_params(self) -> list[tuple[str, Param]]:
        """``(dotted path, Param)`` for every parameter, in field order (``"layers.0.weight"``)."""
        out: list[tuple[str, Param]] = []
        walk_state(self, "", lambda p, leaf: out.append((p, leaf)) if isinstance(leaf, Param) else None)
        return out

    def params(self) -> list[Param]:
        """Every :class:`Param`, in field order."""
        return [p for _, p in self.named_params()]

    def running_states(self) -> list[tuple[str, RunningState]]:
        """``(dotted path, RunningState)`` for every buffer."""
        out: list[tuple[str, RunningState]] = []
        walk_state(self, "", lambda p, leaf: out.append((p, leaf)) if isinstance(leaf, RunningState) else None)
        return out

    def visit(self, visitor: ModuleVisitor | Callable[[Param], Any]) -> None:
        """Read every parameter (Burn's ``visit``).

        Args:
            visitor: a :class:`ModuleVisitor` (gets paths, kinds, running states, module enter/exit) or a
                callable ``fn(param)`` called for each :class:`Param`.
        """
        if isinstance(visitor, ModuleVisitor):
            def leaf(path: str, x: Any) -> None:
                if isinstance(x, Param):
                    visitor._param(path, x)
                else:
                    visitor.visit_running_state(path, x)

            walk_state(self, "", leaf, visitor.enter_module, visitor.exit_module)
            return
        if not callable(visitor):
            raise TypeError(f"visit: expected a ModuleVisitor or a callable, got {type(visitor).__name__}.")
        walk_state(self, "", lambda _p, x: visitor(x) if isinstance(x, Param) else None)

    def map(self: M, mapper: ModuleMapper | Callable[[Param], Param]) -> M:
        """A new module whose parameters are ``mapper``'s results (Burn's ``map``); optimizers are mappers.

        Args:
            mapper: a :class:`ModuleMapper`, or a callable ``fn(param) -> Param`` applied to every
                :class:`Param` (running states and constants are kept).

        Raises:
            TypeError: the mapper returned something other than a Param (or RunningState).
        """
        if isinstance(mapper, ModuleMapper):
            def fn(path: str, x: Any) -> Any:
                out: Any
                if isinstance(x, Param):
                    out = mapper._param(path, x)
                elif isinstance(x, RunningState):
                    out = mapper.map_running_state(path, x)
                else:
                    return x
                return _check_leaf(path, x, out)
        elif callable(mapper):
            def fn(path: str, x: Any) -> Any:
                return _check_leaf(path, x, mapper(x)) if isinstance(x, Param) else x
        else:
            raise TypeError(f"map: expected a ModuleMapper or a callable, got {type(mapper).__name__}.")
        return map_leaves(self, "", fn)  # type: ignore[no-any-return]

    def num_params(self) -> int:
        """The number of parameter elements (running states and constants excluded, as PyTorch's parameters())."""
        return sum(p.num_params() for _, p in self.named_params())

    def devices(self) -> list[Device]:
        """The distinct devices holding the module's parameters, states and constant tensors."""
        seen: dict[int, Device] = {}

        def note(_p: str, x: Any) -> Any:
            d = x.device
            seen.setdefault(id(d), d)
            return x

        map_leaves(self, "", note)
        return list(seen.values())

    # ------------------------------------------------------------------ devices and autodiff
    def to_device(self: M, device: Device) -> M:
        """The module on ``device`` (parameters keep their ids; Burn's ``to_device``)."""
        def fn(_p: str, x: Any) -> Any:
            if isinstance(x, Param):
                return x.to_device(device)
            if isinstance(x, RunningState):
                return RunningState(x.value().to_device(device), x.id)
            return x.to_device(device)

        return map_leaves(self, "", fn)  # type: ignore[no-any-return]

    def fork(self: M, device: Device) -> M:
        """The module on ``device`` with fresh autodiff leaves (Burn's ``fork``): detached, moved, re-marked."""
        def fn(_p: str, x: Any) -> Any:
            if isinstance(x, Param):
                return x.fork(device)
            if isinstance(x, RunningState):
                return RunningState(x.value().to_device(device), x.id)
            return x.detach().to_device(device)

        return map_leaves(self, "", fn)  # type: ignore[no-any-return]

    def no_grad(self: M) -> M:
        """Every parameter with ``require_grad=False`` (Burn's ``no_grad``): frozen for training."""
        return self.map(lambda p: p.set_require_grad(False))

    def valid(self: M) -> M:
        """The same module on the inner backend of an autodiff backend (Burn's ``AutodiffModule::valid``).

        Tensors become ``tensor.inner()`` (no graph); parameters keep their ids. Train-only layers are
        then inactive. On a non-autodiff backend the result is an equivalent module.
        """
        def fn(_p: str, x: Any) -> Any:
            if isinstance(x, Param):
                return Param(x.val().inner(), x.id, x.require_grad)
            if isinstance(x, RunningState):
                return RunningState(x.value().inner(), x.id)
            return x.inner()

        return map_leaves(self, "", fn)  # type: ignore[no-any-return]

    # ------------------------------------------------------------------ records
    def into_record(self) -> dict[str, Any]:
        """The record: a dict mirroring the module (lists by index) with ``{"id": ParamId, "param":
        TensorData}`` for each parameter and running state (a copy of the data on the host)."""
        return to_record(self)  # type: ignore[no-any-return]

    def record_template(self) -> dict[str, Any]:
        """The record's structure without data (tensors are ``ember.record.TENSOR``); for positional loads."""
        return to_record(self, data=False)  # type: ignore[no-any-return]

    def load_record(self: M, record: Any, strict: bool = True) -> Any:
        """A new module holding the record's values (Burn's ``load_record``).

        Each parameter takes the record's tensor (converted to the module's kind, backend dtype and
        device) and the record's ``ParamId``; ``require_grad`` stays the module's.

        Args:
            record: as made by :meth:`into_record` or a recorder's ``load``; a parameter may also be a
                bare ``TensorData``/``Tensor``/numpy array (its id is then kept), a list may be a dict
                keyed by index strings (e.g. from a foreign safetensors file).
            strict: raise on any missing, unused or mismatched entry (default). ``False`` loads what
                fits and returns ``(module, LoadReport)``.

        Returns:
            The new module, or ``(module, report)`` when ``strict=False``.

        Raises:
            RecordError: ``strict`` and the record does not fit; the message lists every missing key,
                unused key and shape mismatch.
        """
        module, report = load_into(self, record, strict, None, consume=False)
        return module if strict else (module, report)

    def save_file(self, path: str | os.PathLike[str], recorder: Any = None) -> Path:
        """Save the record with ``recorder`` (default :class:`~ember.record.DefaultFileRecorder`).

        The recorder's extension is appended when missing; the write is atomic.

        Returns:
            The final path.
        """
        rec = recorder if recorder is not None else DefaultFileRecorder()
        return rec.record(self.into_record(), path)  # type: ignore[no-any-return]

    def load_file(
        self: M, path: str | os.PathLike[str], recorder: Any = None, device: Device | None = None,
        strict: bool = True,
    ) -> Any:
        """A new module holding the values saved at ``path`` (Burn's ``load_file``).

        Args:
            recorder: the recorder that wrote the file (default ``DefaultFileRecorder``).
            device: where the loaded tensors go (default: each parameter's current device).
            strict: as in :meth:`load_record`.

        Raises:
            FileNotFoundError: no such file.
            RecordError: the file is unreadable (names the file and the problem) or does not fit.
        """
        rec = recorder if recorder is not None else DefaultFileRecorder()
        template = self.record_template() if getattr(rec, "positional", False) else None
        record = rec.load(path, template=template)
        module, report = load_into(self, record, strict, device, consume=True, origin=f"load_file({str(path)!r})")
        return module if strict else (module, report)

    # ------------------------------------------------------------------ display
    def __repr__(self) -> str:
        return display(self)

    __str__ = __repr__


def _check_leaf(path: str, old: Any, new: Any) -> Any:
    if not isinstance(new, type(old)):
        raise TypeError(
            f"map: the mapper returned {type(new).__name__} for {path!r}, expected a {type(old).__name__}."
        )
    return new

