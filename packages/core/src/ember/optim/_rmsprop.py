"""RMSProp (Hinton, Coursera lecture 6e; centered: Graves, 2013), Burn's ``RmsProp``."""

from __future__ import annotations

from dataclasses import dataclass

from ..config import config
from ..tensor import Tensor
from ._base import Optimizer, SimpleOptimizer, State, init_optimizer
from ._clipping import GradientClippingConfig
from ._decay import WeightDecayConfig
from ._fused import buffers, prim, step_one, wrap, wrap_all
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
        """One update (:meth:`step_many` of one tensor: ``state``'s buffers are consumed)."""
        return step_one(self, lr, tensor, grad, state)

    def step_many(self, lr: Scalar, tensors: list[Tensor], grads: list[Tensor], states: list[State | None]
                  ) -> tuple[list[Tensor], list[State | None]]:
        """The fused update (the backend's ``fused_rmsprop``); a missing state (or key) is a zero one."""
        if not tensors:
            return [], []
        B = tensors[0].ops
        keys = ("square_avg",) + (("grad_avg",) if self.centered else ()) + (("momentum",) if self.momentum > 0.0
                                                                            else ())
        full = [st if st is not None and all(k in st for k in keys) else {**self.init_state(t), **(st or {})}
                for t, st in zip(tensors, states, strict=True)]
        seen: set[int] = set()
        s = buffers(B, full, "square_avg", seen)
        a = buffers(B, full, "grad_avg", seen) if self.centered else None
        b = buffers(B, full, "momentum", seen) if self.momentum > 0.0 else None
        penalty = 0.0 if self.weight_decay is None else self.weight_decay.penalty
        ps, s, a, b = B.fused_rmsprop([t.primitive for t in tensors], [g.primitive for g in grads], s, a, b,
                                      prim(lr), self.alpha, self.epsilon, self.momentum, penalty)
        new_s: list[State | None] = []
        for j, t in enumerate(tensors):
            st: State = {"square_avg": wrap(s[j], t)}
            if a is not None:
                st["grad_avg"] = wrap(a[j], t)
            if b is not None:
                st["momentum"] = wrap(b[j], t)
            new_s.append(st)
        return wrap_all(ps, tensors), new_s

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
