"""The quantization primitives in numpy (formulas: :class:`ember.backend.contract.QuantOps`).

``quantize`` / ``dequantize`` are one pass of in-place ufuncs each (``np.rint`` rounds half to even, as ONNX's
``QuantizeLinear``). ``int_matmul`` has no integer BLAS to call in numpy (``np.matmul`` on int32 is a plain loop,
about 3x slower than float32 BLAS), so it multiplies the int8 values in float BLAS, which is exact here: every
product and partial sum is an integer of magnitude at most ``k * 128 * 128``, exact in float32 up to ``2**24``
(``k <= 1024``) and in float64 beyond (``k < 2**39``); the result is cast back to int32.

``quantized_conv2d`` is the dequantize fallback in cost: the integers ``x - zx`` and ``w`` convolve in float32
(float64 for a float64 result) with the backend's im2col + BLAS convolution, then the rescale. It is not exact
once a window holds more than 16,777,216 / (255 * 128) = 514 products (ResNet's 3x3 convolutions of 64 channels and
up): the int32 accumulator is then rounded as float32 rounds a float convolution's sums (relative error about
1e-7 * sqrt(k)). The exact alternative, float64 BLAS, measured 2x to 5x slower than float32 here (8 x 64 x 16 x 16
and 8 x 256 x 4 x 4 inputs, 3x3 kernels), and numpy has no int8 product, so no int8 path pays on numpy.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember import DType
from ember.backend.contract import QuantOps

__all__ = ["NumpyQuantOps"]

#: the largest reduction length whose int8 products and sums stay exact in float32 (2**24 / 2**14)
F32_EXACT_K = 1024


def _ct(dt: np.dtype) -> type:
    return np.float64 if dt == np.float64 else np.float32


class NumpyQuantOps(QuantOps):
    @staticmethod
    def quantize(x: Any, scale: Any, zero_point: Any, qmin: int, qmax: int, dtype: DType) -> Any:
        ct = _ct(x.dtype)
        v = np.divide(x, scale, dtype=ct)
        np.rint(v, out=v)
        if zero_point is not None:
            np.add(v, zero_point, out=v, casting="unsafe")
        np.clip(v, qmin, qmax, out=v)
        return v.astype(dtype.to_numpy())

    @staticmethod
    def dequantize(q: Any, scale: Any, zero_point: Any, dtype: DType) -> Any:
        nd = dtype.to_numpy()
        v = q.astype(_ct(nd))
        if zero_point is not None:
            np.subtract(v, zero_point, out=v, casting="unsafe")
        np.multiply(v, scale, out=v, casting="unsafe")
        return v if v.dtype == nd else v.astype(nd)

    def quantized_conv2d(self, x: Any, x_scale: Any, x_zero_point: Any, weight: Any, weight_scale: Any, bias: Any,
                         stride: tuple[int, int], padding: tuple[int, int], dilation: tuple[int, int], groups: int,
                         dtype: DType, out_scale: Any = None, out_zero_point: Any = None,
                         cache: dict[Any, Any] | None = None) -> Any:
        ct = DType.FLOAT64 if dtype is DType.FLOAT64 else DType.FLOAT32
        return self._qconv2d_in_float(x, x_scale, x_zero_point, weight, weight_scale, bias, stride, padding,
                                      dilation, groups, dtype, out_scale, out_zero_point, ct)

    @staticmethod
    def int_matmul(a: Any, b: Any) -> Any:
        ft = np.float32 if a.shape[-1] <= F32_EXACT_K else np.float64
        return np.matmul(a.astype(ft), b.astype(ft)).astype(np.int32)
