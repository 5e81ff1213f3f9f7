"""Fused activation kernels of the numpy backend (numerically stable forms, no warnings).

float16 inputs are computed in float32 and rounded back once, as numpy does for its own float16
math; results keep the input dtype.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ._float import _work, erfc

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_INV_SQRT_2 = 1.0 / math.sqrt(2.0)


class NumpyActivationOps:
    @staticmethod
    def relu(a: Any) -> Any:
        # np.maximum propagates NaN, as torch.relu does
        return np.maximum(a, 0)

    @staticmethod
    def sigmoid(a: Any) -> Any:
        w = _work(a)
        with np.errstate(all="ignore"):
            e = np.exp(-np.abs(w))  # in (0, 1]: never overflows
            r = np.where(w >= 0, 1.0, e) / (1.0 + e)
        return r.astype(a.dtype, copy=False)

    @staticmethod
    def log_sigmoid(a: Any) -> Any:
        w = _work(a)
        with np.errstate(all="ignore"):
            r = np.minimum(w, 0) - np.log1p(np.exp(-np.abs(w)))
        return r.astype(a.dtype, copy=False)

    @staticmethod
    def gelu(a: Any, approximate: bool = False) -> Any:
        with np.errstate(all="ignore"):
            if approximate:
                w = _work(a)
                r = 0.5 * w * (1.0 + np.tanh(_SQRT_2_OVER_PI * (w + 0.044715 * w * w * w)))
            else:
                # x * Phi(x) = x/2 * erfc(-x/sqrt(2)): no cancellation for very negative x
                w = np.asarray(a, dtype=np.float64)
                r = 0.5 * w * erfc(-w * _INV_SQRT_2)
        return r.astype(a.dtype, copy=False)

    @staticmethod
    def softmax(a: Any, dim: int) -> Any:
        w = _work(a)
        with np.errstate(all="ignore"):
            e = np.exp(w - np.max(w, axis=dim, keepdims=True))
            r = e / np.sum(e, axis=dim, keepdims=True)
        return r.astype(a.dtype, copy=False)

    @staticmethod
    def log_softmax(a: Any, dim: int) -> Any:
        w = _work(a)
        with np.errstate(all="ignore"):
            s = w - np.max(w, axis=dim, keepdims=True)
            r = s - np.log(np.sum(np.exp(s), axis=dim, keepdims=True))
        return r.astype(a.dtype, copy=False)
