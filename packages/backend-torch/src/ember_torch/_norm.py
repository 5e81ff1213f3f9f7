"""Normalization primitives on torch's native kernels (issue 22): ``torch.native_batch_norm`` /
``native_layer_norm`` / ``native_group_norm`` and their backwards, the kernels ``torch.nn.functional`` runs, and
``torch.ops.aten._fused_rms_norm`` (``F.rms_norm``'s). float16 and bfloat16 inputs go to the contract's composites
(the native kernels keep float32 statistics for them, where the contract gives statistics of the input's dtype).

torch 2.13 has ``_fused_rms_norm_backward`` on CUDA only (no CPU kernel: ``F.rms_norm``'s autograd falls back to a
composite there), so :meth:`TorchNormOps.rms_norm_backward` runs it on CUDA tensors and the contract's composite
elsewhere."""

from __future__ import annotations

import math
from typing import Any

import torch

from ember.backend.contract import NormOps

__all__ = ["TorchNormOps"]

_NATIVE = (torch.float32, torch.float64)
_ALL = [True, True, True]
_aten: Any = torch.ops.aten  # the backward kernels are not in torch's namespace


class TorchNormOps(NormOps):
    """Native batch, layer, group and RMS normalization, forward and backward (RMS backward on CUDA only)."""

    def batch_norm(self, x: Any, gamma: Any, beta: Any, epsilon: float) -> tuple[Any, Any, Any]:
        if x.dtype not in _NATIVE:
            return super().batch_norm(x, gamma, beta, epsilon)
        return torch.native_batch_norm(x, gamma, beta, None, None, True, 0.0, epsilon)  # type: ignore[no-any-return]

    def batch_norm_backward(self, grad: Any, x: Any, gamma: Any, mean: Any, invstd: Any,
                            epsilon: float) -> tuple[Any, Any, Any]:
        if x.dtype not in _NATIVE:
            return super().batch_norm_backward(grad, x, gamma, mean, invstd, epsilon)
        return _aten.native_batch_norm_backward(  # type: ignore[no-any-return]
            grad.contiguous(), x, gamma, None, None, mean, invstd, True, epsilon, _ALL)

    def batch_norm_running(self, running_mean: Any, running_var: Any, mean: Any, invstd: Any, momentum: float,
                           epsilon: float) -> tuple[Any, Any]:
        # three kernels instead of the default's nine: (1 - m) r + m b as r + m (b - r), both statistics in one
        # _foreach_lerp (the form torch.optim's Adam uses; agrees with the default to float rounding)
        var = invstd.pow(-2.0).sub_(epsilon)
        new_mean, new_var = torch._foreach_lerp([running_mean, running_var], [mean, var], momentum)
        return new_mean, new_var

    def layer_norm(self, x: Any, gamma: Any, beta: Any, epsilon: float) -> tuple[Any, Any, Any]:
        if x.dtype not in _NATIVE:
            return super().layer_norm(x, gamma, beta, epsilon)
        return torch.native_layer_norm(x, [x.shape[-1]], gamma, beta, epsilon)  # type: ignore[no-any-return]

    def layer_norm_backward(self, grad: Any, x: Any, gamma: Any, mean: Any, rstd: Any,
                            epsilon: float) -> tuple[Any, Any, Any]:
        if x.dtype not in _NATIVE:
            return super().layer_norm_backward(grad, x, gamma, mean, rstd, epsilon)
        # the bias argument only gives grad_beta its shape and dtype: gamma's are the same
        return _aten.native_layer_norm_backward(  # type: ignore[no-any-return]
            grad.contiguous(), x, [x.shape[-1]], mean, rstd, gamma, gamma, _ALL)

    def group_norm(self, x: Any, gamma: Any, beta: Any, num_groups: int,
                   epsilon: float) -> tuple[Any, Any, Any]:
        if x.dtype not in _NATIVE:
            return super().group_norm(x, gamma, beta, num_groups, epsilon)
        n, c = x.shape[:2]
        return torch.native_group_norm(  # type: ignore[no-any-return]
            x, gamma, beta, n, c, math.prod(x.shape[2:]), num_groups, epsilon)

    def group_norm_backward(self, grad: Any, x: Any, gamma: Any, mean: Any, rstd: Any, num_groups: int,
                            epsilon: float) -> tuple[Any, Any, Any]:
        if x.dtype not in _NATIVE:
            return super().group_norm_backward(grad, x, gamma, mean, rstd, num_groups, epsilon)
        n, c = x.shape[:2]
        return _aten.native_group_norm_backward(  # type: ignore[no-any-return]
            grad.contiguous(), x.contiguous(), mean, rstd, gamma, n, c, math.prod(x.shape[2:]), num_groups, _ALL)

    def rms_norm(self, x: Any, gamma: Any, epsilon: float) -> tuple[Any, Any]:
        if x.dtype not in _NATIVE:
            return super().rms_norm(x, gamma, epsilon)
        return _aten._fused_rms_norm(x, [x.shape[-1]], gamma, epsilon)  # type: ignore[no-any-return]

    def rms_norm_backward(self, grad: Any, x: Any, gamma: Any, rstd: Any, epsilon: float) -> tuple[Any, Any]:
        if x.dtype not in _NATIVE or not x.is_cuda:
            return super().rms_norm_backward(grad, x, gamma, rstd, epsilon)
        return _aten._fused_rms_norm_backward(  # type: ignore[no-any-return]
            grad.contiguous(), x, [x.shape[-1]], rstd, gamma, _ALL[:2])
