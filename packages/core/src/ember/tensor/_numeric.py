"""Numeric tensor ops (Burn's ``Numeric`` and ``Orderable``): arithmetic with Python operators,
comparisons and matmul here; reductions and scans in :mod:`._reduce`, sorting, topk and median in
:mod:`._ordered` (both bases of this mixin). Float and Int tensors; Bool only where said.

Shape conventions (Burn's, kept on purpose — they differ from PyTorch and numpy):

- **``*_dim`` reductions keep the reduced dim with size 1**: ``[2, 3].sum_dim(1) -> [2, 1]``,
  ``argmax(1) -> [2, 1]``. ``*_dims`` keep every reduced dim. Use ``squeeze_dim`` to drop it.
- **Whole-tensor reductions return shape ``[1]``** (not a rank-0 tensor): ``sum``, ``mean``,
  ``prod``, ``max``, ``min``, ``max_abs``, ``median()``, ``any``, ``all``, ``dot``.
- Dims may be negative (``-1`` is the last dim).

Value conventions:

- The element type never changes: an int32 sum is int32 (it wraps on overflow, like Burn), a
  float16 sum is float16 (accumulated in float32 first, like PyTorch).
- Int ``/`` (``div``) and ``//`` round toward negative infinity and ``%`` takes the sign of the
  divisor (Python's rules: ``a == (a // b) * b + a % b``). Int division or remainder by zero
  gives 0 (numpy's result; PyTorch raises, which would need a device sync on every division).
- Int ``mean`` is the floor of the exact mean (the sum is taken in 64 bits, so no overflow).
- Empty tensors: ``sum`` is 0, ``prod`` is 1, Float ``mean`` is NaN (Int: 0), ``any`` is false,
  ``all`` is true; ``max``/``min``/``argmax``/``argmin``/``median`` over nothing raise ShapeError.
- NaN: ``max``/``min``/``max_pair``/``min_pair``/``cummax``/``cummin``/``clamp`` propagate NaN and
  ``argmax``/``argmin`` point at the first NaN (PyTorch); ``sort`` puts NaN last ascending and
  first descending, ``topk`` counts NaN as the largest, ``median`` of a slice with NaN is NaN.
- Sorting is stable: equal values keep their index order, in both directions.
- Float and Int are never mixed implicitly (convert with ``.float()`` / ``.int()``); an Int
  tensor only takes integral Python scalars (``t + 2.0`` is fine, ``t + 2.5`` raises KindError).

Errors (all :class:`ember.EmberError`, naming the op): KindError for a wrong kind or mixed kinds,
ShapeError for shapes that do not broadcast (naming both shapes) or empty reductions,
``ember.IndexError`` for a dim out of range, DeviceError for tensors on different devices.
"""

from __future__ import annotations

import numbers
from typing import Any

from .._errors import KindError, ShapeError
from .._kind import Bool, Float, Int
from . import _core
from ._core import ANY, NUM, binary, new, op_error, scalar_for, unary
from ._ordered import OrderedTensorOps
from ._reduce import ReduceOps
from ._util import broadcast_shapes, check_same

_new_obj = object.__new__


def _div_method() -> Any:
    """``div``: Float true division, Int floor division; same fast path as :func:`_core.binary`."""

    def div(self: Any, other: Any) -> Any:
        """Element-wise division by a tensor (broadcasting) or a scalar.

        Float: true division (``x / 0 = ±inf``, ``0 / 0 = NaN``). Int: floor division (Python's
        ``//``; ``x / 0 = 0``). Burn's ``div`` / ``div_scalar``; operator ``/``.

        Raises:
            KindError: a Bool tensor, Float mixed with Int, or a non-integral scalar with Int.
            ShapeError: shapes that do not broadcast.
        """
        k = self.kind
        if k is not Float and k is not Int:
            raise KindError("div is not defined for Bool tensors (it takes Float or Int); convert with .float() first.")
        if other.__class__ is _core.Tensor:
            if other.device is not self.device or other.kind is not k:
                check_same("div", self, other)
            b = other.primitive
        elif other.__class__ is float and k is Float:
            b = other
        else:
            b = scalar_for("div", self, other)
        ops = self.ops
        try:
            p = ops.div(self.primitive, b) if k is Float else ops.int_div(self.primitive, b)
        except Exception as exc:
            raise op_error("div", exc, self, other) from exc
        return new(p, self.device, k, ops)

    div.__qualname__ = "Tensor.div"
    return div


