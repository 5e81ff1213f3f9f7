"""The quantization primitives as compiled jax kernels (formulas: :class:`ember.backend.contract.QuantOps`).

``int_matmul`` is XLA's integer dot with an int32 result (``jnp.matmul(..., preferred_element_type=int32)``,
``lax.dot_general`` underneath), exact. ``quantize`` / ``dequantize`` are one fused kernel each (``jnp.round``
rounds half to even); inside ``ember_jax.jit`` they fuse with their neighbours. ``quantized_conv2d`` is XLA's
integer convolution (``lax.conv_general_dilated`` on int8 with ``preferred_element_type=int32``), the input padded
with its zero point beforehand and ``zx * sum(w[o])`` subtracted after (``sum((x - zx) * w) = sum(x * w) - zx *
sum(w)`` over every window, padding included), then the rescale, bias and optional requantization in the same
compiled kernel.
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
from jax import lax

from ember import DType
from ember.backend.contract import QuantOps

from ._kernel import JNP, kernel

__all__ = ["JaxQuantOps"]


def _ct(dt: Any) -> Any:
    return jnp.float64 if dt == jnp.float64 else jnp.float32


@kernel(3, 4, 5)
def _quantize(x: Any, scale: Any, zero_point: Any, qmin: int, qmax: int, dtype: Any) -> Any:
    ct = _ct(x.dtype)
    v = jnp.round(x.astype(ct) / scale.astype(ct))
    if zero_point is not None:
        v = v + zero_point.astype(ct)
    return jnp.clip(v, qmin, qmax).astype(dtype)


@kernel(3)
def _dequantize(q: Any, scale: Any, zero_point: Any, dtype: Any) -> Any:
    ct = _ct(dtype)
    v = q.astype(ct)
    if zero_point is not None:
        v = v - zero_point.astype(ct)
    return (v * scale.astype(ct)).astype(dtype)


@kernel()
def _int_matmul(a: Any, b: Any) -> Any:
    return jnp.matmul(a.astype(jnp.int8), b.astype(jnp.int8), preferred_element_type=jnp.int32)


@kernel(6, 7, 8, 9, 10)
def _qconv2d(x: Any, x_scale: Any, x_zero_point: Any, weight: Any, weight_scale: Any, bias: Any, stride: Any,
             padding: Any, dilation: Any, groups: int, dtype: Any, out_scale: Any, out_zero_point: Any) -> Any:
    x8, w8 = x.astype(jnp.int8), weight.astype(jnp.int8)
    ph, pw = padding
    if x_zero_point is not None and (ph or pw):
        zx = x_zero_point.astype(jnp.int8).reshape(())
        x8 = jnp.pad(x8, ((0, 0), (0, 0), (ph, ph), (pw, pw)), constant_values=zx)
    elif ph or pw:
        x8 = jnp.pad(x8, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    acc = lax.conv_general_dilated(x8, w8, stride, "VALID", rhs_dilation=dilation, feature_group_count=groups,
                                   dimension_numbers=("NCHW", "OIHW", "NCHW"), preferred_element_type=jnp.int32)
    if x_zero_point is not None:
        wsum = jnp.sum(w8.astype(jnp.int32), axis=(1, 2, 3))
        acc = acc - x_zero_point.astype(jnp.int32).reshape(()) * wsum.reshape(1, -1, 1, 1)
    ct = _ct(dtype)
    y = acc.astype(ct) * (weight_scale.astype(ct) * x_scale.astype(ct).reshape(())).reshape(1, -1, 1, 1)
    if bias is not None:
        y = y + bias.astype(ct).reshape(1, -1, 1, 1)
    if out_scale is None:
        return y.astype(dtype)
    v = jnp.round(y / out_scale.astype(ct).reshape(()))
    if out_zero_point is not None:
        v = v + out_zero_point.astype(ct).reshape(())
    return jnp.clip(v, -128, 127).astype(jnp.int8)


class JaxQuantOps(QuantOps):
    @staticmethod
    def quantize(x: Any, scale: Any, zero_point: Any, qmin: int, qmax: int, dtype: DType) -> Any:
        return _quantize(x, scale, zero_point, qmin, qmax, JNP[dtype])

    @staticmethod
    def dequantize(q: Any, scale: Any, zero_point: Any, dtype: DType) -> Any:
        return _dequantize(q, scale, zero_point, JNP[dtype])

    @staticmethod
    def int_matmul(a: Any, b: Any) -> Any:
        return _int_matmul(a, b)

    @staticmethod
    def quantized_conv2d(x: Any, x_scale: Any, x_zero_point: Any, weight: Any, weight_scale: Any, bias: Any,
                         stride: tuple[int, int], padding: tuple[int, int], dilation: tuple[int, int], groups: int,
                         dtype: DType, out_scale: Any = None, out_zero_point: Any = None,
                         cache: dict[Any, Any] | None = None) -> Any:
        return _qconv2d(x, x_scale, x_zero_point, weight, weight_scale, bias, tuple(stride), tuple(padding),
                        tuple(dilation), groups, JNP[dtype], out_scale, out_zero_point)
