"""RMSProp (Hinton, Coursera lecture 6e; centered: Graves, 2013), Burn's ``RmsProp``."""

from __future__ import annotations

from dataclasses import dataclass

from ..config import config
from ..tensor import Tensor
from ._base import Optimizer, SimpleOptimizer, State, init_optimizer
from ._clipping import GradientClippingConfig
from ._decay import WeightDecayConfig, weight_decay
from ._scalar import Scalar

__all__ = ["RmsPropConfig", "RmsProp"]


@dataclass(frozen=True)
class RmsProp(SimpleOptimizer):
    """RMSProp's rule; see :class:`RmsPropConfig`."""

    alpha: float
    momentum: float
    epsilon: float
    centered: bool
    weight_decay: WeightDecayConfig | None
    name = "rmsprop"

    def step(self, lr: Scalar, tensor: Tensor, grad: Tensor, state: State | None) -> tuple[Tensor, State | None]:
        a = self.alpha
        grad = weight_decay(self.weight_decay, grad, tensor)
        g2 = grad.square().mul_scalar(1.0 - a)
        square_avg = g2 if state is None else state["square_avg"].mul_scalar(a).add(g2)
        new: State = {"square_avg": square_avg}
        avg = square_avg
        if self.centered:
            g1 = grad.mul_scalar(1.0 - a)
            prev = None if state is None else state.get("grad_avg")
            grad_avg = g1 if prev is None else prev.mul_scalar(a).add(g1)
            new["grad_avg"] = grad_avg
            avg = square_avg.sub(grad_avg.square())
        direction = grad.div(avg.sqrt().add_scalar(self.epsilon))
        if self.momentum > 0.0:
            prev_buf = None if state is None else state.get("momentum")
            direction = direction if prev_buf is None else prev_buf.mul_scalar(self.momentum).add(direction)
            new["momentum"] = direction
        return tensor.sub(direction.mul_scalar(lr)), new

    def init_state(self, tensor: Tensor) -> State:
        """Zero averages (and a zero momentum buffer when ``momentum > 0``), one array each: the first step then
        gives the stateless one's values, bit for bit (``0 * alpha + x == x``)."""
        state: State = {"square_avg": tensor.zeros_like()}
        if self.centered:
            state["grad_avg"] = tensor.zeros_like()
        if self.momentum > 0.0:
            state["momentum"] = tensor.zeros_like()
        return state


@config
class RmsPropConfig:
    """RMSProp optimizer (Burn's ``RmsPropConfig``; Hinton's lecture 6e, centered variant of Graves 2013)::

        g = grad + penalty * param                       (weight_decay)
        s = alpha s + (1 - alpha) g^2                    (zero-initialized)
        centered: a = alpha a + (1 - alpha) g;  d = sqrt(s - a^2) + epsilon;  else d = sqrt(s) + epsilon
        momentum > 0: b = momentum b + g / d;  param -= lr b;  else param -= lr g / d

    equal to ``torch.optim.RMSprop(alpha=alpha, eps=epsilon, momentum=momentum, centered=centered)``.

    Args:
        alpha: smoothing constant (0.99).
        momentum: momentum factor (Burn's default **0.9**; PyTorch's is 0).
        epsilon: denominator term (Burn: 1e-5; PyTorch: 1e-8).
        centered: normalize by an estimate of the gradient's variance (default False).
        weight_decay: optional :class:`WeightDecayConfig`.
        grad_clipping: optional :class:`GradientClippingConfig`.
        nan_check: raise :class:`~ember.optim.OptimizerError` on a NaN gradient.
    """

    alpha: float = 0.99
    momentum: float = 0.9
    epsilon: float = 1e-5
    centered: bool = False
    weight_decay: WeightDecayConfig | None = None
    grad_clipping: GradientClippingConfig | None = None
    nan_check: bool = False

    def init(self) -> Optimizer:
        """The optimizer (state empty)."""
        return init_optimizer(self, self.build())

    def build(self) -> RmsProp:
        """The bare per-tensor rule."""
        return RmsProp(self.alpha, self.momentum, self.epsilon, self.centered, self.weight_decay)
