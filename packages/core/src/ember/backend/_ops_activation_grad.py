"""Backward primitives of the activations (issue 22): the gradient of ``relu``, ``sigmoid``, ``tanh``, ``gelu``,
``softmax`` and ``log_softmax`` as one call each, so that a backend with fused backward kernels (torch:
``threshold_backward``, ``sigmoid_backward``, ``tanh_backward``, ``gelu_backward``, ``_softmax_backward_data``,
``_log_softmax_backward_data``) runs one kernel where the composite runs two to eight. ``Autodiff``'s rules for
these activations call them.

``grad`` is the gradient of the activation's output; ``y`` its output, ``x`` its input (the derivatives are
written with whichever the formula needs). The defaults are composites of the element-wise primitives; formulas:
the derivatives of PyTorch's documented definitions.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["ActivationGradOps"]

_INV_SQRT_2 = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


class ActivationGradOps:
    """Gradients of the fused activations.

    The defaults call primitives of the other op groups through ``B = self`` typed ``Any`` (the mixin only ever
    runs as part of a :class:`~ember.backend.Backend`).
    """

    def relu_backward(self, grad: Any, y: Any) -> Any:
        """``grad`` where ``y = relu(x) > 0``, else 0."""
        B: Any = self
        return B.mask_fill(grad, B.lower_equal(y, 0.0), 0.0)

    def sigmoid_backward(self, grad: Any, y: Any) -> Any:
        """``grad * y (1 - y)`` with ``y = sigmoid(x)``."""
        B: Any = self
        return B.mul(grad, B.mul(y, B.neg(B.sub(y, 1.0))))

    def tanh_backward(self, grad: Any, y: Any) -> Any:
        """``grad * (1 - y^2)`` with ``y = tanh(x)``."""
        B: Any = self
        return B.mul(grad, B.neg(B.sub(B.mul(y, y), 1.0)))

    def gelu_backward(self, grad: Any, x: Any, approximate: bool = False) -> Any:
        """``grad * gelu'(x)``: exact ``Phi(x) + x phi(x)``; with ``approximate`` the derivative of the tanh form
        ``(1 + t) / 2 + x / 2 (1 - t^2) c (1 + 3 k x^2)``, ``t = tanh(c (x + k x^3))``, ``c = sqrt(2/pi)``,
        ``k = 0.044715``."""
        B: Any = self
        if approximate:
            k = 0.044715
            x2 = B.mul(x, x)
            t = B.tanh(B.mul(B.add(x, B.mul(B.mul(x2, x), k)), _SQRT_2_OVER_PI))
            left = B.mul(B.add(t, 1.0), 0.5)
            sech2 = B.neg(B.sub(B.mul(t, t), 1.0))
            right = B.mul(B.mul(B.mul(x, 0.5), sech2), B.mul(B.add(B.mul(x2, 3.0 * k), 1.0), _SQRT_2_OVER_PI))
            return B.mul(grad, B.add(left, right))
        cdf = B.mul(B.add(B.erf(B.mul(x, _INV_SQRT_2)), 1.0), 0.5)
        pdf = B.mul(B.exp(B.mul(B.mul(x, x), -0.5)), _INV_SQRT_2PI)
        return B.mul(grad, B.add(cdf, B.mul(x, pdf)))

    def softmax_backward(self, grad: Any, y: Any, dim: int) -> Any:
        """``y (grad - sum(grad y))`` along ``dim``, ``y = softmax(x, dim)``."""
        B: Any = self
        gy = B.mul(grad, y)
        return B.sub(gy, B.mul(y, B.sum_dim(gy, dim)))

    def log_softmax_backward(self, grad: Any, y: Any, dim: int) -> Any:
        """``grad - exp(y) sum(grad)`` along ``dim``, ``y = log_softmax(x, dim)``."""
        B: Any = self
        return B.sub(grad, B.mul(B.exp(y), B.sum_dim(grad, dim)))
