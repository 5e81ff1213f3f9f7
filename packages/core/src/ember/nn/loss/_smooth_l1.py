"""``SmoothL1Loss`` (PyTorch's ``nn.SmoothL1Loss``; Girshick 2015, "Fast R-CNN")."""

from __future__ import annotations

from ...backend._device import Device
from ...config import config
from ...module import Module
from ...tensor import Tensor
from .._checks import config_error
from ._common import same_shape
from ._reduction import Reduction, reduce

__all__ = ["SmoothL1LossConfig", "SmoothL1Loss"]


@config
class SmoothL1LossConfig:
    """Configuration of :class:`SmoothL1Loss` (``beta`` >= 0, PyTorch default 1.0)."""

    beta: float = 1.0

    def init(self, device: Device | None = None) -> SmoothL1Loss:
        """Raises ConfigError for ``beta < 0``."""
        if self.beta < 0:
            raise config_error("SmoothL1LossConfig", f"beta must be >= 0, got {self.beta}.")
        return SmoothL1Loss(beta=self.beta)


class SmoothL1Loss(Module):
    """``0.5 r^2 / beta`` for ``|r| < beta``, else ``|r| - 0.5 beta`` (PyTorch ``nn.SmoothL1Loss``;
    ``HuberLoss(delta) = delta * SmoothL1Loss(beta=delta)``; ``beta = 0`` is the L1 loss).

    ``forward(predictions, targets, reduction=Reduction.MEAN)`` -> ``[1]``.
    """

    beta: float = 1.0

    def forward(self, predictions: Tensor, targets: Tensor, reduction: Reduction | str = Reduction.MEAN) -> Tensor:
        return reduce(self.forward_no_reduction(predictions, targets), reduction)

    def forward_no_reduction(self, predictions: Tensor, targets: Tensor) -> Tensor:
        same_shape("SmoothL1Loss", predictions, targets)
        a = (predictions - targets).abs()
        b = self.beta
        if b == 0.0:
            return a
        m = a.clamp_max(b)
        return m.square() * (0.5 / b) + (a - m)
