"""Quantization primitives (Burn's ``QTensorOps``): quantize, dequantize and the int8 matrix product.

The core (:mod:`ember.quantization`) checks every argument and shapes the scales before calling: ``scale`` and
``zero_point`` are primitives of the input's rank that broadcast against it (one per tensor, per channel or per
block, reshaped), scales are positive and finite, ``x`` holds no NaN or infinity. The primitives are called on
the plain backend (under ``Autodiff``, the core calls the inner backend's, so they never see a tracked value).

Formulas (ONNX ``QuantizeLinear`` / ``DequantizeLinear``, https://onnx.ai/onnx/operators/onnx__QuantizeLinear.html;
Burn ``burn_tensor::quantization``; PyTorch ``torch.quantize_per_tensor``):

- ``quantize``:   ``q = clamp(round_half_even(x / scale) + zero_point, qmin, qmax)`` (saturating, as ONNX; Burn
  rounds half away from zero, Ember follows ONNX and numpy's ``rint``);
- ``dequantize``: ``x = (q - zero_point) * scale``;
- ``int_matmul``: the exact int32 product of int8 matrices;
- ``quantized_conv2d`` (ONNX ``QLinearConv`` / ``ConvInteger``, https://onnx.ai/onnx/operators/onnx__QLinearConv.html,
  https://onnx.ai/onnx/operators/onnx__ConvInteger.html; PyTorch ``torch.ops.quantized.conv2d``):
  ``acc[n, o] = sum_{c, i, j} (x_pad[n, c, ...] - zx) * w[o, c, i, j]`` in int32, the input padded with its zero
  point (the real value 0), then ``y = sx * sw[o] * acc + bias[o]`` (float), or requantized to int8 as
  ``quantize``: ``clamp(round_half_even(y / sy) + zy, -128, 127)``.

The defaults below are written with other primitives; backends override them with one kernel each.
"""

from __future__ import annotations

from typing import Any

from .._dtype import DType

__all__ = ["QuantOps"]


def _compute_type(dtype: DType) -> DType:
    """float64 stays float64; every other float type computes in float32 (float16 would round ``x / scale``)."""
    return DType.FLOAT64 if dtype is DType.FLOAT64 else DType.FLOAT32


