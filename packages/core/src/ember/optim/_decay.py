"""``WeightDecayConfig``: L2 penalty added to the gradient (Burn's ``WeightDecayConfig``)."""

from __future__ import annotations

from ..config import config
from ..tensor import Tensor

__all__ = ["WeightDecayConfig", "weight_decay"]


@config
class WeightDecayConfig:
    """Coupled weight decay (an L2 penalty): ``grad <- grad + penalty * param`` before the update.

    This is Burn's ``WeightDecay`` and PyTorch's ``weight_decay`` argument of ``SGD``/``Adam``/``Adagrad``/
    ``RMSprop``. AdamW, Lion and Adan use *decoupled* decay instead (a float field on their configs).

    Args:
        penalty: the L2 coefficient (>= 0).
    """

    penalty: float

    def __post_init__(self) -> None:
        from .._errors import ConfigError

        if not self.penalty >= 0.0:
            raise ConfigError(f"WeightDecayConfig.penalty: expected a value >= 0, got {self.penalty}.")


def weight_decay(cfg: WeightDecayConfig | None, grad: Tensor, tensor: Tensor) -> Tensor:
    """``grad + penalty * tensor`` (``grad`` unchanged without a config)."""
    if cfg is None or cfg.penalty == 0.0:
        return grad
    return tensor.mul_scalar(cfg.penalty).add(grad)
