"""``MomentumConfig``: heavy-ball / Nesterov momentum on the gradient (Burn's ``Momentum``)."""

from __future__ import annotations

from typing import Any

from ..config import config
from ..tensor import Tensor

__all__ = ["MomentumConfig", "momentum_transform"]


@config
class MomentumConfig:
    """Momentum of :class:`~ember.optim.SgdConfig` (and Muon), as Burn and PyTorch's ``SGD``:

    - first step: ``v = g``; then ``v = momentum * v + (1 - dampening) * g``;
    - the update direction is ``g + momentum * v`` with ``nesterov``, else ``v``.

    Args:
        momentum: the momentum factor (Burn's default 0.9).
        dampening: the dampening factor (Burn's default 0.1; PyTorch's is 0.0).
        nesterov: Nesterov momentum (Sutskever et al., 2013); default False.
    """

    momentum: float = 0.9
    dampening: float = 0.1
    nesterov: bool = False


def momentum_transform(
    cfg: MomentumConfig, grad: Tensor, state: dict[str, Any] | None
) -> tuple[Tensor, dict[str, Any]]:
    """``(direction, {"velocity": v})`` after one step (Burn's ``Momentum::transform``)."""
    if state is None:
        velocity = grad
    else:
        velocity = grad.mul_scalar(1.0 - cfg.dampening).add(state["velocity"].mul_scalar(cfg.momentum))
    direction = velocity.mul_scalar(cfg.momentum).add(grad) if cfg.nesterov else velocity
    return direction, {"velocity": velocity}