class QuantOps:
    """The quantization primitives: :meth:`quantize`, :meth:`dequantize`, :meth:`int_matmul`,
    :meth:`quantized_conv2d`."""

    def quantize(self, x: Any, scale: Any, zero_point: Any, qmin: int, qmax: int, dtype: DType) -> Any:
        """``clamp(round_half_even(x / scale) + zero_point, qmin, qmax)`` as an Int primitive of ``dtype``.

        Args:
            x: Float primitive, finite values.
            scale: Float primitive broadcasting against ``x`` (same rank), positive.
            zero_point: Int primitive shaped as ``scale``, or ``None`` (zero).
            qmin: the smallest integer, e.g. ``-128``.
            qmax: the largest integer, e.g. ``127``.
            dtype: the result's element type (``INT8``).

        The division runs in float32 (float64 for float64 input), so results match a float64 reference except
        where ``x / scale`` lies within float32 rounding of a half-integer.
        """
        ct = _compute_type(self.dtype(x))  # type: ignore[attr-defined]
        v = self.div(self.cast(x, ct), self.cast(scale, ct))  # type: ignore[attr-defined]
        v = self.round(v)  # type: ignore[attr-defined]
        if zero_point is not None:
            v = self.add(v, self.cast(zero_point, ct))  # type: ignore[attr-defined]
        v = self.clamp(v, float(qmin), float(qmax))  # type: ignore[attr-defined]
        return self.cast(v, dtype)  # type: ignore[attr-defined]

    def dequantize(self, q: Any, scale: Any, zero_point: Any, dtype: DType) -> Any:
        """``(q - zero_point) * scale`` as a Float primitive of ``dtype`` (computed in float32, or float64 for a
        float64 result).

        Args:
            q: Int primitive (int8) of integer values.
            scale: Float primitive broadcasting against ``q`` (same rank).
            zero_point: Int primitive shaped as ``scale``, or ``None``.
            dtype: the result's float type (the backend's ``float_dtype``).
        """
        ct = _compute_type(dtype)
        v = self.cast(q, ct)  # type: ignore[attr-defined]
        if zero_point is not None:
            v = self.sub(v, self.cast(zero_point, ct))  # type: ignore[attr-defined]
        v = self.mul(v, self.cast(scale, ct))  # type: ignore[attr-defined]
        return v if ct is dtype else self.cast(v, dtype)  # type: ignore[attr-defined]

    def int_matmul(self, a: Any, b: Any) -> Any:
        """The matrix product of int8 primitives over the last two dims, accumulated exactly in int32
        (``[..., m, k] x [..., k, n] -> [..., m, n]``, leading dims broadcast as ``matmul``). Exact while
        ``k * 128 * 128 < 2**31`` (``k`` below 131,072; the core checks it).

        The default casts to int32 and calls :meth:`matmul`; backends route it to the library's int8 kernel
        (torch ``_int_mm``, XLA's ``dot_general`` with an int32 result) or to a float64 BLAS product, which is
        exact for these sizes.
        """
        return self.matmul(self.cast(a, DType.INT32), self.cast(b, DType.INT32))  # type: ignore[attr-defined]

    def quantized_conv2d(self, x: Any, x_scale: Any, x_zero_point: Any, weight: Any, weight_scale: Any, bias: Any,
                         stride: tuple[int, int], padding: tuple[int, int], dilation: tuple[int, int], groups: int,
                         dtype: DType, out_scale: Any = None, out_zero_point: Any = None,
                         cache: dict[Any, Any] | None = None) -> Any:
        """The int8 convolution (cross-correlation) of ONNX ``QLinearConv`` (``ConvInteger`` then the rescale).

        Args:
            x: int8 primitive ``[batch, channels_in, height, width]``, quantized per tensor (affine or symmetric).
            x_scale: float32 primitive ``[1]``, positive: the input's scale.
            x_zero_point: int8 primitive ``[1]`` or ``None`` (symmetric input, zero point 0).
            weight: int8 primitive ``[channels_out, channels_in / groups, kernel_h, kernel_w]``, symmetric (no zero
                point), values in ``[-127, 127]`` (``[-128, 127]`` is exact too).
            weight_scale: float32 primitive ``[channels_out]`` (per output channel; a per-tensor scale repeated).
            bias: float primitive ``[channels_out]`` or ``None``.
            stride: two ints.
            padding: two ints, added on both sides with the input's zero point (the real value 0, as ONNX and
                PyTorch pad quantized convolutions).
            dilation: two ints.
            groups: an int dividing both channel counts.
            dtype: the float type of the result (the backend's ``float_dtype``; also the type the rescale
                computes in, float32 for float16/bfloat16).
            out_scale: ``None`` for a float result; a float32 ``[1]`` scale for an int8 result requantized as
                :meth:`quantize` (range ``[-128, 127]``).
            out_zero_point: with ``out_scale``, an int8 ``[1]`` zero point, or ``None`` (zero).
            cache: a dict the caller keeps with ``weight`` (the same values, scales, bias and options on every
                call), where a backend may keep its prepacked form of the weight; ``None`` packs per call.

        Returns:
            ``[batch, channels_out, h_out, w_out]``, float ``dtype`` or int8;
            ``h_out = (height + 2 * padding[0] - dilation[0] * (kernel_h - 1) - 1) // stride[0] + 1``.

        The default is the documented fallback: the integers ``x - zx`` and ``w`` convolve in float with
        :meth:`conv2d`, float32 while ``channels_in / groups * kernel_h * kernel_w * 255 * 128 <= 2**24`` (every
        partial sum an exact float32 integer) and float64 beyond, so the accumulator is exact either way (torch on
        CUDA and other backends without an override). Backends route it to an int8 kernel (torch's oneDNN
        ``qconv2d_pointwise``, XLA's integer convolution); numpy keeps float32 throughout, which costs what a float
        convolution does and rounds long windows' sums as float32 does (see :mod:`ember_numpy._quant`).
        """
        w_shape = self.shape(weight)  # type: ignore[attr-defined]
        k = w_shape[1] * w_shape[2] * w_shape[3]
        ct = DType.FLOAT32 if k * 255 * 128 <= 2**24 else DType.FLOAT64
        return self._qconv2d_in_float(x, x_scale, x_zero_point, weight, weight_scale, bias, stride, padding,
                                      dilation, groups, dtype, out_scale, out_zero_point, ct)

    def _qconv2d_in_float(self, x: Any, x_scale: Any, x_zero_point: Any, weight: Any, weight_scale: Any, bias: Any,
                          stride: tuple[int, int], padding: tuple[int, int], dilation: tuple[int, int], groups: int,
                          dtype: DType, out_scale: Any, out_zero_point: Any, ct: DType) -> Any:
        """:meth:`quantized_conv2d` with the integers convolved in float type ``ct`` (see its fallback)."""
        four = (1, 1, 1, 1)
        xv = self.cast(x, ct)  # type: ignore[attr-defined]
        if x_zero_point is not None:
            xv = self.sub(xv, self.reshape(self.cast(x_zero_point, ct), four))  # type: ignore[attr-defined]
        acc = self.conv2d(xv, self.cast(weight, ct), None, stride, padding, dilation, groups)  # type: ignore[attr-defined]
        return self._conv_rescale(acc, x_scale, weight_scale, bias, dtype, out_scale, out_zero_point)

    def _conv_rescale(self, acc: Any, x_scale: Any, weight_scale: Any, bias: Any, dtype: DType, out_scale: Any,
                      out_zero_point: Any) -> Any:
        """``acc * (sx * sw[o]) + bias[o]`` (``acc`` int32 or float ``[n, o, h, w]``) in the compute type of
        ``dtype``, then the float result, or its requantized int8 form."""
        ct = _compute_type(dtype)
        o = self.shape(weight_scale)[0]  # type: ignore[attr-defined]
        s = self.mul(self.cast(weight_scale, ct), self.cast(x_scale, ct))  # type: ignore[attr-defined]
        y = self.mul(self.cast(acc, ct), self.reshape(s, (1, o, 1, 1)))  # type: ignore[attr-defined]
        if bias is not None:
            y = self.add(y, self.reshape(self.cast(bias, ct), (1, o, 1, 1)))  # type: ignore[attr-defined]
        if out_scale is not None:
            four = (1, 1, 1, 1)
            zp = None if out_zero_point is None else self.reshape(out_zero_point, four)  # type: ignore[attr-defined]
            return self.quantize(y, self.reshape(out_scale, four), zp, -128, 127, DType.INT8)  # type: ignore[attr-defined]
        return y if ct is dtype else self.cast(y, dtype)  # type: ignore[attr-defined]
