"""Numeric tensor ops (Burn's ``Numeric`` and ``Orderable``): arithmetic with Python operators,
comparisons, reductions, scans, sorting and matmul.

Burn's conventions, kept on purpose:

- ``*_dim`` reductions keep the reduced dim with size 1 (``[2, 3].sum_dim(1) -> [2, 1]``);
  ``sum_dims`` / ``mean_dims`` keep every reduced dim too. Use ``squeeze_dim`` to drop it.
- whole-tensor reductions (``sum``, ``mean``, ``max`` ...) return shape ``[1]``.
- Int division ``/`` and ``//`` round toward negative infinity, and ``%`` takes the sign of the
  divisor (Python's rules; ``a == (a // b) * b + a % b``).
- Float and Int tensors are never mixed implicitly: convert with ``.float()`` / ``.int()``.
"""

from __future__ import annotations

from typing import Any

from .._errors import KindError, ShapeError
from .._kind import Bool, Float, Int
from . import _core
from ._core import ANY, FLOAT, NUM, binary, new, op_error, unary, wrap
from ._util import check_same, norm_dim, norm_dims


class NumericTensorOps:
    __slots__ = ()

    # ------------------------------------------------------------------ arithmetic
    add = binary("add", "add", NUM)
    sub = binary("sub", "sub", NUM)
    mul = binary("mul", "mul", NUM)
    remainder = binary("remainder", "remainder", NUM)
    max_pair = binary("max_pair", "maximum", NUM)
    min_pair = binary("min_pair", "minimum", NUM)
    _true_div = binary("div", "div", FLOAT)
    _int_div = binary("div", "int_div", (Int,))

    def div(self, other: Any) -> Any:
        """Element-wise division. Float: true division. Int: floor division (Python's ``//``).

        Raises:
            ShapeError: shapes that do not broadcast.
            KindError: Bool tensors, or Float mixed with Int.
        """
        if self.kind is Int:  # type: ignore[attr-defined]
            return self._int_div(other)
        return self._true_div(other)

    # ``_scalar`` forms (Burn names); they accept tensors too
    add_scalar = add
    sub_scalar = sub
    mul_scalar = mul
    remainder_scalar = remainder

    def div_scalar(self, other: Any) -> Any:
        return self.div(other)

    neg = unary("neg", "neg", NUM)
    abs = unary("abs", "abs", NUM)
    sign = unary("sign", "sign", NUM)

    def powi(self, exponent: Any) -> Any:
        """``self ** exponent`` with an Int tensor or int exponent (Float or Int base)."""
        if type(exponent) is _core.Tensor:
            if exponent.kind is not Int:
                raise KindError(f"powi: the exponent must be an Int tensor, got {exponent.kind}; use powf.")
            if exponent.device is not self.device:  # type: ignore[attr-defined]
                check_same("powi", self, exponent)  # type: ignore[arg-type]
            b: Any = exponent.primitive
        else:
            if not isinstance(exponent, int) or isinstance(exponent, bool):
                raise TypeError(f"powi: exponent must be an int or Int tensor, got {exponent!r}; use powf_scalar")
            b = exponent
        if self.kind is Bool:  # type: ignore[attr-defined]
            raise KindError("powi needs a Float or Int tensor, got Bool; convert with .int() first.")
        try:
            p = self.ops.powi(self.primitive, b)  # type: ignore[attr-defined]
        except Exception as exc:
            raise op_error("powi", exc, self, exponent) from exc
        return new(p, self.device, self.kind, self.ops)  # type: ignore[attr-defined]

    powi_scalar = powi

    def clamp(self, min: Any, max: Any) -> Any:  # noqa: A002 - Burn's names
        """Values clamped to ``[min, max]`` (scalars)."""
        lo = _core.scalar_for("clamp", self, min)  # type: ignore[arg-type]
        hi = _core.scalar_for("clamp", self, max)  # type: ignore[arg-type]
        if lo > hi:
            raise ValueError(f"clamp: min ({min}) is greater than max ({max}).")
        return self._reduce_like("clamp", lambda ops, p: ops.clamp(p, lo, hi))

    def clamp_min(self, min: Any) -> Any:  # noqa: A002
        lo = _core.scalar_for("clamp_min", self, min)  # type: ignore[arg-type]
        return self._reduce_like("clamp_min", lambda ops, p: ops.clamp(p, lo, None))

    def clamp_max(self, max: Any) -> Any:  # noqa: A002
        hi = _core.scalar_for("clamp_max", self, max)  # type: ignore[arg-type]
        return self._reduce_like("clamp_max", lambda ops, p: ops.clamp(p, None, hi))

    # ------------------------------------------------------------------ comparisons
    equal = binary("equal", "equal", ANY, Bool)
    not_equal = binary("not_equal", "not_equal", ANY, Bool)
    greater = binary("greater", "greater", NUM, Bool)
    greater_equal = binary("greater_equal", "greater_equal", NUM, Bool)
    lower = binary("lower", "lower", NUM, Bool)
    lower_equal = binary("lower_equal", "lower_equal", NUM, Bool)
    equal_elem = equal
    not_equal_elem = not_equal
    greater_elem = greater
    greater_equal_elem = greater_equal
    lower_elem = lower
    lower_equal_elem = lower_equal

    # ------------------------------------------------------------------ helpers
    def _reduce_like(self, op: str, fn: Any, kind: Any = None) -> Any:
        ops = self.ops  # type: ignore[attr-defined]
        try:
            p = fn(ops, self.primitive)  # type: ignore[attr-defined]
        except Exception as exc:
            raise op_error(op, exc, self) from exc
        k = self.kind if kind is None else kind  # type: ignore[attr-defined]
        return wrap(p, self, k)  # type: ignore[arg-type]

    def _need(self, op: str, kinds: tuple[Any, ...]) -> None:
        if self.kind not in kinds:  # type: ignore[attr-defined]
            raise KindError(
                f"{op} is not defined for {self.kind} tensors; convert with .float() or .int() first."  # type: ignore[attr-defined]
            )

    def _nonempty(self, op: str) -> None:
        if self.num_elements() == 0:  # type: ignore[attr-defined]
            raise ShapeError(f"{op}: the tensor is empty (shape {list(self.shape)}); there is no value to return.")  # type: ignore[attr-defined]

    # ------------------------------------------------------------------ reductions
    def sum(self) -> Any:
        """Sum of all elements, shape ``[1]``."""
        self._need("sum", NUM)
        return self._reduce_like("sum", lambda ops, p: ops.sum(p))

    def sum_dim(self, dim: int) -> Any:
        """Sum over ``dim``, which is kept with size 1."""
        self._need("sum_dim", NUM)
        d = norm_dim("sum_dim", dim, self.rank)  # type: ignore[attr-defined]
        return self._reduce_like("sum_dim", lambda ops, p: ops.sum_dim(p, d))

    def sum_dims(self, dims: Any) -> Any:
        """Sum over each of ``dims`` (kept with size 1)."""
        out = self
        for d in norm_dims("sum_dims", list(dims), self.rank):  # type: ignore[attr-defined]
            out = out.sum_dim(d)
        return out

    def mean(self) -> Any:
        """Mean of all elements, shape ``[1]`` (Int: floor of the mean)."""
        self._need("mean", NUM)
        if self.kind is Int:  # type: ignore[attr-defined]
            return self.sum().div(max(self.num_elements(), 1))  # type: ignore[attr-defined]
        return self._reduce_like("mean", lambda ops, p: ops.mean(p))

    def mean_dim(self, dim: int) -> Any:
        """Mean over ``dim``, kept with size 1 (Int: floor)."""
        self._need("mean_dim", NUM)
        d = norm_dim("mean_dim", dim, self.rank)  # type: ignore[attr-defined]
        if self.kind is Int:  # type: ignore[attr-defined]
            return self.sum_dim(d).div(max(self.shape[d], 1))  # type: ignore[attr-defined]
        return self._reduce_like("mean_dim", lambda ops, p: ops.mean_dim(p, d))

    def mean_dims(self, dims: Any) -> Any:
        out = self
        for d in norm_dims("mean_dims", list(dims), self.rank):  # type: ignore[attr-defined]
            out = out.mean_dim(d)
        return out

    def prod(self) -> Any:
        """Product of all elements, shape ``[1]``."""
        self._need("prod", NUM)
        return self._reduce_like("prod", lambda ops, p: ops.prod(p))

    def prod_dim(self, dim: int) -> Any:
        self._need("prod_dim", NUM)
        d = norm_dim("prod_dim", dim, self.rank)  # type: ignore[attr-defined]
        return self._reduce_like("prod_dim", lambda ops, p: ops.prod_dim(p, d))

    def max(self) -> Any:
        """Largest element, shape ``[1]``.

        Raises:
            ShapeError: empty tensor.
        """
        self._need("max", NUM)
        self._nonempty("max")
        return self._reduce_like("max", lambda ops, p: ops.max(p))

    def min(self) -> Any:
        self._need("min", NUM)
        self._nonempty("min")
        return self._reduce_like("min", lambda ops, p: ops.min(p))

    def max_dim(self, dim: int) -> Any:
        """Largest value along ``dim`` (kept with size 1)."""
        self._need("max_dim", NUM)
        d = norm_dim("max_dim", dim, self.rank)  # type: ignore[attr-defined]
        self._nonempty("max_dim")
        return self._reduce_like("max_dim", lambda ops, p: ops.max_dim(p, d))

    def min_dim(self, dim: int) -> Any:
        self._need("min_dim", NUM)
        d = norm_dim("min_dim", dim, self.rank)  # type: ignore[attr-defined]
        self._nonempty("min_dim")
        return self._reduce_like("min_dim", lambda ops, p: ops.min_dim(p, d))

    def argmax(self, dim: int) -> Any:
        """Int index of the first largest value along ``dim`` (kept with size 1)."""
        self._need("argmax", NUM)
        d = norm_dim("argmax", dim, self.rank)  # type: ignore[attr-defined]
        self._nonempty("argmax")
        return self._reduce_like("argmax", lambda ops, p: ops.argmax(p, d), Int)

    def argmin(self, dim: int) -> Any:
        self._need("argmin", NUM)
        d = norm_dim("argmin", dim, self.rank)  # type: ignore[attr-defined]
        self._nonempty("argmin")
        return self._reduce_like("argmin", lambda ops, p: ops.argmin(p, d), Int)

    def max_dim_with_indices(self, dim: int) -> tuple[Any, Any]:
        """``(max_dim(dim), argmax(dim))``."""
        return self.max_dim(dim), self.argmax(dim)

    def min_dim_with_indices(self, dim: int) -> tuple[Any, Any]:
        return self.min_dim(dim), self.argmin(dim)

    def max_abs(self) -> Any:
        """Largest absolute value, shape ``[1]``."""
        return self.abs().max()

    def any(self) -> Any:
        """Bool ``[1]``: whether any element is non-zero / true."""
        return self._reduce_like("any", lambda ops, p: ops.any(p), Bool)

    def all(self) -> Any:
        """Bool ``[1]``: whether every element is non-zero / true (true when empty)."""
        return self._reduce_like("all", lambda ops, p: ops.all(p), Bool)

    def any_dim(self, dim: int) -> Any:
        d = norm_dim("any_dim", dim, self.rank)  # type: ignore[attr-defined]
        return self._reduce_like("any_dim", lambda ops, p: ops.any_dim(p, d), Bool)

    def all_dim(self, dim: int) -> Any:
        d = norm_dim("all_dim", dim, self.rank)  # type: ignore[attr-defined]
        return self._reduce_like("all_dim", lambda ops, p: ops.all_dim(p, d), Bool)

    # ------------------------------------------------------------------ scans
    def cumsum(self, dim: int) -> Any:
        """Cumulative sum along ``dim``; same shape."""
        self._need("cumsum", NUM)
        d = norm_dim("cumsum", dim, self.rank)  # type: ignore[attr-defined]
        return self._reduce_like("cumsum", lambda ops, p: ops.cumsum(p, d))

    def cumprod(self, dim: int) -> Any:
        self._need("cumprod", NUM)
        d = norm_dim("cumprod", dim, self.rank)  # type: ignore[attr-defined]
        return self._reduce_like("cumprod", lambda ops, p: ops.cumprod(p, d))

    def cummax(self, dim: int) -> Any:
        self._need("cummax", NUM)
        d = norm_dim("cummax", dim, self.rank)  # type: ignore[attr-defined]
        return self._reduce_like("cummax", lambda ops, p: ops.cummax(p, d))

    def cummin(self, dim: int) -> Any:
        self._need("cummin", NUM)
        d = norm_dim("cummin", dim, self.rank)  # type: ignore[attr-defined]
        return self._reduce_like("cummin", lambda ops, p: ops.cummin(p, d))

    # ------------------------------------------------------------------ matmul
    def matmul(self, other: Any) -> Any:
        """Matrix product over the last two dims; leading dims broadcast. Both ranks >= 2
        (use ``unsqueeze`` for vectors, or :meth:`dot`).

        Raises:
            ShapeError: rank < 2, inner sizes differ, or batch dims do not broadcast.
        """
        self._need("matmul", NUM)
        if type(other) is not _core.Tensor:
            raise TypeError(f"matmul: expected a Tensor, got {type(other).__name__}")
        if other.device is not self.device or other.kind is not self.kind:  # type: ignore[attr-defined]
            check_same("matmul", self, other)  # type: ignore[arg-type]
        sa, sb = self.shape, other.shape  # type: ignore[attr-defined]
        if len(sa) < 2 or len(sb) < 2:
            raise ShapeError(
                f"matmul: both operands need rank >= 2, got shapes {list(sa)} and {list(sb)}; "
                "unsqueeze vectors (or use dot)."
            )
        if sa[-1] != sb[-2]:
            raise ShapeError(
                f"matmul: inner sizes differ: {list(sa)} @ {list(sb)} needs {sa[-1]} == {sb[-2]}."
            )
        try:
            p = self.ops.matmul(self.primitive, other.primitive)  # type: ignore[attr-defined]
        except Exception as exc:
            raise op_error("matmul", exc, self, other) from exc
        return new(p, self.device, self.kind, self.ops)  # type: ignore[attr-defined]

    def dot(self, other: Any) -> Any:
        """Inner product of two 1-D tensors, shape ``[1]``.

        Raises:
            ShapeError: not both rank 1 of equal length.
        """
        if self.rank != 1 or other.rank != 1 or self.shape != other.shape:  # type: ignore[attr-defined]
            raise ShapeError(
                f"dot: expected two 1-D tensors of equal length, got {list(self.shape)} and {list(other.shape)}."  # type: ignore[attr-defined]
            )
        return self.mul(other).sum()

    # ------------------------------------------------------------------ Python operators
    def __add__(self, o: Any) -> Any:
        return self.add(o)

    def __radd__(self, o: Any) -> Any:
        return self.add(o)

    def __sub__(self, o: Any) -> Any:
        return self.sub(o)

    def __rsub__(self, o: Any) -> Any:
        return self.neg().add(o)

    def __mul__(self, o: Any) -> Any:
        return self.mul(o)

    def __rmul__(self, o: Any) -> Any:
        return self.mul(o)

    def __truediv__(self, o: Any) -> Any:
        return self.div(o)

    def __rtruediv__(self, o: Any) -> Any:
        return self.full_like(o).div(self)  # type: ignore[attr-defined]

    def __floordiv__(self, o: Any) -> Any:
        if self.kind is Int:  # type: ignore[attr-defined]
            return self._int_div(o)
        return self.div(o).floor()  # type: ignore[attr-defined]

    def __rfloordiv__(self, o: Any) -> Any:
        return self.full_like(o).__floordiv__(self)  # type: ignore[attr-defined]

    def __mod__(self, o: Any) -> Any:
        return self.remainder(o)

    def __rmod__(self, o: Any) -> Any:
        return self.full_like(o).remainder(self)  # type: ignore[attr-defined]

    def __matmul__(self, o: Any) -> Any:
        return self.matmul(o)

    def __rmatmul__(self, o: Any) -> Any:
        return o.matmul(self)

    def __neg__(self) -> Any:
        return self.neg()

    def __pos__(self) -> Any:
        return self

    def __abs__(self) -> Any:
        return self.abs()

    def __pow__(self, o: Any) -> Any:
        if self.kind is Float:  # type: ignore[attr-defined]
            return self.powf(o)  # type: ignore[attr-defined]
        return self.powi(o)

    def __rpow__(self, o: Any) -> Any:
        return self.full_like(o).__pow__(self)  # type: ignore[attr-defined]

    def __eq__(self, o: Any) -> Any:  # type: ignore[override]
        return self.equal(o)

    def __ne__(self, o: Any) -> Any:  # type: ignore[override]
        return self.not_equal(o)

    def __lt__(self, o: Any) -> Any:
        return self.lower(o)

    def __le__(self, o: Any) -> Any:
        return self.lower_equal(o)

    def __gt__(self, o: Any) -> Any:
        return self.greater(o)

    def __ge__(self, o: Any) -> Any:
        return self.greater_equal(o)
