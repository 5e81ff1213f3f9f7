"""Numeric tensor ops (Burn's ``Numeric`` and ``Orderable``): arithmetic with Python operators,
comparisons, reductions, scans and matmul (sorting, topk and median live in :mod:`._ordered`, a
base of this mixin). Float and Int tensors; Bool only where said.

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
from collections.abc import Sequence
from typing import Any

from .._errors import KindError, ShapeError
from .._kind import Bool, Float, Int
from . import _core
from ._core import ANY, NUM, binary, dim_of, new, op_error, scalar_for, unary, wrap
from ._ordered import OrderedTensorOps
from ._util import broadcast_shapes, check_same, norm_dim, norm_dims


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


class NumericTensorOps(OrderedTensorOps):
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

    # ------------------------------------------------------------------ helpers
    def _call(self, op: str, fn: Any, kind: Any = None) -> Any:
        ops = self.ops
        try:
            p = fn(ops, self.primitive)
        except Exception as exc:
            raise op_error(op, exc, self) from exc
        return wrap(p, self, self.kind if kind is None else kind)

    def _need(self, op: str, kinds: tuple[Any, ...]) -> None:
        if self.kind not in kinds:
            names = " or ".join(k.name for k in kinds)
            raise KindError(
                f"{op} is not defined for {self.kind} tensors (it takes {names}); "
                "convert with .float() or .int() first."
            )

    def _dim(self, op: str, dim: int, nonempty: bool = False) -> int:
        d = norm_dim(op, dim, self.rank)
        if nonempty and self.shape[d] == 0:
            raise ShapeError(
                f"{op}: dim {dim} of shape {list(self.shape)} is empty; there is no value to return."
            )
        return d

    def _nonempty(self, op: str) -> None:
        if self.num_elements() == 0:
            raise ShapeError(f"{op}: the tensor is empty (shape {list(self.shape)}); there is no value to return.")

    def _fold(self, op: str, method: str, dims: Sequence[int]) -> Any:
        out = self
        for d in norm_dims(op, list(dims), self.rank):
            out = getattr(out, method)(d)
        return out

    # ------------------------------------------------------------------ reductions
    def sum(self) -> Any:
        """Sum of all elements, shape ``[1]``, same dtype (0 when empty)."""
        return self._reduce("sum", None)

    def sum_dim(self, dim: int) -> Any:
        """Sum over ``dim``, **kept with size 1**: ``[2, 3].sum_dim(-1) -> [2, 1]``."""
        return self._reduce("sum_dim", dim)

    def _reduce(self, op: str, dim: Any) -> Any:
        """``sum`` / ``sum_dim`` / ``mean`` / ``mean_dim`` (the hot reductions; no closures)."""
        k = self.kind
        if k is not Float and k is not Int:
            self._need(op, NUM)
        ops = self.ops
        p = self.primitive
        d = None if dim is None else dim_of(op, self, dim)
        try:
            if d is None:
                r = ops.sum(p) if op == "sum" else ops.mean(p)
            else:
                r = ops.sum_dim(p, d) if op == "sum_dim" else ops.mean_dim(p, d)
        except Exception as exc:
            raise op_error(op, exc, self) from exc
        return new(r, self.device, k, ops)

    def sum_dims(self, dims: Sequence[int]) -> Any:
        """Sum over each of ``dims``, each **kept with size 1**."""
        return self._fold("sum_dims", "sum_dim", dims)

    def sum_dims_squeeze(self, dims: Sequence[int]) -> Any:
        """Sum over each of ``dims`` with those dims removed: ``[2, 3, 4].sum_dims_squeeze([0, 1])
        -> [4]`` (Burn's ``sum_dims_squeeze``, i.e. ``sum_dims(dims).squeeze_dims(dims)``)."""
        ds = norm_dims("sum_dims_squeeze", list(dims), self.rank)
        if not ds:
            return self
        return self._fold("sum_dims_squeeze", "sum_dim", ds).squeeze_dims(ds)

    def mean(self) -> Any:
        """Mean of all elements, shape ``[1]``. Float: NaN when empty. Int: floor of the mean."""
        return self._reduce("mean", None)

    def mean_dim(self, dim: int) -> Any:
        """Mean over ``dim``, **kept with size 1** (Int: floor of the mean)."""
        return self._reduce("mean_dim", dim)

    def mean_dims(self, dims: Sequence[int]) -> Any:
        """Mean over each of ``dims``, each **kept with size 1**."""
        return self._fold("mean_dims", "mean_dim", dims)

    def prod(self) -> Any:
        """Product of all elements, shape ``[1]`` (1 when empty; Int wraps on overflow)."""
        self._need("prod", NUM)
        return self._call("prod", lambda ops, p: ops.prod(p))

    def prod_dim(self, dim: int) -> Any:
        """Product over ``dim``, **kept with size 1**."""
        self._need("prod_dim", NUM)
        d = self._dim("prod_dim", dim)
        return self._call("prod_dim", lambda ops, p: ops.prod_dim(p, d))

    def prod_dims(self, dims: Sequence[int]) -> Any:
        """Product over each of ``dims``, each **kept with size 1**."""
        return self._fold("prod_dims", "prod_dim", dims)

    def max(self) -> Any:
        """Largest element, shape ``[1]``; NaN if any element is NaN.

        Raises:
            ShapeError: empty tensor.
        """
        self._need("max", NUM)
        self._nonempty("max")
        return self._call("max", lambda ops, p: ops.max(p))

    def min(self) -> Any:
        """Smallest element, shape ``[1]``; NaN if any element is NaN. ShapeError when empty."""
        self._need("min", NUM)
        self._nonempty("min")
        return self._call("min", lambda ops, p: ops.min(p))

    def max_dim(self, dim: int) -> Any:
        """Largest value along ``dim``, **kept with size 1**; NaN propagates.

        Raises:
            ShapeError: ``dim`` has size 0.
        """
        self._need("max_dim", NUM)
        d = self._dim("max_dim", dim, nonempty=True)
        return self._call("max_dim", lambda ops, p: ops.max_dim(p, d))

    def min_dim(self, dim: int) -> Any:
        """Smallest value along ``dim``, **kept with size 1**; NaN propagates."""
        self._need("min_dim", NUM)
        d = self._dim("min_dim", dim, nonempty=True)
        return self._call("min_dim", lambda ops, p: ops.min_dim(p, d))

    def max_dims(self, dims: Sequence[int]) -> Any:
        """Largest value over each of ``dims``, each **kept with size 1**."""
        return self._fold("max_dims", "max_dim", dims)

    def min_dims(self, dims: Sequence[int]) -> Any:
        """Smallest value over each of ``dims``, each **kept with size 1**."""
        return self._fold("min_dims", "min_dim", dims)

    def argmax(self, dim: int) -> Any:
        """Int index (backend int dtype) of the first largest value along ``dim``, **kept with
        size 1**: ``[2, 3].argmax(1) -> [2, 1]``. A NaN counts as the largest."""
        self._need("argmax", NUM)
        d = self._dim("argmax", dim, nonempty=True)
        return self._call("argmax", lambda ops, p: ops.argmax(p, d), Int)

    def argmin(self, dim: int) -> Any:
        """Int index of the first smallest value along ``dim``, **kept with size 1**; a NaN
        counts as the smallest."""
        self._need("argmin", NUM)
        d = self._dim("argmin", dim, nonempty=True)
        return self._call("argmin", lambda ops, p: ops.argmin(p, d), Int)

    def max_dim_with_indices(self, dim: int) -> tuple[Any, Any]:
        """``(max_dim(dim), argmax(dim))`` in one pass, both **kept with size 1**."""
        return self._with_indices("max_dim_with_indices", dim, "max_dim_with_indices")

    def min_dim_with_indices(self, dim: int) -> tuple[Any, Any]:
        """``(min_dim(dim), argmin(dim))`` in one pass, both **kept with size 1**."""
        return self._with_indices("min_dim_with_indices", dim, "min_dim_with_indices")

    def _with_indices(self, op: str, dim: int, prim: str, *extra: Any) -> tuple[Any, Any]:
        self._need(op, NUM)
        d = self._dim(op, dim, nonempty=prim in ("max_dim_with_indices", "min_dim_with_indices", "median"))
        try:
            v, i = getattr(self.ops, prim)(self.primitive, d, *extra)
        except Exception as exc:
            raise op_error(op, exc, self) from exc
        return wrap(v, self, self.kind), wrap(i, self, Int)

    def max_abs(self) -> Any:
        """Largest absolute value, shape ``[1]`` (Burn's ``max_abs``). ShapeError when empty."""
        self._need("max_abs", NUM)
        self._nonempty("max_abs")
        return self._call("max_abs", lambda ops, p: ops.max_abs(p))

    def max_abs_dim(self, dim: int) -> Any:
        """Largest absolute value along ``dim``, **kept with size 1** (Burn's ``max_abs_dim``)."""
        self._need("max_abs_dim", NUM)
        d = self._dim("max_abs_dim", dim, nonempty=True)
        return self._call("max_abs_dim", lambda ops, p: ops.max_abs_dim(p, d))

    def max_abs_dims(self, dims: Sequence[int]) -> Any:
        """Largest absolute value over each of ``dims``, each **kept with size 1**."""
        return self._fold("max_abs_dims", "max_abs_dim", dims)

    def any(self) -> Any:
        """Bool ``[1]``: whether any element is non-zero / true (false when empty). Any kind."""
        return self._call("any", lambda ops, p: ops.any(p), Bool)

    def all(self) -> Any:
        """Bool ``[1]``: whether every element is non-zero / true (true when empty). Any kind."""
        return self._call("all", lambda ops, p: ops.all(p), Bool)

    def any_dim(self, dim: int) -> Any:
        """Bool: whether any element along ``dim`` is non-zero / true, **kept with size 1**."""
        d = self._dim("any_dim", dim)
        return self._call("any_dim", lambda ops, p: ops.any_dim(p, d), Bool)

    def all_dim(self, dim: int) -> Any:
        """Bool: whether every element along ``dim`` is non-zero / true, **kept with size 1**."""
        d = self._dim("all_dim", dim)
        return self._call("all_dim", lambda ops, p: ops.all_dim(p, d), Bool)

    # ------------------------------------------------------------------ scans (same shape)
    def cumsum(self, dim: int) -> Any:
        """Cumulative sum along ``dim``; same shape and dtype."""
        return self._scan("cumsum", dim)

    def cumprod(self, dim: int) -> Any:
        """Cumulative product along ``dim``; same shape and dtype."""
        return self._scan("cumprod", dim)

    def cummax(self, dim: int) -> Any:
        """Running maximum along ``dim``; after a NaN the run stays NaN (torch.cummax values)."""
        return self._scan("cummax", dim)

    def cummin(self, dim: int) -> Any:
        """Running minimum along ``dim``; after a NaN the run stays NaN."""
        return self._scan("cummin", dim)

    def _scan(self, op: str, dim: int) -> Any:
        self._need(op, NUM)
        d = self._dim(op, dim)
        return self._call(op, lambda ops, p: getattr(ops, op)(p, d))

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
        return new(p, self.device, k, ops)

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
