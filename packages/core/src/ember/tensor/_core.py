"""The fast paths every tensor op shares: construction, binary and unary dispatch, error mapping.

``Tensor`` is set here by :mod:`._tensor` once the class exists, so the op mixins can build
tensors without importing the class (which imports them).
"""

from __future__ import annotations

from typing import Any, TypeVar

from .._errors import EmberError, KindError
from .._kind import Bool, Float, Int, Kind
from ._base import TensorBase
from ._util import broadcast_shapes, check_same, norm_dim

#: a tensor type: ``wrap(p, like, kind)`` returns ``like``'s class (``Tensor``)
_T = TypeVar("_T", bound=TensorBase)

Tensor: Any = None  # set by ._tensor
_new_obj = object.__new__


def new(p: Any, device: Any, kind: Kind, ops: Any) -> Any:
    """Build a tensor without re-deriving ``ops`` (hot path)."""
    t = _new_obj(Tensor)
    t.primitive = p
    t.device = device
    t.kind = kind
    t.ops = ops
    return t


def wrap(p: Any, like: _T, kind: Kind) -> _T:
    """A tensor of ``kind`` on ``like``'s device."""
    d = like.device
    t = _new_obj(Tensor)
    t.primitive = p
    t.device = d
    t.kind = kind
    t.ops = d.ops[kind.index]
    return t


def dim_of(op: str, t: TensorBase, dim: int) -> int:
    """``dim`` of ``t`` as a non-negative int (``norm_dim`` with the in-range case inlined).

    Raises:
        IndexError_: out of range. TypeError: not an int.
    """
    r = len(t.ops.shape(t.primitive))
    if dim.__class__ is int and -r <= dim < r:
        return dim + r if dim < 0 else dim
    return norm_dim(op, dim, r)


def op_error(op: str, exc: Exception, *tensors: Any) -> EmberError:
    """Turn a backend exception into an EmberError naming the op and the operands.

    Broadcast mismatches become a ShapeError with the shapes; anything else keeps the backend's
    message (so nothing leaks unexplained).
    """
    if isinstance(exc, EmberError):
        return exc
    shapes = [t.shape for t in tensors if hasattr(t, "primitive")]
    if len(shapes) == 2:
        try:
            broadcast_shapes(op, shapes[0], shapes[1])
        except EmberError as shape_exc:
            return shape_exc
    desc = ", ".join(
        f"{t.kind} {list(t.shape)} {t.dtype}" if hasattr(t, "primitive") else repr(t) for t in tensors
    )
    return EmberError(f"{op} failed on ({desc}): {type(exc).__name__}: {exc}")


def scalar_for(op: str, t: TensorBase, value: Any) -> Any:
    """Check a Python scalar operand against the tensor's kind and return it as the kind's type.

    Raises:
        KindError: a non-integral float with an Int tensor, or a number with a Bool tensor.
    """
    k = t.kind
    if k is Float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, bool):
            return float(value)
    elif k is Int:
        if isinstance(value, bool):
            return int(value)
        if isinstance(value, int):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, float):
            raise KindError(
                f"{op}: an Int tensor cannot take the float scalar {value}; convert the tensor with "
                ".float() first."
            )
    elif k is Bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, int) and value in (0, 1):
            return bool(value)
    if hasattr(value, "primitive"):
        return value
    try:
        import numpy as np

        if isinstance(value, np.generic):
            return scalar_for(op, t, value.item())
    except ImportError:  # pragma: no cover
        pass
    raise TypeError(f"{op}: expected a tensor or a {k} scalar, got {type(value).__name__} {value!r}")


def _kind_error(op: str, k: Kind, kinds: tuple[Kind, ...], hint: str) -> KindError:
    return KindError(
        f"{op} is not defined for {k} tensors (it takes {' or '.join(x.name for x in kinds)}); "
        f"convert with {hint} first."
    )


# The method bodies are compiled once per primitive name so that the backend call is a plain
# attribute call (``ops.add(a, b)``): ``getattr(ops, "add")`` on every call costs about 50 ns more,
# a tenth of the framework's share of a small op. Only ``prim`` is interpolated (checked to be an
# identifier); everything else is an argument of the factory or a global of this module.
_BINARY_SRC = """
def factory(op, kinds, out_kind):
    def method(self, other):
        k = self.kind
        if k not in kinds:
            raise _kind_error(op, k, kinds, ".float() or .int()")
        if other.__class__ is Tensor:
            if other.device is not self.device or other.kind is not k:
                check_same(op, self, other)
            b = other.primitive
        elif other.__class__ is float and k is Float:
            b = other
        else:
            b = scalar_for(op, self, other)
            if type(b) is Tensor:
                return method(self, b)  # pragma: no cover - subclass path
        ops = self.ops
        try:
            p = ops.{prim}(self.primitive, b)
        except Exception as exc:
            raise op_error(op, exc, self, other) from exc
        t = _new_obj(Tensor)
        t.primitive = p
        t.device = d = self.device
        if out_kind is None:
            t.kind = k
            t.ops = ops
        else:
            t.kind = out_kind
            t.ops = d.ops[out_kind.index]
        return t
    return method
"""

_UNARY_SRC = """
def factory(op, kinds, out_kind):
    def method(self):
        k = self.kind
        if k not in kinds:
            raise _kind_error(op, k, kinds, ".float()")
        ops = self.ops
        try:
            p = ops.{prim}(self.primitive)
        except Exception as exc:
            raise op_error(op, exc, self) from exc
        t = _new_obj(Tensor)
        t.primitive = p
        t.device = d = self.device
        if out_kind is None:
            t.kind = k
            t.ops = ops
        else:
            t.kind = out_kind
            t.ops = d.ops[out_kind.index]
        return t
    return method
"""


#: names the generated code uses, listed so that linters do not strip them as unused imports
_GENERATED_CODE_USES = (check_same, scalar_for, op_error, Float)


def _compile(src: str, prim: str) -> Any:
    if not prim.isidentifier():
        raise ValueError(f"not a primitive name: {prim!r}")
    ns: dict[str, Any] = {}
    exec(compile(src.replace("{prim}", prim), f"<ember.tensor._core {prim}>", "exec"), globals(), ns)
    return ns["factory"]


def binary(op: str, prim: str, kinds: tuple[Kind, ...], out_kind: Kind | None = None) -> Any:
    """Build a binary tensor method calling ``ops.<prim>(a, b)``.

    ``b`` may be a tensor (same device and kind; shapes broadcast) or a Python scalar.
    ``out_kind`` None keeps the input kind (comparisons pass ``Bool``).
    """
    method = _compile(_BINARY_SRC, prim)(op, kinds, out_kind)
    method.__name__ = op
    method.__qualname__ = f"Tensor.{op}"
    return method


def unary(op: str, prim: str, kinds: tuple[Kind, ...], out_kind: Kind | None = None) -> Any:
    """Build a unary tensor method calling ``ops.<prim>(a)``."""
    method = _compile(_UNARY_SRC, prim)(op, kinds, out_kind)
    method.__name__ = op
    method.__qualname__ = f"Tensor.{op}"
    return method


NUM = (Float, Int)
FLOAT = (Float,)
INT = (Int,)
BOOL = (Bool,)
ANY = (Float, Int, Bool)
