"""Tracing the runtime converters: each Tensor-API call they make on a traced value becomes a line of source.

While :func:`tracing` is active on a thread, the public methods of :class:`ember.Tensor`, its class methods
(``Tensor.cat``, ``Tensor.zeros`` ...) and the functions of :mod:`ember.tensor.activation` and
:mod:`ember.tensor.functional` are wrapped (the ``torch.fx`` patcher's way): a call whose arguments hold a traced
tensor or a :class:`~._sym.Sym` is *recorded* (one line ``var = receiver.method(args)``) and also computed on
the tensors' concrete stand-ins (the *shadow*, on the host), so the converter sees real shapes and dtypes; a call
on constants alone is only computed, so the host arithmetic of a converter folds into constants. Calls made
inside a recorded call (a composite op's primitives) are not recorded. Other threads see the original functions.
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import functools
import threading
from collections.abc import Callable, Iterator
from typing import Any

from ember import DType, Tensor
from ember.backend import Device

from ._active import Gen, active, set_active
from ._errors import ModelGenError
from ._idiom import idiom
from ._shape import Shape
from ._sym import Parts, Sym
from ._symfloat import SymFloat, has_sym

__all__ = ["tracing", "untraced"]

_patch_lock = threading.Lock()

#: Tensor attributes never recorded: properties, data reads (handled apart), protocol methods
_SKIP = frozenset({
    "shape", "rank", "ndim", "dims", "dtype", "backend", "kind", "device", "ops", "primitive", "num_elements",
    "is_empty", "to_data", "into_data", "to_numpy", "tolist", "into_scalar", "from_primitive", "item",
    "detach", "require_grad", "set_require_grad", "is_require_grad", "grad", "grad_remove", "backward",
})
#: operators recorded as Python operators (``a + b``)
_BINARY = {"__add__": "+", "__sub__": "-", "__mul__": "*", "__truediv__": "/", "__matmul__": "@", "__pow__": "**",
           "__mod__": "%", "__floordiv__": "//", "__and__": "&", "__or__": "|", "__xor__": "^", "__lt__": "<",
           "__le__": "<=", "__gt__": ">", "__ge__": ">="}
_RBINARY = {"__radd__": "+", "__rsub__": "-", "__rmul__": "*", "__rtruediv__": "/", "__rmatmul__": "@",
            "__rpow__": "**", "__rmod__": "%", "__rfloordiv__": "//", "__rand__": "&", "__ror__": "|"}
#: methods written as operators when their argument is a tensor or a number (``a.add(b)`` as ``a + b``)
_OPERATOR = {"add": "+", "sub": "-", "mul": "*", "div": "/"}
_UNARY = {"__neg__": "-", "__invert__": "~", "__abs__": "abs"}
#: methods whose result's size depends on the data (always symbolic dims)
DATA_DEPENDENT = frozenset({"nonzero", "argwhere", "unique", "masked_select", "non_max_suppression"})


@contextlib.contextmanager
def untraced() -> Iterator[None]:
    """Compute without recording (a recognised layer's shadow, a folded host value)."""
    gen = active()
    if gen is None:
        yield
        return
    gen.depth += 1
    try:
        yield
    finally:
        gen.depth -= 1


def _involved(gen: Gen, v: Any) -> bool:
    if isinstance(v, Tensor):
        return id(v) in gen.traced or id(v) in gen.host_syms
    if isinstance(v, (Sym, SymFloat)):
        return True
    if isinstance(v, (list, tuple)):
        return any(_involved(gen, x) for x in v)
    if isinstance(v, slice):  # a Slice bound from a dynamic size: the call must stay code
        return any(_involved(gen, x) for x in (v.start, v.stop, v.step))
    if isinstance(v, dict):
        return any(_involved(gen, x) for x in v.values())
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return any(_involved(gen, getattr(v, f.name)) for f in dataclasses.fields(v))
    return False


def _wrap(fn: Callable[..., Any], render: Callable[..., Parts], name: str) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        gen = active()
        if gen is None or gen.depth:
            return fn(*args, **kwargs)
        gen.depth += 1
        try:
            out = fn(*args, **kwargs)
        finally:
            gen.depth -= 1
        if not (_involved(gen, args) or _involved(gen, kwargs)):
            return out
        return gen.record(render(gen, args, kwargs), out, name, (args, kwargs))

    wrapper.__ember_traced__ = fn  # type: ignore[attr-defined]
    return wrapper


def _method_render(name: str) -> Callable[..., Parts]:
    def render(gen: Gen, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Parts:
        recv, rest = args[0], args[1:]
        op = _BINARY.get(name) or _RBINARY.get(name)
        if op is None and name in _OPERATOR and len(rest) == 1 and isinstance(rest[0], Tensor):
            op = _OPERATOR[name]
        alt = idiom(gen, name, op, recv, rest, kwargs)
        if alt is not None:
            return alt
        if name in _BINARY:
            return (*gen.arg(recv, atom=True), f" {_BINARY[name]} ", *gen.arg(rest[0], atom=True))
        if name in _RBINARY:
            return (*gen.arg(rest[0], atom=True), f" {_RBINARY[name]} ", *gen.arg(recv, atom=True))
        if name in _UNARY:
            op = _UNARY[name]
            return (f"{op}(", *gen.arg(recv), ")") if op == "abs" else (op, *gen.arg(recv, atom=True))
        if name in _OPERATOR and len(rest) == 1 and not kwargs and isinstance(rest[0], (Tensor, int, float)) \
                and not isinstance(rest[0], bool):
            return (*gen.arg(recv, atom=True), f" {_OPERATOR[name]} ", *gen.arg(rest[0], atom=True))
        if name == "__getitem__":
            return (*gen.arg(recv, atom=True), "[", *gen.index(rest[0]), "]")
        return (*gen.arg(recv, atom=True), f".{name}(", *gen.call_args(rest, kwargs), ")")

    return render


def _class_render(name: str, skip: int = 0) -> Callable[..., Parts]:
    def render(gen: Gen, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Parts:
        gen.imports.add(("ember", "Tensor"))
        return (f"Tensor.{name}(", *gen.call_args(args[skip:], kwargs), ")")

    return render


def _module_render(module: str, name: str) -> Callable[..., Parts]:
    def render(gen: Gen, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Parts:
        gen.imports.add(("ember.tensor", module))
        return (f"{module}.{name}(", *gen.call_args(args, kwargs), ")")

    return render


def _shape_property(orig: property) -> property:
    def get(self: Any) -> Any:
        gen = active()
        if gen is not None and not gen.depth:
            sym = gen.sym_shapes.get(id(self))
            return Shape(sym if sym is not None else orig.fget(self))  # type: ignore[misc]
        return orig.fget(self)  # type: ignore[misc]

    return property(get)


def _host_read(fn: Callable[..., Any], kind: str) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        gen = active()
        if gen is None or gen.depth or id(self) not in gen.traced:
            return fn(self, *args, **kwargs)
        return gen.host_read(self, kind)

    return wrapper


def _alias(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``detach``: the same values (no gradient flows in generated ``forward`` either), so the result is the
    receiver's variable, not a new host constant."""

    @functools.wraps(fn)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        out = fn(self, *args, **kwargs)
        gen = active()
        if gen is not None and not gen.depth and id(self) in gen.traced:
            gen.traced[id(out)] = (out, gen.traced[id(self)][1])
            if id(self) in gen.sym_shapes:
                gen.sym_shapes[id(out)] = gen.sym_shapes[id(self)]
        return out

    return wrapper


def _patches() -> list[tuple[Any, str, Any]]:
    """``(owner, attribute, replacement)`` of every wrapped function."""
    from ember.tensor import activation, functional

    out: list[tuple[Any, str, Any]] = []
    seen: set[str] = set()
    for klass in Tensor.__mro__:
        if klass is object:
            continue
        for name, attr in vars(klass).items():
            if name in seen:
                continue
            seen.add(name)
            if name in ("shape", "rank", "ndim"):
                continue
            if name in ("tolist", "into_scalar"):
                out.append((Tensor, name, _host_read(attr, name)))
                continue
            if name == "detach":
                out.append((Tensor, name, _alias(attr)))
                continue
            public = not name.startswith("_") or name in _BINARY or name in _RBINARY or name in _UNARY \
                or name == "__getitem__"
            if not public or name in _SKIP:
                continue
            if isinstance(attr, classmethod):
                out.append((Tensor, name, classmethod(_wrap(attr.__func__, _class_render(name, skip=1), name))))
            elif isinstance(attr, staticmethod):
                out.append((Tensor, name, staticmethod(_wrap(attr.__func__, _class_render(name), name))))
            elif callable(attr):
                out.append((Tensor, name, _wrap(attr, _method_render(name), name)))
    for prop in ("shape",):
        out.append((Tensor, prop, _shape_property(getattr(Tensor, prop))))
    out.append((Tensor, "rank", property(lambda self: len(self.shape))))
    out.append((Tensor, "ndim", property(lambda self: len(self.shape))))
    for mod, short in ((activation, "activation"), (functional, "functional")):
        for name in getattr(mod, "__all__", ()):
            fn = getattr(mod, name)
            if callable(fn) and not isinstance(fn, type) and not isinstance(fn, enum.EnumMeta):
                out.append((mod, name, _wrap(fn, _module_render(short, name), name)))
    return out


@contextlib.contextmanager
def tracing(gen: Gen) -> Iterator[None]:
    """Trace the converters run on this thread into ``gen`` (one generation at a time per process)."""
    with _patch_lock:
        saved: list[tuple[Any, str, Any, bool]] = []
        try:
            for owner, name, repl in _patches():
                own = name in vars(owner)
                saved.append((owner, name, vars(owner).get(name), own))
                setattr(owner, name, repl)
            set_active(gen)
            yield
        finally:
            set_active(None)
            for owner, name, old, own in reversed(saved):
                if own:
                    setattr(owner, name, old)
                else:
                    delattr(owner, name)


def is_device(v: Any) -> bool:
    return isinstance(v, Device)


def dtype_source(dt: DType) -> str:
    return f"DType.{dt.name}"


def check_no_data_read(v: Any, where: str) -> None:
    if has_sym(v):
        raise ModelGenError(f"{where}: a value computed from tensor data is used where generated code needs a "
                            "constant; use ember_import.onnx.load_model.")
