"""Numeric primitives of the numpy backend."""

from __future__ import annotations

from typing import Any

import numpy as np


def _keep(r: Any) -> Any:
    return np.asarray(r).reshape(1)


class NumpyNumericOps:
    # element-wise: numpy ufuncs take arrays or Python scalars (NEP 50 keeps the array's dtype)
    add = staticmethod(np.add)
    sub = staticmethod(np.subtract)
    mul = staticmethod(np.multiply)
    div = staticmethod(np.true_divide)
    remainder = staticmethod(np.remainder)
    fmod = staticmethod(np.fmod)
    maximum = staticmethod(np.maximum)
    minimum = staticmethod(np.minimum)
    neg = staticmethod(np.negative)
    abs = staticmethod(np.abs)
    sign = staticmethod(np.sign)
    equal = staticmethod(np.equal)
    not_equal = staticmethod(np.not_equal)
    greater = staticmethod(np.greater)
    greater_equal = staticmethod(np.greater_equal)
    lower = staticmethod(np.less)
    lower_equal = staticmethod(np.less_equal)
    matmul = staticmethod(np.matmul)

    @staticmethod
    def int_div(a: Any, b: Any) -> Any:
        with np.errstate(divide="ignore"):
            return np.floor_divide(a, b)

    @staticmethod
    def powf(a: Any, b: Any) -> Any:
        with np.errstate(invalid="ignore", divide="ignore"):
            r = np.power(a, b)
        return r.astype(a.dtype, copy=False) if hasattr(r, "astype") and hasattr(a, "dtype") else r

    def powi(self, a: Any, b: Any) -> Any:
        if a.dtype.kind in "iu":
            bb = np.asarray(b)
            if (bb < 0).any():
                # integer base to a negative power: 1, -1 or 0 by truncation (torch's rule)
                with np.errstate(divide="ignore", invalid="ignore"):
                    f = np.power(a.astype(np.float64), bb.astype(np.float64))
                return np.trunc(f).astype(a.dtype)
            return np.power(a, bb.astype(a.dtype))
        return np.power(a, np.asarray(b).astype(a.dtype)).astype(a.dtype, copy=False)

    def clamp(self, a: Any, lo: Any, hi: Any) -> Any:
        return np.clip(a, lo, hi)

    # reductions: whole-tensor ones give shape (1,)
    def sum(self, a: Any) -> Any:
        return _keep(np.sum(a, dtype=a.dtype if a.dtype.kind != "b" else self._idt))

    def sum_dim(self, a: Any, dim: int) -> Any:
        return np.sum(a, axis=dim, keepdims=True, dtype=a.dtype if a.dtype.kind != "b" else self._idt)

    def mean(self, a: Any) -> Any:
        return _keep(np.mean(a, dtype=a.dtype) if a.size else np.array(np.nan, a.dtype))

    def mean_dim(self, a: Any, dim: int) -> Any:
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.mean(a, axis=dim, keepdims=True, dtype=a.dtype)

    def prod(self, a: Any) -> Any:
        return _keep(np.prod(a, dtype=a.dtype))

    def prod_dim(self, a: Any, dim: int) -> Any:
        return np.prod(a, axis=dim, keepdims=True, dtype=a.dtype)

    def max(self, a: Any) -> Any:
        return _keep(np.max(a))

    def min(self, a: Any) -> Any:
        return _keep(np.min(a))

    def max_dim(self, a: Any, dim: int) -> Any:
        return np.max(a, axis=dim, keepdims=True)

    def min_dim(self, a: Any, dim: int) -> Any:
        return np.min(a, axis=dim, keepdims=True)

    def argmax(self, a: Any, dim: int) -> Any:
        return np.argmax(a, axis=dim, keepdims=True).astype(self._idt, copy=False)

    def argmin(self, a: Any, dim: int) -> Any:
        return np.argmin(a, axis=dim, keepdims=True).astype(self._idt, copy=False)

    def any(self, a: Any) -> Any:
        return _keep(np.any(a))

    def all(self, a: Any) -> Any:
        return _keep(np.all(a))

    def any_dim(self, a: Any, dim: int) -> Any:
        return np.any(a, axis=dim, keepdims=True)

    def all_dim(self, a: Any, dim: int) -> Any:
        return np.all(a, axis=dim, keepdims=True)

    def cumsum(self, a: Any, dim: int) -> Any:
        return np.cumsum(a, axis=dim, dtype=a.dtype)

    def cumprod(self, a: Any, dim: int) -> Any:
        return np.cumprod(a, axis=dim, dtype=a.dtype)

    def cummax(self, a: Any, dim: int) -> Any:
        return np.maximum.accumulate(a, axis=dim)

    def cummin(self, a: Any, dim: int) -> Any:
        return np.minimum.accumulate(a, axis=dim)

    def argsort(self, a: Any, dim: int, descending: bool) -> Any:
        if descending:
            # stable descending: sort the negated order keys; NaN first as torch does
            if a.dtype.kind == "f":
                key = np.where(np.isnan(a), -np.inf, -a.astype(np.float64))
                idx = np.argsort(key, axis=dim, kind="stable")
                nan_first = np.argsort(~np.isnan(np.take_along_axis(a, idx, dim)), axis=dim, kind="stable")
                idx = np.take_along_axis(idx, nan_first, dim)
            elif a.dtype.kind == "b":
                idx = np.argsort(~a, axis=dim, kind="stable")
            else:
                idx = np.argsort(-a.astype(np.int64) if a.dtype.kind == "u" else np.negative(a, dtype=np.int64), axis=dim, kind="stable")
        else:
            idx = np.argsort(a, axis=dim, kind="stable")
        return idx.astype(self._idt, copy=False)

    def sort(self, a: Any, dim: int, descending: bool) -> Any:
        if not descending:
            return np.sort(a, axis=dim, kind="stable")
        return np.take_along_axis(a, self.argsort(a, dim, True), dim)
