"""Adam (Kingma & Ba, 2015; AMSGrad: Reddi et al., 2018), Burn's ``Adam``."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from ..config import config
from ..tensor import Tensor
from ._base import Optimizer, SimpleOptimizer, State, init_optimizer
from ._clipping import GradientClippingConfig
from ._decay import WeightDecayConfig
from ._fused import buffers, by_counter, prim, step_one, wrap
from ._scalar import Count, Scalar, div, increment, mul, one_minus_pow, shared, sqrt

__all__ = ["AdamConfig", "Adam", "adaptive_moment", "fused_adam_step"]


def _bias_scalars(beta_1: float, beta_2: float, epsilon: float, time: Count) -> tuple[Scalar, Scalar]:
    """``(sqrt(bc2) / bc1, epsilon * sqrt(bc2))`` with ``bc = 1 - beta^time``: Python floats for an int ``time``,
    ``[1]`` tensors for a tensor ``time``."""
    bc2_sqrt = sqrt(one_minus_pow(beta_2, time))
    return div(bc2_sqrt, one_minus_pow(beta_1, time)), mul(epsilon, bc2_sqrt)


#: :func:`_bias_scalars` memoized for Python-int times: the parameters of one eager step share the values, and
#: the lookup costs less than the helper calls (the same function, so the same floats)
_bias_scalars_cached = functools.lru_cache(maxsize=256)(_bias_scalars)


def _bias_terms(beta_1: float, beta_2: float, epsilon: float, time: Count) -> tuple[Scalar, Scalar]:
    """:func:`_bias_scalars` of a Python count (memoized) or a tensor count (once per step and counter)."""
    if not isinstance(time, Tensor):
        return _bias_scalars_cached(beta_1, beta_2, epsilon, time)  # type: ignore[no-any-return]
    return shared(("adam", beta_1, beta_2, epsilon), time, lambda t: _bias_scalars(beta_1, beta_2, epsilon, t))


def fused_adam_step(lr: Scalar, tensors: list[Tensor], grads: list[Tensor], states: list[State | None],
                    beta_1: float, beta_2: float, epsilon: float, amsgrad: bool, penalty: float,
                    decay: Scalar | None) -> tuple[list[Tensor], list[State | None]]:
    """Adam's update of several parameters of one device and dtype through the backend's ``fused_adam``
    (:meth:`ember.backend.Backend.fused_adam`), one call per step count.

    ``states[i]`` is ``None`` (zero moments, :func:`zero_moments`) or a state of this rule; its moment tensors are
    consumed (the backend may update their buffers in place). ``penalty``: coupled L2 decay (0 for none);
    ``decay``: the decoupled factor ``1 - lr * weight_decay`` (AdamW) or ``None``.

    Returns:
        ``(new parameters, new states)`` in the order of ``tensors``.
    """
    full = [zero_moments(t, amsgrad) if s is None else s for t, s in zip(tensors, states, strict=True)]
    if amsgrad:  # a state saved without the running maximum starts it from v (max(0, v) = v)
        full = [s if "max_moment_2" in s else {**s, "max_moment_2": t.zeros_like()} for t, s in zip(tensors, full)]
    new_t: list[Tensor] = list(tensors)
    new_s: list[State | None] = list(states)
    B: Any = tensors[0].ops if tensors else None
    for count, idx in by_counter(full):
        sts = [full[i] for i in idx]
        time = increment(count)
        factor, eps_term = _bias_terms(beta_1, beta_2, epsilon, time)
        seen: set[int] = set()
        m, v = buffers(B, sts, "moment_1", seen), buffers(B, sts, "moment_2", seen)
        vm = buffers(B, sts, "max_moment_2", seen) if amsgrad else None
        ps, m, v, vm = B.fused_adam([tensors[i].primitive for i in idx], [grads[i].primitive for i in idx], m, v,
                                    vm, prim(lr), beta_1, beta_2, prim(factor), prim(eps_term), penalty, prim(decay))
        for j, i in enumerate(idx):
            like = tensors[i]
            new_t[i] = wrap(ps[j], like)
            st: State = {"time": time, "moment_1": wrap(m[j], like), "moment_2": wrap(v[j], like)}
            if vm is not None:
                st["max_moment_2"] = wrap(vm[j], like)
            new_s[i] = st
    return new_t, new_s


def adaptive_moment(
    grad: Tensor, state: State | None, beta_1: float, beta_2: float, epsilon: float, amsgrad: bool
) -> tuple[Tensor, State]:
    """The bias-corrected Adam direction ``m_hat / (sqrt(v_hat) + eps)`` and the new moment state.

    ``m = b1 m + (1 - b1) g``, ``v = b2 v + (1 - b2) g^2`` (zero-initialized), ``t += 1``,
    ``m_hat = m / (1 - b1^t)``, ``v_hat = v / (1 - b2^t)`` (with AMSGrad ``v`` is replaced by its running
    maximum). Computed as Burn does, ``m * (sqrt(bc2) / bc1) / (sqrt(v) + eps * sqrt(bc2))``, which is the
    same value.

    ``state["time"]`` is a Python int (eager training) or an Int tensor of shape ``[1]`` (a compiled step, see
    :mod:`ember.optim._scalar`); the new state keeps its form.
    """
    if state is None:
        time = 1
        m = grad.mul_scalar(1.0 - beta_1)
        v = grad.square().mul_scalar(1.0 - beta_2)
        v_max = v if amsgrad else None
    else:
        time = increment(state["time"])
        m = state["moment_1"].mul_scalar(beta_1).add(grad.mul_scalar(1.0 - beta_1))
        v = state["moment_2"].mul_scalar(beta_2).add(grad.square().mul_scalar(1.0 - beta_2))
        prev = state.get("max_moment_2")
        v_max = (v if prev is None else prev.max_pair(v)) if amsgrad else None
    factor, eps_term = _bias_terms(beta_1, beta_2, epsilon, time)
    denom = (v_max if v_max is not None else v).sqrt().add_scalar(eps_term)
    direction = m.mul_scalar(factor).div(denom)
    new: State = {"time": time, "moment_1": m, "moment_2": v}
    if amsgrad:
        new["max_moment_2"] = v_max
    return direction, new


def zero_moments(tensor: Tensor, amsgrad: bool) -> State:
    """Adam's state before the first step: ``time`` 0 and zero moments shaped like ``tensor``. Its first
    update gives the values of the first update without a state, bit for bit (``0 * beta + x == x``)."""
    # one array each: the step updates them separately (a compiled step would see an alias, then separate arrays)
    state: State = {"time": 0, "moment_1": tensor.zeros_like(), "moment_2": tensor.zeros_like()}
    if amsgrad:
        state["max_moment_2"] = tensor.zeros_like()
    return state


@dataclass(frozen=True)
class Adam(SimpleOptimizer):
    """Adam's rule; see :class:`AdamConfig`."""

    beta_1: float
    beta_2: float
    epsilon: float
    amsgrad: bool
    weight_decay: WeightDecayConfig | None
    name = "adam"

    def step(self, lr: Scalar, tensor: Tensor, grad: Tensor, state: State | None) -> tuple[Tensor, State | None]:
        """One update (:meth:`step_many` of one tensor: ``state``'s moments are consumed)."""
        return step_one(self, lr, tensor, grad, state)

    def step_many(self, lr: Scalar, tensors: list[Tensor], grads: list[Tensor], states: list[State | None]
                  ) -> tuple[list[Tensor], list[State | None]]:
        """The fused update (:func:`fused_adam_step`)."""
        penalty = 0.0 if self.weight_decay is None else self.weight_decay.penalty
        return fused_adam_step(lr, tensors, grads, states, self.beta_1, self.beta_2, self.epsilon, self.amsgrad,
                               penalty, None)

    def init_state(self, tensor: Tensor) -> State:
        """Zero moments, step count 0 (see :func:`zero_moments`)."""
        return zero_moments(tensor, self.amsgrad)


