"""Muon: momentum orthogonalized by Newton-Schulz (Keller Jordan, 2024), Burn's ``Muon``."""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass

from .._errors import ConfigError
from ..config import config
from ..tensor import Tensor
from ._adamw import AdamW, AdamWConfig
from ._base import Optimizer, SimpleOptimizer, State, init_optimizer
from ._clipping import GradientClippingConfig
from ._decay import WeightDecayConfig
from ._momentum import MomentumConfig, momentum_transform
from ._scalar import Scalar, mul, rsub

__all__ = ["AdjustLrFn", "MuonConfig", "Muon", "zeropower_via_newtonschulz"]


class AdjustLrFn(str, enum.Enum):
    """How Muon scales the learning rate of a ``[A, B]`` matrix (Burn's ``AdjustLrFn``; PyTorch's strings).

    - ``Original`` (Keller Jordan): ``lr * sqrt(max(1, A / B))``.
    - ``MatchRmsAdamW`` (Moonshot, *Muon is Scalable for LLM Training*, arXiv:2502.16982):
      ``lr * 0.2 * sqrt(max(A, B))``, so AdamW's learning rate and weight decay can be reused.
    """

    Original = "original"
    MatchRmsAdamW = "match_rms_adamw"

    def ratio(self, shape: tuple[int, ...]) -> float:
        """The factor applied to ``lr`` for a parameter of ``shape`` (1 below rank 2)."""
        if len(shape) < 2:
            return 1.0
        a, b = float(shape[0]), float(shape[1])
        if self is AdjustLrFn.Original:
            return math.sqrt(max(1.0, a / b))
        return 0.2 * math.sqrt(max(a, b))


def zeropower_via_newtonschulz(
    g: Tensor, coefficients: tuple[float, float, float] = (3.4445, -4.775, 2.0315), steps: int = 5,
    epsilon: float = 1e-7,
) -> Tensor:
    """An approximate orthogonalization ``U V^T`` of a ``[rows, cols]`` matrix ``g = U S V^T``.

    The quintic Newton-Schulz iteration of Keller Jordan's Muon (and PyTorch's ``torch.optim.Muon``, which
    runs it in bfloat16; here it runs in the tensor's dtype)::

        X = G / max(||G||_F, epsilon)        (G transposed first when rows > cols)
        repeat steps: A = X X^T;  B = b A + c A A;  X = a X + B X

    Returns a tensor of ``g``'s shape whose singular values are roughly in [0.7, 1.2].
    """
    a, b, c = coefficients
    tall = g.shape[0] > g.shape[1]
    x = g.swap_dims(0, 1) if tall else g
    x = x.div(x.square().sum().sqrt().clamp_min(epsilon))
    for _ in range(steps):
        gram = x.matmul(x.swap_dims(0, 1))
        poly = gram.mul_scalar(b).add(gram.matmul(gram).mul_scalar(c))
        x = x.mul_scalar(a).add(poly.matmul(x))
    return x.swap_dims(0, 1) if tall else x


@dataclass(frozen=True)
class Muon(SimpleOptimizer):
    """Muon's rule; see :class:`MuonConfig`."""

    momentum: MomentumConfig
    coefficients: tuple[float, float, float]
    ns_steps: int
    epsilon: float
    adjust_lr_fn: AdjustLrFn
    weight_decay: WeightDecayConfig | None
    fallback: AdamW | None
    name = "muon"

    def step(self, lr: Scalar, tensor: Tensor, grad: Tensor, state: State | None) -> tuple[Tensor, State | None]:
        if tensor.rank != 2:
            if self.fallback is None:
                raise ConfigError(
                    f"Muon: got a parameter of shape {list(tensor.shape)}; Muon orthogonalizes 2-D weight matrices "
                    "only. Keep MuonConfig.fallback (an AdamWConfig, the default) for biases, norms and "
                    "embeddings, or freeze those parameters."
                )
            return self.fallback.step(lr, tensor, grad, state)
        direction, new = momentum_transform(self.momentum, grad, state)
        update = zeropower_via_newtonschulz(direction, self.coefficients, self.ns_steps, self.epsilon)
        adjusted = mul(lr, self.adjust_lr_fn.ratio(tensor.shape))
        if self.weight_decay is not None and self.weight_decay.penalty != 0.0:
            tensor = tensor.mul_scalar(rsub(1.0, mul(lr, self.weight_decay.penalty)))
        return tensor.sub(update.mul_scalar(adjusted)), new


