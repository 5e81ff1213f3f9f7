"""``HuberLoss`` (Burn's ``nn::loss::HuberLoss``; Huber 1964)."""

from __future__ import annotations

from ...backend._device import Device
from ...config import config
from ...module import Module
from ...tensor import Tensor
from .._checks import config_error
from ._common import same_shape
from ._reduction import Reduction, reduce

__all__ = ["HuberLossConfig", "HuberLoss"]


@config
class HuberLossConfig:
    """Configuration of :class:`HuberLoss` (Burn's ``HuberLossConfig``; ``delta`` > 0, PyTorch default 1.0)."""

    delta: float = 1.0

    def init(self, device: Device | None = None) -> HuberLoss:
        """Raises ConfigError for ``delta <= 0``."""
        if not self.delta > 0:
            raise config_error("HuberLossConfig", f"delta must be > 0, got {self.delta}.")
        return HuberLoss(delta=self.delta)


class HuberLoss(Module):
    """``0.5 r^2`` for ``|r| <= delta``, else ``delta (|r| - 0.5 delta)``, ``r = predictions - targets``
    (Burn's ``HuberLoss``, PyTorch ``nn.HuberLoss``).

    ``forward(predictions, targets, reduction=Reduction.MEAN)`` -> ``[1]``.
    """

    delta: float = 1.0

    def forward(self, predictions: Tensor, targets: Tensor, reduction: Reduction | str = Reduction.MEAN) -> Tensor:
        return reduce(self.forward_no_reduction(predictions, targets), reduction)

    def forward_no_reduction(self, predictions: Tensor, targets: Tensor) -> Tensor:
        same_shape("HuberLoss", predictions, targets)
        d = self.delta
        a = (predictions - targets).abs()
        # min(a, d) gives both branches: 0.5 m^2 + d (a - m) with m = min(a, d)
        m = a.clamp_max(d)
        return m.square() * 0.5 + (a - m) * d
