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
- ``int_matmul``: the exact int32 product of int8 matrices.

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
    """The quantization primitives: :meth:`quantize`, :meth:`dequantize`, :meth:`int_matmul`."""

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
