"""AdaGrad (Duchi et al., 2011), Burn's ``AdaGrad``."""

from __future__ import annotations

from dataclasses import dataclass

from ..config import config
from ..tensor import Tensor
from ._base import Optimizer, SimpleOptimizer, State, init_optimizer
from ._clipping import GradientClippingConfig
from ._decay import WeightDecayConfig, weight_decay
from ._scalar import Scalar, add, div, increment, mul

__all__ = ["AdaGradConfig", "AdaGrad"]


@dataclass(frozen=True)
class AdaGrad(SimpleOptimizer):
    """AdaGrad's rule; see :class:`AdaGradConfig`."""

    lr_decay: float
    epsilon: float
    weight_decay: WeightDecayConfig | None
    name = "adagrad"

    def step(self, lr: Scalar, tensor: Tensor, grad: Tensor, state: State | None) -> tuple[Tensor, State | None]:
        grad = weight_decay(self.weight_decay, grad, tensor)
        if state is None:
            time, total = 1, grad.square()
        else:
            time, total = increment(state["time"]), state["sum"].add(grad.square())
        clr = lr if self.lr_decay == 0.0 else div(lr, add(1.0, mul(add(time, -1), self.lr_decay)))
        update = grad.div(total.sqrt().add_scalar(self.epsilon)).mul_scalar(clr)
        return tensor.sub(update), {"time": time, "sum": total}

    def init_state(self, tensor: Tensor) -> State:
        """Count 0 and a zero sum of squares (PyTorch's ``initial_accumulator_value=0``): the first step then
        gives the stateless one's values, bit for bit."""
        return {"time": 0, "sum": tensor.zeros_like()}


@config
class AdaGradConfig:
    """AdaGrad optimizer (Burn's ``AdaGradConfig``; Duchi, Hazan & Singer, JMLR 2011)::

        g = grad + penalty * param           (weight_decay)
        sum += g^2;   clr = lr / (1 + (t - 1) * lr_decay)
        param -= clr * g / (sqrt(sum) + epsilon)

    equal to ``torch.optim.Adagrad(lr_decay=lr_decay, eps=epsilon, initial_accumulator_value=0)``.

    Args:
        lr_decay: learning-rate decay per step (default 0).
        epsilon: denominator term (Burn: 1e-5; PyTorch: 1e-10).
        weight_decay: optional :class:`WeightDecayConfig`.
        grad_clipping: optional :class:`GradientClippingConfig`.
        nan_check: raise :class:`~ember.optim.OptimizerError` on a NaN gradient.
    """

    lr_decay: float = 0.0
    epsilon: float = 1e-5
    weight_decay: WeightDecayConfig | None = None
    grad_clipping: GradientClippingConfig | None = None
    nan_check: bool = False

    def init(self) -> Optimizer:
        """The optimizer (state empty)."""
        return init_optimizer(self, self.build())

    def build(self) -> AdaGrad:
        """The bare per-tensor rule."""
        return AdaGrad(self.lr_decay, self.epsilon, self.weight_decay)
