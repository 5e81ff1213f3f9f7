"""Numeric primitives of the numpy backend (see ``ember.backend._ops_numeric`` for the contract).

- Every op is one or a few vectorized numpy calls; inputs are never written.
- IEEE events (overflow, ``0/0``, ``inf - inf``, Int division by zero) are silent: ops that can
  raise numpy's floating-point warnings run under :func:`~._quiet.quiet`, which switches numpy's
  error state to "ignore" for the call only (about 0.15 µs, a sixth of ``np.errstate``'s cost).
- Reductions call the ufunc methods (``np.add.reduce``, ``np.maximum.reduce``) directly: the
  ``np.sum`` / ``np.max`` wrappers add 1-3 µs of Python per call on small arrays.
- float16 sums, means, products, cumulative ops and matmuls accumulate in float32 and round once.
- Int reductions keep the input dtype (``np.sum`` alone would widen int32 to int64); Int means
  are floor divisions of an int64 sum, so an int32 mean never overflows.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._quiet import call, enter, leave, quiet, quiet2, run

__all__ = ["NumpyNumericOps", "quiet"]

_quiet2 = quiet2  # kept for modules importing it from here

_F16 = np.dtype(np.float16)
_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)
_I64 = np.dtype(np.int64)
_BOOL = np.dtype(np.bool_)


_add_reduce: Any = np.add.reduce  # positional keepdims: the stubs want keywords (slower)
_max_reduce: Any = np.maximum.reduce
_min_reduce: Any = np.minimum.reduce
_true_divide: Any = np.true_divide
_matmul = np.matmul


def _acc(dt: np.dtype) -> np.dtype:
    """Accumulator dtype: float32 for float16, the dtype itself otherwise."""
    return _F32 if dt == _F16 else dt


def _keep(r: Any, dt: np.dtype) -> np.ndarray:
    """A whole-tensor reduction result as shape ``(1,)`` of dtype ``dt``."""
    return np.asarray(r, dtype=dt).reshape(1)


def _cast(r: Any, dt: np.dtype) -> Any:
    return r if r.dtype == dt else r.astype(dt)


#: index arrays up to this size get their bounds from ``tolist()`` (2.6 µs vs 4.5 µs for 32 values; the two
#: reductions win from about 60)
_SMALL_BOUNDS = 32

class NumpyNumericOps:
    # ---- element-wise: numpy ufuncs take arrays or Python scalars (NEP 50 keeps a's dtype)
    add = staticmethod(_quiet2(np.add))
    sub = staticmethod(_quiet2(np.subtract))
    mul = staticmethod(_quiet2(np.multiply))
    div = staticmethod(_quiet2(np.true_divide))
    int_div = staticmethod(_quiet2(np.floor_divide))
    remainder = staticmethod(_quiet2(np.remainder))
    fmod = staticmethod(_quiet2(np.fmod))
    maximum = staticmethod(_quiet2(np.maximum))
    minimum = staticmethod(_quiet2(np.minimum))
    # negation and absolute value only flip or clear the sign bit (Int: wrap silently): they never raise a
    # floating-point event, so they need no quiet (one Python frame and one error-state switch less a call)
    neg = staticmethod(np.negative)
    abs = staticmethod(np.abs)
    sign = staticmethod(quiet(np.sign))
    # comparisons never raise floating-point errors
    equal = staticmethod(np.equal)
    not_equal = staticmethod(np.not_equal)
    greater = staticmethod(np.greater)
    greater_equal = staticmethod(np.greater_equal)
    lower = staticmethod(np.less)
    lower_equal = staticmethod(np.less_equal)

    @staticmethod
    @quiet
    def powf(a: Any, b: Any) -> Any:
        r = np.power(a, b)
        return _cast(r, a.dtype)

    @staticmethod
    @quiet
    def powi(a: Any, b: Any) -> Any:
        dt = a.dtype
        if dt.kind not in "iu":
            e = b.astype(dt) if isinstance(b, np.ndarray) else float(b)
            return _cast(np.power(a, e), dt)
        e = np.asarray(b)
        neg = e < 0
        if not neg.any():
            return _cast(np.power(a, e.astype(dt, copy=False)), dt)
        # negative exponents: the truncated real power is 1 for base 1, +-1 for base -1, else 0
        pos = np.power(a, np.where(neg, 0, e).astype(dt, copy=False))
        odd = (e % 2) != 0
        small = np.where(a == 1, 1, np.where(a == -1, np.where(odd, -1, 1), 0))
        return np.where(neg, small, pos).astype(dt, copy=False)

    @staticmethod
    @quiet
    def clamp(a: Any, lo: Any, hi: Any) -> Any:
        if lo is None:
            return np.minimum(a, hi)
        if hi is None:
            return np.maximum(a, lo)
        return np.minimum(np.maximum(a, lo), hi)

    # ---- reductions: whole-tensor ones give shape (1,), *_dim ones keep the dim
    # sums keep a's dtype (Bool: the backend's int dtype), accumulated in float32 for float16
    def sum(self, a: Any) -> Any:
        return self.sum_dim(a, None).reshape(1)

    def sum_dim(self, a: Any, dim: int | None) -> Any:
        dt = a.dtype
        if dt is _F32 or dt is _F64:  # the reduction in the quiet context (_quiet.run), no Python frame between
            try:
                return run(_add_reduce, a, dim, dt, None, True)
            except RuntimeError:
                return call(_add_reduce, a, dim, dt, None, True)
        tok = enter()
        try:
            if dt is _F16:
                return _add_reduce(a, dim, _F32, None, True).astype(_F16)
            return _add_reduce(a, dim, self._idt if dt is _BOOL else dt, None, True)  # type: ignore[attr-defined]
        finally:
            leave(tok)

    @staticmethod
    def mean(a: Any) -> Any:
        try:  # in the quiet context (_quiet.run): no wrapper frame
            return run(_mean, a, None, a.size)
        except RuntimeError:
            return call(_mean, a, None, a.size)

    @staticmethod
    @quiet
    def mean_dim(a: Any, dim: int) -> Any:
        return _mean(a, dim, a.shape[dim])

    @staticmethod
    @quiet
    def prod(a: Any) -> Any:
        return _keep(np.prod(a, dtype=_acc(a.dtype)), a.dtype)

    @staticmethod
    @quiet
    def prod_dim(a: Any, dim: int) -> Any:
        return _cast(np.prod(a, axis=dim, keepdims=True, dtype=_acc(a.dtype)), a.dtype)

    @staticmethod
    @quiet
    def max(a: Any) -> Any:
        return _max_reduce(a, None, None, None, True).reshape(1)

    @staticmethod
    @quiet
    def min(a: Any) -> Any:
        return _min_reduce(a, None, None, None, True).reshape(1)

    @staticmethod
    def index_bounds(a: Any) -> tuple[int, int]:
        if a.size <= _SMALL_BOUNDS:  # a class-label batch: Python's min/max of the list beat two ufunc reductions
            v = a.ravel().tolist()
            return int(min(v)), int(max(v))
        # two passes over the index array (numpy has no fused min/max), no temporaries
        return int(_min_reduce(a, None)), int(_max_reduce(a, None))

    @staticmethod
    @quiet
    def max_dim(a: Any, dim: int) -> Any:
        return _max_reduce(a, dim, None, None, True)

    @staticmethod
    @quiet
    def min_dim(a: Any, dim: int) -> Any:
        return _min_reduce(a, dim, None, None, True)

    @staticmethod
    @quiet
    def max_abs(a: Any) -> Any:
        return _keep(np.max(np.abs(a)), a.dtype)

    @staticmethod
    @quiet
    def max_abs_dim(a: Any, dim: int) -> Any:
        return np.max(np.abs(a), axis=dim, keepdims=True)

    def argmax(self, a: Any, dim: int) -> Any:
        return np.argmax(a, axis=dim, keepdims=True).astype(self._idt, copy=False)  # type: ignore[attr-defined]

    def argmin(self, a: Any, dim: int) -> Any:
        return np.argmin(a, axis=dim, keepdims=True).astype(self._idt, copy=False)  # type: ignore[attr-defined]

    def max_dim_with_indices(self, a: Any, dim: int) -> tuple[Any, Any]:
        idx = self.argmax(a, dim)
        return np.take_along_axis(a, idx, dim), idx

    def min_dim_with_indices(self, a: Any, dim: int) -> tuple[Any, Any]:
        idx = self.argmin(a, dim)
        return np.take_along_axis(a, idx, dim), idx

    @staticmethod
    def any(a: Any) -> Any:
        return np.any(a).reshape(1)

    @staticmethod
    def all(a: Any) -> Any:
        return np.all(a).reshape(1)

    @staticmethod
    def any_dim(a: Any, dim: int) -> Any:
        return np.any(a, axis=dim, keepdims=True)

    @staticmethod
    def all_dim(a: Any, dim: int) -> Any:
        return np.all(a, axis=dim, keepdims=True)

    # ---- scans
    @staticmethod
    @quiet
    def cumsum(a: Any, dim: int) -> Any:
        return _cast(np.cumsum(a, axis=dim, dtype=_acc(a.dtype)), a.dtype)

    @staticmethod
    @quiet
    def cumprod(a: Any, dim: int) -> Any:
        return _cast(np.cumprod(a, axis=dim, dtype=_acc(a.dtype)), a.dtype)

    @staticmethod
    @quiet
    def cummax(a: Any, dim: int) -> Any:
        return np.maximum.accumulate(a, axis=dim)

    @staticmethod
    @quiet
    def cummin(a: Any, dim: int) -> Any:
        return np.minimum.accumulate(a, axis=dim)

    # ---- sorting (stable; numpy already sorts NaN last)
    def argsort(self, a: Any, dim: int, descending: bool) -> Any:
        if not descending:
            idx = np.argsort(a, axis=dim, kind="stable")
        else:
            # stable descending without negating (no int overflow, NaN first): sort the reversed
            # array ascending, reverse the order, and map positions back to the original axis
            idx = np.flip(np.argsort(np.flip(a, dim), axis=dim, kind="stable"), dim)
            idx = (a.shape[dim] - 1) - idx
        return idx.astype(self._idt, copy=False)  # type: ignore[attr-defined]

    def sort(self, a: Any, dim: int, descending: bool) -> Any:
        if not descending:
            return np.sort(a, axis=dim, kind="stable")
        return np.take_along_axis(a, self.argsort(a, dim, True), dim)

    def sort_with_indices(self, a: Any, dim: int, descending: bool) -> tuple[Any, Any]:
        idx = self.argsort(a, dim, descending)
        return np.take_along_axis(a, idx, dim), idx

    def topk(self, a: Any, dim: int, k: int) -> tuple[Any, Any]:
        idx = self.argsort(a, dim, True)
        idx = idx[(slice(None),) * dim + (slice(0, k),)]
        return np.take_along_axis(a, idx, dim), idx

    def median(self, a: Any, dim: int) -> tuple[Any, Any]:
        n = a.shape[dim]
        idx = np.argsort(a, axis=dim, kind="stable")  # NaN last, in index order
        if a.dtype.kind == "f":
            nans = np.count_nonzero(np.isnan(a), axis=dim, keepdims=True)
            pos = np.where(nans > 0, n - nans, (n - 1) // 2)  # first NaN, else the lower middle
        else:
            pos = np.full(a.shape[:dim] + (1,) + a.shape[dim + 1 :], (n - 1) // 2)
        mi = np.take_along_axis(idx, pos, dim)
        return np.take_along_axis(a, mi, dim), mi.astype(self._idt, copy=False)  # type: ignore[attr-defined]

    # ---- linear algebra
    @staticmethod
    def matmul(a: Any, b: Any) -> Any:
        if a.dtype is _F16:
            a, b = a.astype(_F32), b.astype(_F32)
            return call(_matmul, a, b).astype(_F16)
        try:  # in the quiet context (_quiet.run): np.matmul called from C, no set/reset of the error state
            return run(_matmul, a, b)
        except RuntimeError:
            return call(_matmul, a, b)


def _mean(a: Any, dim: int | None, n: int) -> Any:
    """Float: accumulated sum / n (NaN when n == 0). Int: floor(int64 sum / n) (0 when n == 0).
    Computed by hand: ``np.mean`` warns on empty input. ``dim`` None: shape ``(1,)``. Call under
    :func:`quiet`."""
    dt = a.dtype
    if dt.kind == "f":
        if dt is _F16:
            s = _add_reduce(a, dim, _F32, None, True)
            s /= n
            s = s.astype(_F16)
        else:
            # not ``s /= n``: in place, a ufunc with a Python scalar operand takes a slower path (1.2 µs against
            # 0.6 µs on a 1-element array); s is the reduced array, so the new one is small
            s = _true_divide(_add_reduce(a, dim, dt, None, True), n)
    else:
        s = np.floor_divide(_add_reduce(a, dim, _I64, None, True), n).astype(_I64 if dt.kind == "b" else dt,
                                                                            copy=False)
    return s if dim is not None else s.reshape(1)