@config
class MuonConfig:
    """Muon optimizer (Burn's ``MuonConfig``; K. Jordan, *Muon: An optimizer for hidden layers in neural
    networks*, 2024, https://kellerjordan.github.io/posts/muon/; PyTorch's ``torch.optim.Muon``).

    For each **2-D** parameter ``[A, B]``::

        u = momentum(g)                        (MomentumConfig: v = m v + g; Nesterov u = g + m v)
        o = zeropower_via_newtonschulz(u)      (≈ U V^T of u, ns_steps quintic iterations)
        param = param (1 - lr penalty) - lr * adjust_lr_fn(A, B) * o

    The weight decay uses the plain ``lr``, the update the shape-adjusted one, as in Burn and PyTorch.
    PyTorch's Muon keeps ``buf = lerp(buf, g, 1 - m)``, a multiple ``(1 - m)`` of this velocity; the
    Newton-Schulz normalization removes the factor, so the updates agree.

    Muon is meant for hidden-layer matrices only. Other parameters (biases, norms, embeddings, rank != 2) go
    to ``fallback``, an :class:`~ember.optim.AdamWConfig` (as Keller Jordan's ``MuonWithAuxAdam``; Burn
    rejects them). Its ``grad_clipping``/``nan_check`` fields are ignored: Muon's own apply to every parameter.
    ``fallback=None`` makes a non-2-D parameter a :class:`~ember.ConfigError`. Convolution kernels
    ``[out, in, kh, kw]`` are not flattened: reshape them to 2-D parameters to use Muon on them.

    Args:
        weight_decay: optional :class:`WeightDecayConfig` (decoupled: ``param *= 1 - lr * penalty``).
        momentum: :class:`MomentumConfig` (Burn/PyTorch: momentum 0.95, dampening 0, Nesterov).
        ns_coefficients: quintic coefficients ``(a, b, c)`` (3.4445, -4.775, 2.0315).
        epsilon: floor of the Frobenius norm (1e-7).
        ns_steps: Newton-Schulz iterations (5).
        adjust_lr_fn: :class:`AdjustLrFn` (``Original``).
        fallback: the AdamW configuration of non-2-D parameters (``AdamWConfig()``), or ``None``.
        grad_clipping: optional :class:`GradientClippingConfig`.
        nan_check: raise :class:`~ember.optim.OptimizerError` on a NaN gradient.
    """

    weight_decay: WeightDecayConfig | None = None
    momentum: MomentumConfig = MomentumConfig(momentum=0.95, dampening=0.0, nesterov=True)
    ns_coefficients: tuple[float, float, float] = (3.4445, -4.775, 2.0315)
    epsilon: float = 1e-7
    ns_steps: int = 5
    adjust_lr_fn: AdjustLrFn = AdjustLrFn.Original
    fallback: AdamWConfig | None = AdamWConfig()
    grad_clipping: GradientClippingConfig | None = None
    nan_check: bool = False

    def init(self) -> Optimizer:
        """The optimizer (state empty)."""
        return init_optimizer(self, self.build())

    def build(self) -> Muon:
        """The bare per-tensor rule."""
        fallback = None if self.fallback is None else self.fallback.build()
        return Muon(
            self.momentum, tuple(self.ns_coefficients), self.ns_steps, self.epsilon,  # type: ignore[arg-type]
            AdjustLrFn(self.adjust_lr_fn), self.weight_decay, fallback,
        )