@config
class AdamConfig:
    """Adam optimizer (Burn's ``AdamConfig``; Kingma & Ba, *Adam: A Method for Stochastic Optimization*, 2015).

    Per parameter, with ``g`` the gradient (plus ``penalty * param`` with ``weight_decay``, PyTorch's coupled
    L2 decay)::

        m = beta_1 m + (1 - beta_1) g          v = beta_2 v + (1 - beta_2) g^2       t += 1
        param -= lr * (m / (1 - beta_1^t)) / (sqrt(v / (1 - beta_2^t)) + epsilon)

    which is ``torch.optim.Adam`` with ``betas=(beta_1, beta_2), eps=epsilon``. With ``amsgrad`` the running
    maximum of ``v`` replaces ``v`` in the denominator (Reddi et al., 2018).

    Args:
        beta_1: first-moment decay (Burn: 0.9).
        beta_2: second-moment decay (Burn: 0.999).
        epsilon: denominator term (Burn's default **1e-5**; PyTorch's is 1e-8).
        amsgrad: use AMSGrad (default False).
        weight_decay: optional :class:`WeightDecayConfig` (coupled L2 penalty).
        grad_clipping: optional :class:`GradientClippingConfig`, applied per parameter before the update.
        nan_check: raise :class:`~ember.optim.OptimizerError` on a NaN gradient (one host sync per parameter).
    """

    beta_1: float = 0.9
    beta_2: float = 0.999
    epsilon: float = 1e-5
    amsgrad: bool = False
    weight_decay: WeightDecayConfig | None = None
    grad_clipping: GradientClippingConfig | None = None
    nan_check: bool = False

    def init(self) -> Optimizer:
        """The optimizer (state empty)."""
        return init_optimizer(self, self.build())

    def build(self) -> Adam:
        """The bare per-tensor rule (Burn's ``build``)."""
        return Adam(self.beta_1, self.beta_2, self.epsilon, self.amsgrad, self.weight_decay)
