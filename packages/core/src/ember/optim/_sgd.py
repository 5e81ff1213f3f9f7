"""Stochastic gradient descent with optional momentum and weight decay (Burn's ``Sgd``)."""

from __future__ import annotations

from dataclasses import dataclass

from ..config import config
from ..tensor import Tensor
from ._base import Optimizer, SimpleOptimizer, State, init_optimizer
from ._clipping import GradientClippingConfig
from ._decay import WeightDecayConfig, weight_decay
from ._momentum import MomentumConfig, momentum_transform
from ._scalar import Scalar

__all__ = ["SgdConfig", "Sgd"]


@dataclass(frozen=True)
class Sgd(SimpleOptimizer):
    """SGD's rule; see :class:`SgdConfig`."""

    momentum: MomentumConfig | None
    weight_decay: WeightDecayConfig | None
    name = "sgd"

    def step(self, lr: Scalar, tensor: Tensor, grad: Tensor, state: State | None) -> tuple[Tensor, State | None]:
        grad = weight_decay(self.weight_decay, grad, tensor)
        new: State | None = None
        if self.momentum is not None:
            grad, new = momentum_transform(self.momentum, grad, state)
        return tensor.sub(grad.mul_scalar(lr)), new


@config
class SgdConfig:
    """Stochastic gradient descent (Burn's ``SgdConfig``), ``torch.optim.SGD`` with the same settings::

        g = grad + penalty * param                    (weight_decay)
        v = g, then v = momentum v + (1 - dampening) g    (momentum; Nesterov: g + momentum v)
        param -= lr * v

    ::

        SgdConfig().with_momentum(MomentumConfig(momentum=0.9, dampening=0.0, nesterov=False)).init()

    Args:
        weight_decay: optional :class:`WeightDecayConfig` (coupled L2 penalty).
        momentum: optional :class:`MomentumConfig` (none by default: plain SGD, stateless).
        grad_clipping: optional :class:`GradientClippingConfig` (Burn calls this field ``gradient_clipping``;
            ``with_gradient_clipping`` is accepted too).
        nan_check: raise :class:`~ember.optim.OptimizerError` on a NaN gradient.
    """

    weight_decay: WeightDecayConfig | None = None
    momentum: MomentumConfig | None = None
    grad_clipping: GradientClippingConfig | None = None
    nan_check: bool = False

    def with_gradient_clipping(self, clipping: GradientClippingConfig | None) -> SgdConfig:
        """Burn's name for :meth:`with_grad_clipping`."""
        return self.with_grad_clipping(clipping)  # type: ignore[attr-defined, no-any-return]

    def init(self) -> Optimizer:
        """The optimizer (state empty)."""
        return init_optimizer(self, self.build())

    def build(self) -> Sgd:
        """The bare per-tensor rule."""
        return Sgd(self.momentum, self.weight_decay)
