"""Adan: adaptive Nesterov momentum (Xie et al., 2022), Burn's ``Adan``."""

from __future__ import annotations

from dataclasses import dataclass

from ..config import config
from ..tensor import Tensor
from ._base import Optimizer, SimpleOptimizer, State, init_optimizer
from ._clipping import GradientClippingConfig
from ._scalar import Scalar, add, div, increment, is_zero, mul, one_minus_pow, rsub, sqrt

__all__ = ["AdanConfig", "Adan"]


@dataclass(frozen=True)
class Adan(SimpleOptimizer):
    """Adan's rule; see :class:`AdanConfig`."""

    beta_1: float
    beta_2: float
    beta_3: float
    epsilon: float
    weight_decay: float
    no_prox: bool
    name = "adan"

    def step(self, lr: Scalar, tensor: Tensor, grad: Tensor, state: State | None) -> tuple[Tensor, State | None]:
        b1, b2, b3 = self.beta_1, self.beta_2, self.beta_3
        if state is None:
            time = 1
            exp_avg = grad.mul_scalar(1.0 - b1)
            exp_avg_sq = grad.square().mul_scalar(1.0 - b3)
            exp_avg_diff = grad.zeros_like()
        else:
            time = increment(state["time"])
            diff = grad.sub(state["pre_grad"])
            exp_avg = state["exp_avg"].mul_scalar(b1).add(grad.mul_scalar(1.0 - b1))
            exp_avg_diff = state["exp_avg_diff"].mul_scalar(b2).add(diff.mul_scalar(1.0 - b2))
            mixed = diff.mul_scalar(b2).add(grad)
            exp_avg_sq = state["exp_avg_sq"].mul_scalar(b3).add(mixed.square().mul_scalar(1.0 - b3))
        denom = exp_avg_sq.sqrt().div_scalar(sqrt(one_minus_pow(b3, time))).add_scalar(self.epsilon)
        update = (
            exp_avg.div_scalar(one_minus_pow(b1, time))
            .add(exp_avg_diff.mul_scalar(div(b2, one_minus_pow(b2, time))))
            .div(denom)
        )
        rate = mul(lr, self.weight_decay)
        no_decay = self.weight_decay == 0.0 or is_zero(rate)
        if self.no_prox:
            out = (tensor if no_decay else tensor.mul_scalar(rsub(1.0, rate))).sub(update.mul_scalar(lr))
        else:
            out = tensor.sub(update.mul_scalar(lr))
            out = out if no_decay else out.div_scalar(add(1.0, rate))
        new: State = {
            "time": time, "exp_avg": exp_avg, "exp_avg_sq": exp_avg_sq, "exp_avg_diff": exp_avg_diff,
            "pre_grad": grad,
        }
        return out, new


@config
class AdanConfig:
    """Adan optimizer (Burn's ``AdanConfig``; Xie et al., *Adan: Adaptive Nesterov Momentum Algorithm for
    Faster Optimizing Deep Models*, arXiv:2208.06677, and its reference implementation)::

        d = g - g_prev   (0 at the first step)
        m = b1 m + (1 - b1) g        n = b2 n + (1 - b2) d        v = b3 v + (1 - b3) (g + b2 d)^2
        u = (m / (1 - b1^t) + b2 n / (1 - b2^t)) / (sqrt(v) / sqrt(1 - b3^t) + epsilon)
        param = (param - lr u) / (1 + lr weight_decay)        (proximal; default)
        param = param (1 - lr weight_decay) - lr u            (no_prox)

    Note Burn's (and the paper code's) convention: ``beta_1 = 0.98`` multiplies the *old* average.

    Args:
        beta_1: first-moment decay (0.98). beta_2: gradient-difference decay (0.92).
        beta_3: second-moment decay (0.99). epsilon: denominator term (1e-8).
        weight_decay: decay coefficient (0). no_prox: decoupled instead of proximal decay (False).
        grad_clipping: optional :class:`GradientClippingConfig`.
        nan_check: raise :class:`~ember.optim.OptimizerError` on a NaN gradient.
    """

    beta_1: float = 0.98
    beta_2: float = 0.92
    beta_3: float = 0.99
    epsilon: float = 1e-8
    weight_decay: float = 0.0
    no_prox: bool = False
    grad_clipping: GradientClippingConfig | None = None
    nan_check: bool = False

    def init(self) -> Optimizer:
        """The optimizer (state empty)."""
        return init_optimizer(self, self.build())

    def build(self) -> Adan:
        """The bare per-tensor rule."""
        return Adan(self.beta_1, self.beta_2, self.beta_3, self.epsilon, self.weight_decay, self.no_prox)
