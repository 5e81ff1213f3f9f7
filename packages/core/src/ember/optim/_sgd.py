"""Stochastic gradient descent with optional momentum and weight decay (Burn's ``Sgd``)."""

from __future__ import annotations

from dataclasses import dataclass

from ..config import config
from ..tensor import Tensor
from ._base import Optimizer, SimpleOptimizer, State, init_optimizer
from ._clipping import GradientClippingConfig
from ._decay import WeightDecayConfig
from ._fused import buffers, prim, step_one, wrap
from ._momentum import MomentumConfig
from ._scalar import Scalar

__all__ = ["SgdConfig", "Sgd"]


@dataclass(frozen=True)
class Sgd(SimpleOptimizer):
    """SGD's rule; see :class:`SgdConfig`."""

    momentum: MomentumConfig | None
    weight_decay: WeightDecayConfig | None
    name = "sgd"

    def step(self, lr: Scalar, tensor: Tensor, grad: Tensor, state: State | None) -> tuple[Tensor, State | None]:
        """One update (:meth:`step_many` of one tensor: ``state``'s buffers are consumed)."""
        return step_one(self, lr, tensor, grad, state)

    def step_many(self, lr: Scalar, tensors: list[Tensor], grads: list[Tensor], states: list[State | None]
                  ) -> tuple[list[Tensor], list[State | None]]:
        """The fused update (the backend's ``fused_sgd``): one call for the parameters that have a velocity and
        one for those at their first step (``velocity = g``, written into fresh buffers)."""
        if not tensors:
            return [], []
        B = tensors[0].ops
        penalty = 0.0 if self.weight_decay is None else self.weight_decay.penalty
        mom = self.momentum
        new_t: list[Tensor] = list(tensors)
        new_s: list[State | None] = list(states)
        groups: dict[bool, list[int]] = {}
        for i, st in enumerate(states):
            groups.setdefault(mom is None or st is None, []).append(i)
        for first, idx in groups.items():
            vel = None
            if mom is not None:
                vel = ([tensors[i].zeros_like().primitive for i in idx] if first
                       else buffers(B, [states[i] for i in idx], "velocity", set()))  # type: ignore[misc]
            ps, vel = B.fused_sgd([tensors[i].primitive for i in idx], [grads[i].primitive for i in idx], vel,
                                  prim(lr), penalty, 0.0 if mom is None else mom.momentum,
                                  0.0 if mom is None else mom.dampening, mom is not None and mom.nesterov, first)
            for j, i in enumerate(idx):
                new_t[i] = wrap(ps[j], tensors[i])
                new_s[i] = None if vel is None else {"velocity": wrap(vel[j], tensors[i])}
        return new_t, new_s


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
