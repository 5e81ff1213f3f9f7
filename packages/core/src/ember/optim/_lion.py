"""Lion: evolved sign momentum (Chen et al., 2023), Burn's ``Lion``."""

from __future__ import annotations

from dataclasses import dataclass

from ..config import config
from ..tensor import Tensor
from ._base import Optimizer, SimpleOptimizer, State, init_optimizer
from ._clipping import GradientClippingConfig
from ._fused import buffers, prim, step_one, wrap_all
from ._scalar import Scalar, is_zero, mul, rsub

__all__ = ["LionConfig", "Lion"]


@dataclass(frozen=True)
class Lion(SimpleOptimizer):
    """Lion's rule; see :class:`LionConfig`."""

    beta_1: float
    beta_2: float
    weight_decay: float
    name = "lion"

    def step(self, lr: Scalar, tensor: Tensor, grad: Tensor, state: State | None) -> tuple[Tensor, State | None]:
        """One update (:meth:`step_many` of one tensor: ``state``'s buffers are consumed)."""
        return step_one(self, lr, tensor, grad, state)

    def step_many(self, lr: Scalar, tensors: list[Tensor], grads: list[Tensor], states: list[State | None]
                  ) -> tuple[list[Tensor], list[State | None]]:
        """The fused update (the backend's ``fused_lion``); a missing state is a zero momentum."""
        if not tensors:
            return [], []
        B = tensors[0].ops
        full = [self.init_state(t) if s is None else s for t, s in zip(tensors, states, strict=True)]
        rate = mul(lr, self.weight_decay)
        decay = None if self.weight_decay == 0.0 or is_zero(rate) else rsub(1.0, rate)
        ps, ms = B.fused_lion([t.primitive for t in tensors], [g.primitive for g in grads],
                              buffers(B, full, "momentum", set()), prim(lr), self.beta_1, self.beta_2, prim(decay))
        return wrap_all(ps, tensors), [{"momentum": m} for m in wrap_all(ms, tensors)]

    def init_state(self, tensor: Tensor) -> State:
        """A zero momentum: the first step then gives the stateless one's values, bit for bit."""
        return {"momentum": tensor.zeros_like()}


@config
class LionConfig:
    """Lion optimizer (Burn's ``LionConfig``; Chen et al., *Symbolic Discovery of Optimization Algorithms*,
    arXiv:2302.06675)::

        c = sign(b1 m + (1 - b1) g)
        param = param (1 - lr weight_decay) - lr c
        m = b2 m + (1 - b2) g                  (zero-initialized)

    Lion usually wants a learning rate 3-10x smaller than AdamW's and a larger decoupled decay.

    Args:
        beta_1: interpolation factor of the update direction (0.9).
        beta_2: momentum decay (0.99).
        weight_decay: decoupled decay (0).
        grad_clipping: optional :class:`GradientClippingConfig`.
        nan_check: raise :class:`~ember.optim.OptimizerError` on a NaN gradient.
    """

    beta_1: float = 0.9
    beta_2: float = 0.99
    weight_decay: float = 0.0
    grad_clipping: GradientClippingConfig | None = None
    nan_check: bool = False

    def init(self) -> Optimizer:
        """The optimizer (state empty)."""
        return init_optimizer(self, self.build())

    def build(self) -> Lion:
        """The bare per-tensor rule."""
        return Lion(self.beta_1, self.beta_2, self.weight_decay)
