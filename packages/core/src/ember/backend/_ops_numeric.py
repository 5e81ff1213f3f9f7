"""Numeric primitives: arithmetic, comparisons, reductions, scans, sorting, matmul.

Conventions (see :mod:`._base` for the general ones):

- Second operands ``b`` are primitives or Python scalars (already checked against the kind by the
  core: an Int primitive only ever meets Python ``int`` scalars). Results keep ``a``'s dtype.
- Float ops follow IEEE 754 silently: overflow gives ``inf``, ``0/0`` and ``inf - inf`` give
  ``NaN``. A backend must not emit warnings (numpy's ``RuntimeWarning``) for them.
- Int ops wrap on overflow (two's complement), as in Burn, numpy and torch. Int division and
  remainder by zero give ``0`` (numpy's result; torch raises instead, but a data-dependent error
  would force a device synchronisation on every division).
- Whole-tensor reductions return shape ``(1,)``; ``*_dim`` reductions keep the reduced dim with
  size 1 (Burn). The core rejects reductions with no identity (max, min, argmax, median) over an
  empty dim before calling, so backends never see them.
- Int reductions keep the input dtype (an int32 sum is int32 and wraps); Int means are computed
  from a 64-bit sum so that an int32 mean never overflows when the mean itself fits.
- float16 (and bfloat16) sums, means, products, cumulative sums/products and matmuls accumulate
  in float32 and round once at the end (as torch does on CPU).
- Index results (``argmax``, ``argsort``, ``topk`` indices ...) have the backend's ``int_dtype``.
- NaN: ``maximum``/``minimum``/``max``/``min``/``cummax``/``cummin`` propagate NaN (torch);
  ``argmax``/``argmin`` point at the first NaN; sorting puts NaN last ascending and first
  descending; ``median`` of a slice holding a NaN is NaN.

Required ops raise ``NotImplementedError``; the others have defaults written with required ops
(of this group and of :mod:`._ops_shape`), which a backend overrides where it has a faster kernel.
"""

from __future__ import annotations

from typing import Any

from .._dtype import DType


def _req(name: str) -> Any:
    raise NotImplementedError(
        f"this backend does not implement the required primitive {name!r}; see ember.backend.Backend"
    )


#: accumulation types of the default mean
_WIDE = {
    DType.FLOAT16: DType.FLOAT32,
    DType.BFLOAT16: DType.FLOAT32,
    DType.INT32: DType.INT64,
    DType.INT16: DType.INT64,
    DType.INT8: DType.INT64,
    DType.UINT8: DType.INT64,
    DType.UINT16: DType.INT64,
    DType.UINT32: DType.INT64,
}


def _numel(shape: tuple[int, ...]) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def _at(rank: int, dim: int, sl: slice) -> tuple[slice, ...]:
    """One slice per dim: ``sl`` at ``dim``, everything elsewhere."""
    return tuple(sl if i == dim else slice(None) for i in range(rank))


