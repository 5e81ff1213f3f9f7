"""Numeric primitives: arithmetic, comparisons, reductions, scans, sorting, matmul.

Second operands ``b`` are primitives or Python scalars (see :mod:`._base` for conventions).
"""

from __future__ import annotations

from typing import Any


def _req(name: str) -> Any:
    raise NotImplementedError(
        f"this backend does not implement the required primitive {name!r}; see ember.backend.Backend"
    )


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
        """True division (Float)."""
        return _req("div")

    def int_div(self, a: Any, b: Any) -> Any:
        """Integer division rounding toward negative infinity (Python's ``//``), Int only."""
        return _req("int_div")

    def remainder(self, a: Any, b: Any) -> Any:
        """``a - floor(a / b) * b``: the sign of the divisor (Python's ``%``, torch.remainder)."""
        return _req("remainder")

    def fmod(self, a: Any, b: Any) -> Any:
        """C's fmod: the sign of the dividend (torch.fmod)."""
        return _req("fmod")

    def powf(self, a: Any, b: Any) -> Any:
        """``a ** b`` element-wise, Float."""
        return _req("powf")

    def powi(self, a: Any, b: Any) -> Any:
        """``a ** b`` with an Int exponent (primitive or int); Int or Float base."""
        return self.powf(a, b)

    def maximum(self, a: Any, b: Any) -> Any:
        """Element-wise max (Burn's ``max_pair``); NaN propagates."""
        return _req("maximum")

    def minimum(self, a: Any, b: Any) -> Any:
        """Element-wise min (Burn's ``min_pair``); NaN propagates."""
        return _req("minimum")

    def neg(self, a: Any) -> Any:
        return _req("neg")

    def abs(self, a: Any) -> Any:
        return _req("abs")

    def sign(self, a: Any) -> Any:
        """-1, 0 or 1 (NaN for NaN), same dtype."""
        return _req("sign")

    def clamp(self, a: Any, lo: Any, hi: Any) -> Any:
        """Clamp to ``[lo, hi]``; ``lo`` or ``hi`` may be ``None``."""
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
        """Sum of every element, shape ``(1,)``."""
        return _req("sum")

    def sum_dim(self, a: Any, dim: int) -> Any:
        """Sum over ``dim``, kept with size 1."""
        return _req("sum_dim")

    def mean(self, a: Any) -> Any:
        return _req("mean")

    def mean_dim(self, a: Any, dim: int) -> Any:
        return _req("mean_dim")

    def prod(self, a: Any) -> Any:
        return _req("prod")

    def prod_dim(self, a: Any, dim: int) -> Any:
        return _req("prod_dim")

    def max(self, a: Any) -> Any:
        """Largest element, shape ``(1,)``; NaN propagates. Non-empty input."""
        return _req("max")

    def min(self, a: Any) -> Any:
        return _req("min")

    def max_dim(self, a: Any, dim: int) -> Any:
        return _req("max_dim")

    def min_dim(self, a: Any, dim: int) -> Any:
        return _req("min_dim")

    def argmax(self, a: Any, dim: int) -> Any:
        """Index of the first largest element along ``dim`` (kept, size 1), Int."""
        return _req("argmax")

    def argmin(self, a: Any, dim: int) -> Any:
        return _req("argmin")

    def any(self, a: Any) -> Any:
        """Whether any element is non-zero/true, bool shape ``(1,)``."""
        return _req("any")

    def all(self, a: Any) -> Any:
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
        return _req("cummax")

    def cummin(self, a: Any, dim: int) -> Any:
        return _req("cummin")

    # ---- sorting -----------------------------------------------------------
    def sort(self, a: Any, dim: int, descending: bool) -> Any:
        """Values sorted along ``dim`` (stable; NaN last ascending, first descending)."""
        return self.gather(a, dim, self.argsort(a, dim, descending))  # type: ignore[attr-defined]

    def argsort(self, a: Any, dim: int, descending: bool) -> Any:
        """Int indices that sort ``a`` along ``dim`` (stable: equal values keep their order)."""
        return _req("argsort")

    def topk(self, a: Any, dim: int, k: int) -> tuple[Any, Any]:
        """The ``k`` largest values along ``dim`` in descending order and their Int indices."""
        idx = self.argsort(a, dim, True)
        sl = tuple(slice(0, k) if i == dim else slice(None) for i in range(len(self.shape(a))))  # type: ignore[attr-defined]
        idx = self.slice(idx, sl)  # type: ignore[attr-defined]
        return self.gather(a, dim, idx), idx  # type: ignore[attr-defined]

    # ---- linear algebra ----------------------------------------------------
    def matmul(self, a: Any, b: Any) -> Any:
        """Matrix product over the last two dims; leading dims broadcast (numpy.matmul), rank >= 2."""
        return _req("matmul")
