"""The quantization primitives in torch (formulas: :class:`ember.backend.contract.QuantOps`).

``int_matmul`` runs on ``torch._int_mm`` (int8 x int8 -> int32; oneDNN/fbgemm on CPU, cuBLASLt on CUDA) for 2-D
right operands, the leading dims of the left one folded into its rows; on CUDA ``_int_mm`` needs more than 16 rows
and ``k``, ``n`` multiples of 8. Other shapes (a batched right operand, small CUDA products) multiply the int8
values in float BLAS, exact for these sizes (see :mod:`ember_numpy._quant`), and cast back to int32.
``quantize`` / ``dequantize`` are a few fused element-wise calls (``torch.round`` rounds half to even).
``quantized_conv2d`` is oneDNN's int8 convolution on CPU (see :mod:`ember_torch._quant_conv`).
"""

from __future__ import annotations

from typing import Any

import torch

from ember import DType
from ember.backend.contract import QuantOps

from ._quant_conv import onednn_applies, onednn_qconv2d

__all__ = ["TorchQuantOps"]

F32_EXACT_K = 1024


def to_torch(dtype: DType) -> torch.dtype:
    """The torch dtype of an Ember float or int8 element type (torch names them alike)."""
    return getattr(torch, dtype.value)  # type: ignore[no-any-return]


def _ct(dt: torch.dtype) -> torch.dtype:
    return torch.float64 if dt is torch.float64 else torch.float32


def _int_mm_ok(a: Any, b: Any) -> bool:
    if b.dim() != 2 or a.device != b.device:
        return False
    if a.device.type == "cpu":
        return True
    m = a.numel() // a.shape[-1] if a.shape[-1] else 0
    return a.device.type == "cuda" and m > 16 and a.shape[-1] % 8 == 0 and b.shape[1] % 8 == 0


class TorchQuantOps(QuantOps):
    @staticmethod
    def quantize(x: Any, scale: Any, zero_point: Any, qmin: int, qmax: int, dtype: DType) -> Any:
        ct = _ct(x.dtype)
        v = torch.div(x.to(ct), scale.to(ct))
        v.round_()
        if zero_point is not None:
            v.add_(zero_point)
        v.clamp_(qmin, qmax)
        return v.to(to_torch(dtype))

    @staticmethod
    def dequantize(q: Any, scale: Any, zero_point: Any, dtype: DType) -> Any:
        td = to_torch(dtype)
        v = q.to(_ct(td))
        if zero_point is not None:
            v.sub_(zero_point)
        v.mul_(scale)
        return v if v.dtype is td else v.to(td)

    @staticmethod
    def int_matmul(a: Any, b: Any) -> Any:
        a8, b8 = a.to(torch.int8), b.to(torch.int8)
        if _int_mm_ok(a8, b8):
            lead = a8.shape[:-1]
            out = torch._int_mm(a8.reshape(-1, a8.shape[-1]).contiguous(), b8.contiguous())
            return out.reshape(*lead, b8.shape[1])
        ft = torch.float32 if a.shape[-1] <= F32_EXACT_K else torch.float64
        return torch.matmul(a8.to(ft), b8.to(ft)).to(torch.int32)

    def quantized_conv2d(self, x: Any, x_scale: Any, x_zero_point: Any, weight: Any, weight_scale: Any, bias: Any,
                         stride: tuple[int, int], padding: tuple[int, int], dilation: tuple[int, int], groups: int,
                         dtype: DType, out_scale: Any = None, out_zero_point: Any = None,
                         cache: dict[Any, Any] | None = None) -> Any:
        if onednn_applies(x, None if out_scale is not None else to_torch(dtype)):
            return onednn_qconv2d(x, x_scale, x_zero_point, weight, weight_scale, bias, stride, padding, dilation,
                                  groups, out_scale, out_zero_point, cache)
        return super().quantized_conv2d(x, x_scale, x_zero_point, weight, weight_scale, bias, stride, padding,
                                        dilation, groups, dtype, out_scale, out_zero_point, cache)
