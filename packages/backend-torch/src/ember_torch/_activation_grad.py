"""Backward primitives of the activations on torch's fused backward kernels (the ones torch.autograd runs):
``threshold_backward``, ``sigmoid_backward``, ``tanh_backward``, ``gelu_backward``, ``_softmax_backward_data``,
``_log_softmax_backward_data``. Formulas: :mod:`ember.backend._ops_activation_grad`."""

from __future__ import annotations

from typing import Any

import torch

from ember.backend.contract import ActivationGradOps

__all__ = ["TorchActivationGradOps"]

_aten: Any = torch.ops.aten


class TorchActivationGradOps(ActivationGradOps):
    """One native kernel per activation gradient."""

    def relu_backward(self, grad: Any, y: Any) -> Any:
        return _aten.threshold_backward(grad, y, 0)

    def sigmoid_backward(self, grad: Any, y: Any) -> Any:
        return _aten.sigmoid_backward(grad, y)

    def tanh_backward(self, grad: Any, y: Any) -> Any:
        return _aten.tanh_backward(grad, y)

    def gelu_backward(self, grad: Any, x: Any, approximate: bool = False) -> Any:
        return _aten.gelu_backward(grad, x, approximate="tanh" if approximate else "none")

    def softmax_backward(self, grad: Any, y: Any, dim: int) -> Any:
        return _aten._softmax_backward_data(grad, y, dim, y.dtype)

    def log_softmax_backward(self, grad: Any, y: Any, dim: int) -> Any:
        return _aten._log_softmax_backward_data(grad, y, dim, y.dtype)