def _reflected(op: str, prim_op: str) -> Any:
    """``scalar <op> tensor``: check the kind and scalar under ``op``'s name, then compute as
    ``full_like(scalar) <op> tensor``."""

    def method(self: Any, other: Any) -> Any:
        if self.kind not in NUM:
            raise KindError(f"{op} is not defined for {self.kind} tensors (it takes Float or Int); convert first.")
        v = scalar_for(op, self, other)
        return getattr(self.full_like(v), prim_op)(self)

    method.__name__ = method.__qualname__ = f"__r{prim_op.strip('_')}__"
    return method


class NumericTensorOps(ReduceOps, OrderedTensorOps):
    __slots__ = ()

    # numpy must hand ``ndarray <op> tensor`` to our reflected operators instead of converting
    # the tensor with ``__array__`` (convert explicitly with ``Tensor.from_data``)
    __array_ufunc__ = None

    # ------------------------------------------------------------------ arithmetic
    add = binary("add", "add", NUM)
    add.__doc__ = """Element-wise ``self + other``; ``other`` a tensor (broadcasting) or a scalar.
        Operator ``+``. Raises KindError (Bool, mixed kinds) or ShapeError (no broadcast)."""
    sub = binary("sub", "sub", NUM)
    sub.__doc__ = """Element-wise ``self - other`` (tensor or scalar). Operator ``-``."""
    mul = binary("mul", "mul", NUM)
    mul.__doc__ = """Element-wise ``self * other`` (tensor or scalar). Operator ``*``."""
    div = _div_method()
    remainder = binary("remainder", "remainder", NUM)
    remainder.__doc__ = """Element-wise ``self - floor(self / other) * other``: the sign of the divisor
        (Python's ``%``, torch.remainder; Burn's ``remainder``). Int ``x % 0`` is 0, Float is NaN."""
    max_pair = binary("max_pair", "maximum", NUM)
    max_pair.__doc__ = """Element-wise maximum with a tensor or scalar; NaN propagates (torch.maximum)."""
    min_pair = binary("min_pair", "minimum", NUM)
    min_pair.__doc__ = """Element-wise minimum with a tensor or scalar; NaN propagates (torch.minimum)."""

    # ``_scalar`` forms (Burn's names); they accept tensors too
    add_scalar = add
    sub_scalar = sub
    mul_scalar = mul
    div_scalar = div
    remainder_scalar = remainder

    neg = unary("neg", "neg", NUM)
    neg.__doc__ = """``-x`` element-wise (Int wraps at the minimum value). Operator unary ``-``."""
    abs = unary("abs", "abs", NUM)
    abs.__doc__ = """``|x|`` element-wise (Int wraps at the minimum value). ``abs(t)`` works too."""
    sign = unary("sign", "sign", NUM)
    sign.__doc__ = """-1, 0 or 1 element-wise in the tensor's dtype; NaN stays NaN."""

    def powi(self, exponent: Any) -> Any:
        """``self ** exponent`` with an integer exponent: an Int tensor (broadcasting) or an int.

        Float or Int base. Int base with a negative exponent gives the truncated real power: 1 for
        base 1, ±1 for base -1, 0 otherwise (also for base 0). Int results wrap on overflow.
        Burn's ``powi`` / ``powi_scalar``.

        Raises:
            KindError: a Bool base, a non-Int exponent tensor, or a non-integral exponent.
        """
        if self.kind is Bool:
            raise KindError("powi needs a Float or Int tensor, got Bool; convert with .int() first.")
        if type(exponent) is _core.Tensor:
            if exponent.kind is not Int:
                raise KindError(f"powi: the exponent must be an Int tensor, got {exponent.kind}; use powf.")
            if exponent.device is not self.device:
                check_same("powi", self, exponent)
            b: Any = exponent.primitive
        elif isinstance(exponent, numbers.Integral) and not isinstance(exponent, bool):
            b = int(exponent)
        elif isinstance(exponent, float) and exponent.is_integer():
            b = int(exponent)
        else:
            raise KindError(f"powi: the exponent must be an int or an Int tensor, got {exponent!r}; use powf.")
        try:
            p = self.ops.powi(self.primitive, b)
        except Exception as exc:
            raise op_error("powi", exc, self, exponent) from exc
        return new(p, self.device, self.kind, self.ops)

    powi_scalar = powi

    def clamp(self, min: Any = None, max: Any = None) -> Any:  # noqa: A002 - Burn's names
        """Values clamped to ``[min, max]`` (Python scalars; either may be ``None``).

        ``min(max(x, min), max)``: NaN stays NaN, and when ``min > max`` every element becomes
        ``max`` (torch.clamp). Burn's ``clamp``.

        Raises:
            KindError: Bool tensor, or a non-integral bound for an Int tensor.
            TypeError: neither bound given, or a bound that is not a scalar.
        """
        if min is None and max is None:
            raise TypeError("clamp: give min, max or both.")
        return self._clamp("clamp", min, max)

    def clamp_min(self, min: Any) -> Any:  # noqa: A002
        """Values below ``min`` raised to ``min`` (Burn's ``clamp_min``)."""
        return self._clamp("clamp_min", min, None)

    def clamp_max(self, max: Any) -> Any:  # noqa: A002
        """Values above ``max`` lowered to ``max`` (Burn's ``clamp_max``)."""
        return self._clamp("clamp_max", None, max)

    def _clamp(self, op: str, lo: Any, hi: Any) -> Any:
        self._need(op, NUM)
        lo = None if lo is None else scalar_for(op, self, lo)
        hi = None if hi is None else scalar_for(op, self, hi)
        if hasattr(lo, "primitive") or hasattr(hi, "primitive"):
            raise TypeError(f"{op}: bounds must be scalars; use max_pair / min_pair with tensors.")
        return self._call(op, lambda ops, p: ops.clamp(p, lo, hi))

    # ------------------------------------------------------------------ comparisons
    equal = binary("equal", "equal", ANY, Bool)
    equal.__doc__ = """Bool tensor of ``self == other`` element-wise (any kind; NaN != NaN)."""
    not_equal = binary("not_equal", "not_equal", ANY, Bool)
    greater = binary("greater", "greater", NUM, Bool)
    greater.__doc__ = """Bool tensor of ``self > other`` element-wise (tensor or scalar). Operator ``>``."""
    greater_equal = binary("greater_equal", "greater_equal", NUM, Bool)
    lower = binary("lower", "lower", NUM, Bool)
    lower.__doc__ = """Bool tensor of ``self < other`` element-wise (tensor or scalar). Operator ``<``."""
    lower_equal = binary("lower_equal", "lower_equal", NUM, Bool)
    equal_elem = equal
    not_equal_elem = not_equal
    greater_elem = greater_scalar = greater
    greater_equal_elem = greater_equal_scalar = greater_equal
    lower_elem = lower_scalar = lower
    lower_equal_elem = lower_equal_scalar = lower_equal

    # ------------------------------------------------------------------ matmul
    def matmul(self, other: Any) -> Any:
        """Matrix product over the last two dims; leading (batch) dims broadcast:
        ``[batch, n, k] @ [k, m] -> [batch, n, m]``. Both ranks >= 2 (``unsqueeze`` vectors, or
        use :meth:`dot`). float16 accumulates in float32. Operator ``@``.

        Raises:
            ShapeError: rank < 2, inner sizes differ, or batch dims that do not broadcast.
            KindError: Bool tensors or mixed kinds.
        """
        k = self.kind
        if k is not Float and k is not Int:
            self._need("matmul", NUM)
        if type(other) is not _core.Tensor:
            raise TypeError(f"matmul: expected a Tensor, got {type(other).__name__}.")
        if other.device is not self.device or other.kind is not k:
            check_same("matmul", self, other)
        ops = self.ops
        sa, sb = ops.shape(self.primitive), ops.shape(other.primitive)
        if len(sa) < 2 or len(sb) < 2:
            raise ShapeError(
                f"matmul: both operands need rank >= 2, got shapes {list(sa)} and {list(sb)}; "
                "unsqueeze vectors (or use dot)."
            )
        if sa[-1] != sb[-2]:
            raise ShapeError(
                f"matmul: inner sizes differ: {list(sa)} @ {list(sb)} needs {sa[-1]} == {sb[-2]} "
                "(the last dim of the left operand must equal the second-to-last of the right)."
            )
        if len(sa) > 2 or len(sb) > 2:
            try:
                broadcast_shapes("matmul", sa[:-2], sb[:-2])
            except ShapeError:
                raise ShapeError(
                    f"matmul: batch dims of {list(sa)} and {list(sb)} cannot be broadcast "
                    f"({list(sa[:-2])} vs {list(sb[:-2])}); sizes must be equal or 1."
                ) from None
        try:
            p = ops.matmul(self.primitive, other.primitive)
        except Exception as exc:
            raise op_error("matmul", exc, self, other) from exc
        t = _new_obj(_core.Tensor)  # new() inlined: three matmuls a step in a small MLP
        t.primitive = p
        t.device = self.device
        t.kind = k
        t.ops = ops
        return t

    def dot(self, other: Any) -> Any:
        """Inner product of two 1-D tensors of equal length, shape ``[1]`` (torch.dot).

        Raises:
            ShapeError: not both rank 1 of equal length.
        """
        if type(other) is not _core.Tensor:
            raise TypeError(f"dot: expected a Tensor, got {type(other).__name__}.")
        if self.rank != 1 or other.rank != 1 or self.shape != other.shape:
            raise ShapeError(
                f"dot: expected two 1-D tensors of equal length, got {list(self.shape)} and {list(other.shape)}."
            )
        self._need("dot", NUM)
        if other.device is not self.device or other.kind is not self.kind:
            check_same("dot", self, other)
        return self.mul(other).sum()

    # ------------------------------------------------------------------ Python operators
    # bound to the fast methods directly (no extra Python frame on the hot path)
    __add__ = add
    __radd__ = add
    __sub__ = sub
    __mul__ = mul
    __rmul__ = mul
    __truediv__ = div
    __mod__ = remainder
    __matmul__ = matmul
    __neg__ = neg
    __abs__ = abs
    __lt__ = lower
    __le__ = lower_equal
    __gt__ = greater
    __ge__ = greater_equal

    def __rsub__(self, o: Any) -> Any:
        self._need("sub", NUM)
        return self.neg().add(scalar_for("sub", self, o))

    __rtruediv__ = _reflected("div", "div")
    __rmod__ = _reflected("remainder", "remainder")
    __rfloordiv__ = _reflected("floor_div", "__floordiv__")
    __rpow__ = _reflected("pow", "__pow__")

    def __floordiv__(self, o: Any) -> Any:
        """``//``: Int floor division, Float ``floor(self / o)``."""
        if self.kind is Float:
            return self.div(o).floor()
        if self.kind is Bool:
            raise KindError("floor_div (//) is not defined for Bool tensors; convert with .int() first.")
        return self.div(o)

    def __pow__(self, o: Any) -> Any:
        """``**``: Float base with a float or Float tensor uses ``powf``; an int or Int tensor
        exponent uses ``powi`` (Float or Int base)."""
        if self.kind is Float and not (type(o) is _core.Tensor and o.kind is Int):
            if isinstance(o, int) and not isinstance(o, bool):
                return self.powi(o)
            return self.powf(o)
        return self.powi(o)

    def __rmatmul__(self, o: Any) -> Any:
        raise TypeError(f"matmul: expected a Tensor on both sides of @, got {type(o).__name__}.")

    def __pos__(self) -> Any:
        return self

    def __eq__(self, o: Any) -> Any:
        if type(o) is _core.Tensor or isinstance(o, (int, float)) or hasattr(o, "dtype"):
            return self.equal(o)
        return NotImplemented

    def __ne__(self, o: Any) -> Any:
        if type(o) is _core.Tensor or isinstance(o, (int, float)) or hasattr(o, "dtype"):
            return self.not_equal(o)
        return NotImplemented

    __hash__ = object.__hash__