class NumericOps:
    """Arithmetic, comparison, reduction, scan, sort and matmul primitives."""

    # ---- element-wise arithmetic (required) --------------------------------
    def add(self, a: Any, b: Any) -> Any:
        return _req("add")

    def sub(self, a: Any, b: Any) -> Any:
        return _req("sub")

    def mul(self, a: Any, b: Any) -> Any:
        return _req("mul")

    def div(self, a: Any, b: Any) -> Any:
        """True division (Float only): ``x / 0`` is ``±inf``, ``0 / 0`` is NaN."""
        return _req("div")

    def int_div(self, a: Any, b: Any) -> Any:
        """Int division rounding toward negative infinity (Python's ``//``); ``x // 0`` is 0."""
        return _req("int_div")

    def remainder(self, a: Any, b: Any) -> Any:
        """``a - floor(a / b) * b``: the sign of the divisor (Python's ``%``, torch.remainder).

        Int: ``x % 0`` is 0. Float: ``x % 0`` is NaN.
        """
        return _req("remainder")

    def fmod(self, a: Any, b: Any) -> Any:
        """C's fmod: the sign of the dividend (torch.fmod)."""
        return _req("fmod")

    def powf(self, a: Any, b: Any) -> Any:
        """``a ** b`` element-wise, Float."""
        return _req("powf")

    def powi(self, a: Any, b: Any) -> Any:
        """``a ** b`` with an Int exponent (Int primitive or Python int); Int or Float base.

        Int base with a negative exponent: ``1`` for base 1, ``±1`` for base -1, else ``0``
        (truncation of the real result; ``0 ** -n`` is 0, like Int division by zero).
        """
        return self.powf(a, b)

    def maximum(self, a: Any, b: Any) -> Any:
        """Element-wise max (Burn's ``max_pair``); NaN propagates (torch.maximum)."""
        return _req("maximum")

    def minimum(self, a: Any, b: Any) -> Any:
        """Element-wise min (Burn's ``min_pair``); NaN propagates (torch.minimum)."""
        return _req("minimum")

    def neg(self, a: Any) -> Any:
        return _req("neg")

    def abs(self, a: Any) -> Any:
        return _req("abs")

    def sign(self, a: Any) -> Any:
        """-1, 0 or 1 (NaN for NaN), same dtype."""
        return _req("sign")

    def clamp(self, a: Any, lo: Any, hi: Any) -> Any:
        """``min(max(a, lo), hi)``; ``lo`` or ``hi`` may be ``None``. NaN stays NaN; when
        ``lo > hi`` every element becomes ``hi`` (torch.clamp)."""
        if lo is not None:
            a = self.maximum(a, lo)
        if hi is not None:
            a = self.minimum(a, hi)
        return a

    # ---- comparisons (required; bool result) --------------------------------
    def equal(self, a: Any, b: Any) -> Any:
        return _req("equal")

    def not_equal(self, a: Any, b: Any) -> Any:
        return _req("not_equal")

    def greater(self, a: Any, b: Any) -> Any:
        return _req("greater")

    def greater_equal(self, a: Any, b: Any) -> Any:
        return _req("greater_equal")

    def lower(self, a: Any, b: Any) -> Any:
        return _req("lower")

    def lower_equal(self, a: Any, b: Any) -> Any:
        return _req("lower_equal")

    # ---- reductions --------------------------------------------------------
    def sum(self, a: Any) -> Any:
        """Sum of every element, shape ``(1,)``, dtype of ``a`` (0 when empty)."""
        return _req("sum")

    def sum_dim(self, a: Any, dim: int) -> Any:
        """Sum over ``dim``, kept with size 1."""
        return _req("sum_dim")

    def mean(self, a: Any) -> Any:
        """Mean of every element, shape ``(1,)``. Float: NaN when empty. Int: floor of the exact
        mean in ``a``'s dtype (0 when empty).

        Default: sum in a wide type (float32 for float16/bfloat16, int64 for narrower ints, where
        the backend supports it), divide, cast back.
        """
        return self._mean(a, None)

    def mean_dim(self, a: Any, dim: int) -> Any:
        """Mean over ``dim``, kept with size 1 (same rules as :meth:`mean`)."""
        return self._mean(a, dim)

    def _mean(self, a: Any, dim: int | None) -> Any:
        dt = self.dtype(a)  # type: ignore[attr-defined]
        wide = _WIDE.get(dt)
        if wide is not None and wide in self.supported_dtypes:  # type: ignore[attr-defined]
            x = self.cast(a, wide)  # type: ignore[attr-defined]
        else:
            wide, x = None, a
        shape = self.shape(a)  # type: ignore[attr-defined]
        s, n = (self.sum(x), _numel(shape)) if dim is None else (self.sum_dim(x, dim), shape[dim])
        if dt.is_float:
            r = self.div(s, float(n)) if n else self.mul(s, float("nan"))
        else:
            r = self.int_div(s, n) if n else s
        return r if wide is None else self.cast(r, dt)  # type: ignore[attr-defined]

    def prod(self, a: Any) -> Any:
        """Product of every element, shape ``(1,)`` (1 when empty)."""
        return _req("prod")

    def prod_dim(self, a: Any, dim: int) -> Any:
        return _req("prod_dim")

    def max(self, a: Any) -> Any:
        """Largest element, shape ``(1,)``; NaN propagates. Non-empty input."""
        return _req("max")

    def min(self, a: Any) -> Any:
        return _req("min")

    def index_bounds(self, a: Any) -> tuple[int, int]:
        """``(min, max)`` of a non-empty Int primitive as Python ints, read on the host: the core's
        index-value checks (:func:`ember.tensor._index_check.check_index_values`) call it once per
        index tensor, so a backend makes it one fused reduction plus one read of two scalars
        (``torch.aminmax``, one jitted kernel). Called on concrete values only (never on a tracer).

        Default: ``min`` and ``max``, joined with ``cat`` and read with one ``to_numpy``.
        """
        v = self.to_numpy(self.cat([self.min(a), self.max(a)], 0))  # type: ignore[attr-defined]
        return int(v[0]), int(v[1])

    def max_dim(self, a: Any, dim: int) -> Any:
        """Largest element along ``dim`` (kept, size 1); NaN propagates. ``dim`` is not empty."""
        return _req("max_dim")

    def min_dim(self, a: Any, dim: int) -> Any:
        return _req("min_dim")

    def argmax(self, a: Any, dim: int) -> Any:
        """Int index of the first largest element along ``dim`` (kept, size 1); a NaN counts as
        the largest."""
        return _req("argmax")

    def argmin(self, a: Any, dim: int) -> Any:
        """Int index of the first smallest element along ``dim``; a NaN counts as the smallest."""
        return _req("argmin")

    def max_dim_with_indices(self, a: Any, dim: int) -> tuple[Any, Any]:
        """``(max_dim(a, dim), argmax(a, dim))``."""
        return self.max_dim(a, dim), self.argmax(a, dim)

    def min_dim_with_indices(self, a: Any, dim: int) -> tuple[Any, Any]:
        return self.min_dim(a, dim), self.argmin(a, dim)

    def max_abs(self, a: Any) -> Any:
        """Largest absolute value, shape ``(1,)``."""
        return self.max(self.abs(a))

    def max_abs_dim(self, a: Any, dim: int) -> Any:
        return self.max_dim(self.abs(a), dim)

    def any(self, a: Any) -> Any:
        """Whether any element is non-zero/true (NaN counts as true), bool shape ``(1,)``."""
        return _req("any")

    def all(self, a: Any) -> Any:
        """Whether every element is non-zero/true (true when empty), bool shape ``(1,)``."""
        return _req("all")

    def any_dim(self, a: Any, dim: int) -> Any:
        return _req("any_dim")

    def all_dim(self, a: Any, dim: int) -> Any:
        return _req("all_dim")

    # ---- scans -------------------------------------------------------------
    def cumsum(self, a: Any, dim: int) -> Any:
        return _req("cumsum")

    def cumprod(self, a: Any, dim: int) -> Any:
        return _req("cumprod")

    def cummax(self, a: Any, dim: int) -> Any:
        """Running max along ``dim``; once a NaN is met the rest of the run is NaN (torch)."""
        return _req("cummax")

    def cummin(self, a: Any, dim: int) -> Any:
        return _req("cummin")

    # ---- sorting -----------------------------------------------------------
    def argsort(self, a: Any, dim: int, descending: bool) -> Any:
        """Int indices that sort ``a`` along ``dim``. Stable: equal values keep their order (in
        both directions). NaN sorts last ascending and first descending."""
        return _req("argsort")

    def sort(self, a: Any, dim: int, descending: bool) -> Any:
        """Values sorted along ``dim`` (same order as :meth:`argsort`)."""
        return self.sort_with_indices(a, dim, descending)[0]

    def sort_with_indices(self, a: Any, dim: int, descending: bool) -> tuple[Any, Any]:
        """``(sorted values, argsort indices)`` along ``dim``."""
        idx = self.argsort(a, dim, descending)
        return self.gather(a, dim, idx), idx  # type: ignore[attr-defined]

    def topk(self, a: Any, dim: int, k: int) -> tuple[Any, Any]:
        """The ``k`` largest values along ``dim`` in descending order and their Int indices
        (``0 <= k <= size``; ties keep index order; NaN counts as the largest)."""
        idx = self.argsort(a, dim, True)
        idx = self.slice(idx, _at(len(self.shape(a)), dim, slice(0, k)))  # type: ignore[attr-defined]
        return self.gather(a, dim, idx), idx  # type: ignore[attr-defined]

    def median(self, a: Any, dim: int) -> tuple[Any, Any]:
        """Lower median along ``dim`` (kept, size 1) and the Int index of an element holding it.

        For an even count the lower of the two middle values is taken (torch.median, Burn). A
        slice containing NaN has median NaN and its index points at a NaN. ``dim`` is not empty.
        """
        n = self.shape(a)[dim]  # type: ignore[attr-defined]
        rank = len(self.shape(a))  # type: ignore[attr-defined]
        values, idx = self.sort_with_indices(a, dim, False)
        mid = _at(rank, dim, slice((n - 1) // 2, (n - 1) // 2 + 1))
        last = _at(rank, dim, slice(n - 1, n))
        mv, mi = self.slice(values, mid), self.slice(idx, mid)  # type: ignore[attr-defined]
        if not self.dtype(a).is_float:  # type: ignore[attr-defined]
            return mv, mi
        lv, li = self.slice(values, last), self.slice(idx, last)  # type: ignore[attr-defined]
        nan = self.not_equal(lv, lv)
        return self.mask_where(mv, nan, lv), self.mask_where(mi, nan, li)  # type: ignore[attr-defined]

    # ---- linear algebra ----------------------------------------------------
    def matmul(self, a: Any, b: Any) -> Any:
        """Matrix product over the last two dims; leading dims broadcast (numpy.matmul); both
        ranks >= 2 and inner sizes equal (checked by the core)."""
        return _req("matmul")
