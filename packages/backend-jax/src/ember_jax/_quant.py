"""The quantization primitives as compiled jax kernels (formulas: :class:`ember.backend.contract.QuantOps`).

``int_matmul`` is an integer dot with an int32 result, exact. ``quantize`` / ``dequantize`` are one fused kernel
each (``jnp.round`` rounds half to even); inside ``ember_jax.jit`` they fuse with their neighbours.
``quantized_conv2d`` is an integer convolution with an int32 accumulator, the input padded with its zero point
beforehand and ``zx * sum(w[o])`` subtracted after (``sum((x - zx) * w) = sum(x * w) - zx * sum(w)`` over every
window, padding included), then the rescale, bias and optional requantization in the same compiled kernel.

**Per platform** (:func:`jax.lax.platform_dependent`, chosen when the kernel is lowered for its device): on the CPU
XLA's int8 dot and int8 convolution (``preferred_element_type=int32``). On other platforms the operands are widened
to int32 first and the convolution is an im2col (the kernel's strided windows stacked by slicing) times the weights
as an int32 dot: XLA on NVIDIA GPUs (jax 0.11, H200) lowers an int8 convolution with an int32 result to no cuDNN
idiom (``UNIMPLEMENTED: Can't lower one or more integer convolutions``) and its int8 dot returned twice the true
products for a batched ``(3, 5, 37) @ (37, 4)``; a float convolution is no substitute (cuDNN may pick Winograd or
FFT algorithms, which do not sum integers exactly).
"""

from __future__ import annotations

from functools import partial
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


def _matmul_int8(a: Any, b: Any) -> Any:
    return jnp.matmul(a.astype(jnp.int8), b.astype(jnp.int8), preferred_element_type=jnp.int32)


def _matmul_int32(a: Any, b: Any) -> Any:
    return jnp.matmul(a.astype(jnp.int32), b.astype(jnp.int32), preferred_element_type=jnp.int32)


@kernel()
def _int_matmul(a: Any, b: Any) -> Any:
    return lax.platform_dependent(a, b, cpu=_matmul_int8, default=_matmul_int32)


def _conv_int8(x8: Any, w8: Any, stride: tuple[int, int], dilation: tuple[int, int], groups: int) -> Any:
    """XLA's int8 convolution with an int32 result (VALID padding, NCHW / OIHW)."""
    return lax.conv_general_dilated(x8, w8, stride, "VALID", rhs_dilation=dilation, feature_group_count=groups,
                                    dimension_numbers=("NCHW", "OIHW", "NCHW"), preferred_element_type=jnp.int32)


def _conv_im2col(x8: Any, w8: Any, stride: tuple[int, int], dilation: tuple[int, int], groups: int) -> Any:
    """The same convolution as an int32 dot of the stacked windows (exact, no integer convolution needed).

    ``x8`` (N, C, H, W) already padded, ``w8`` (O, C / groups, kh, kw); result (N, O, Ho, Wo) int32.
    """
    n, c, h, w = x8.shape
    o, cg, kh, kw = w8.shape
    (sh, sw), (dh, dw) = stride, dilation
    ho, wo = (h - dh * (kh - 1) - 1) // sh + 1, (w - dw * (kw - 1) - 1) // sw + 1
    x32 = x8.astype(jnp.int32)
    cols = [lax.slice(x32, (0, 0, i * dh, j * dw), (n, c, i * dh + (ho - 1) * sh + 1, j * dw + (wo - 1) * sw + 1),
                      (1, 1, sh, sw)) for i in range(kh) for j in range(kw)]
    patches = jnp.stack(cols, axis=2).reshape(n, groups, cg * kh * kw, ho * wo)  # (n, g, cg*kh*kw, ho*wo)
    wg = w8.astype(jnp.int32).reshape(groups, o // groups, cg * kh * kw)
    acc = jnp.einsum("gok,ngkp->ngop", wg, patches, preferred_element_type=jnp.int32)
    return acc.reshape(n, o, ho, wo)


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
    conv = partial(_conv_int8, stride=stride, dilation=dilation, groups=groups)
    acc = lax.platform_dependent(x8, w8, cpu=conv, default=partial(_conv_im2col, stride=stride, dilation=dilation,
                                                                   groups=groups))
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
