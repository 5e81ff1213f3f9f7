"""AdamW: Adam with decoupled weight decay (Loshchilov & Hutter, 2019), Burn's ``AdamW``."""

from __future__ import annotations

from dataclasses import dataclass

from ..config import config
from ..tensor import Tensor
from ._adam import adaptive_moment, fused_adam_step, zero_moments
from ._base import Optimizer, SimpleOptimizer, State, init_optimizer
from ._clipping import GradientClippingConfig
from ._fused import step_one
from ._scalar import Scalar, is_zero, mul, rsub

__all__ = ["AdamWConfig", "AdamW"]


@dataclass(frozen=True)
class AdamW(SimpleOptimizer):
    """AdamW's rule; see :class:`AdamWConfig`."""

    beta_1: float
    beta_2: float
    epsilon: float
    weight_decay: float
    cautious_weight_decay: bool
    amsgrad: bool
    name = "adamw"

    def step_many(self, lr: Scalar, tensors: list[Tensor], grads: list[Tensor], states: list[State | None]
                  ) -> tuple[list[Tensor], list[State | None]]:
        """The fused update (:func:`~ember.optim._adam.fused_adam_step`); the cautious decay goes per tensor."""
        if self.cautious_weight_decay:
            return super().step_many(lr, tensors, grads, states)
        rate = mul(lr, self.weight_decay)
        decay = None if self.weight_decay == 0.0 or is_zero(rate) else rsub(1.0, rate)
        return fused_adam_step(lr, tensors, grads, states, self.beta_1, self.beta_2, self.epsilon, self.amsgrad,
                               0.0, decay)

    def step(self, lr: Scalar, tensor: Tensor, grad: Tensor, state: State | None) -> tuple[Tensor, State | None]:
        if not self.cautious_weight_decay:
            return step_one(self, lr, tensor, grad, state)
        direction, new = adaptive_moment(grad, state, self.beta_1, self.beta_2, self.epsilon, self.amsgrad)
        rate = mul(lr, self.weight_decay)
        decayed = tensor
        if self.weight_decay != 0.0 and not is_zero(rate):
            # decay only where the parameter and the first moment agree in sign (Chen et al., 2025)
            differ = tensor.greater_equal_elem(0.0).not_equal(new["moment_1"].greater_equal_elem(0.0))
            decayed = tensor.sub(tensor.mul_scalar(rate).mask_fill(differ, 0.0))
        return decayed.sub(direction.mul_scalar(lr)), new

    def init_state(self, tensor: Tensor) -> State:
        """Zero moments, step count 0 (see :func:`~ember.optim._adam.zero_moments`)."""
        return zero_moments(tensor, self.amsgrad)


@config
class AdamWConfig:
    """AdamW optimizer (Burn's ``AdamWConfig``; Loshchilov & Hutter, *Decoupled Weight Decay Regularization*, 2019).

    The Adam update of :class:`~ember.optim.AdamConfig` with the decay applied to the parameter, not the
    gradient::

        param = param * (1 - lr * weight_decay) - lr * m_hat / (sqrt(v_hat) + epsilon)

    equal to ``torch.optim.AdamW(betas=(beta_1, beta_2), eps=epsilon, weight_decay=weight_decay)``.

    Args:
        beta_1: first-moment decay (Burn: 0.9).
        beta_2: second-moment decay (Burn: 0.999).
        epsilon: denominator term (Burn: **1e-5**; PyTorch: 1e-8).
        weight_decay: decoupled decay coefficient (Burn: **1e-4**; PyTorch: 1e-2).
        cautious_weight_decay: decay only the coordinates where the parameter and the first moment have the
            same sign (Burn's option; *Cautious Weight Decay*, arXiv:2510.12402).
        amsgrad: use AMSGrad's running maximum of ``v`` (PyTorch's option; default False).
        grad_clipping: optional :class:`GradientClippingConfig`.
        nan_check: raise :class:`~ember.optim.OptimizerError` on a NaN gradient.
    """

    beta_1: float = 0.9
    beta_2: float = 0.999
    epsilon: float = 1e-5
    weight_decay: float = 1e-4
    cautious_weight_decay: bool = False
    amsgrad: bool = False
    grad_clipping: GradientClippingConfig | None = None
    nan_check: bool = False

    def init(self) -> Optimizer:
        """The optimizer (state empty)."""
        return init_optimizer(self, self.build())

    def build(self) -> AdamW:
        """The bare per-tensor rule."""
        return AdamW(
            self.beta_1, self.beta_2, self.epsilon, self.weight_decay, self.cautious_weight_decay, self.amsgrad
        )
