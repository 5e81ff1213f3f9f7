"""``PoissonNllLoss`` (Burn's ``nn::loss::PoissonNllLoss``, PyTorch's ``nn.PoissonNLLLoss``)."""

from __future__ import annotations

import math

from ...backend._device import Device
from ...config import config
from ...module import Module
from ...tensor import Tensor
from .._checks import config_error
from ._common import same_shape
from ._reduction import Reduction, reduce

__all__ = ["PoissonNllLossConfig", "PoissonNllLoss"]


@config
class PoissonNllLossConfig:
    """Configuration of :class:`PoissonNllLoss` (Burn's ``PoissonNllLossConfig``).

    Args:
        log_input: predictions are log-rates (default ``True``) or rates.
        full: add Stirling's approximation of ``log(target!)`` (default ``False``).
        eps: added to rates before the log when ``log_input`` is ``False`` (default 1e-8).
        reduction: default ``Reduction.MEAN``.
    """

    log_input: bool = True
    full: bool = False
    eps: float = 1e-8
    reduction: Reduction = Reduction.MEAN

    def init(self, device: Device | None = None) -> PoissonNllLoss:
        """Raises ConfigError for ``eps <= 0``."""
        if not self.eps > 0:
            raise config_error("PoissonNllLossConfig", f"eps must be > 0, got {self.eps}.")
        return PoissonNllLoss(log_input=self.log_input, full=self.full, eps=self.eps, reduction=self.reduction)


class PoissonNllLoss(Module):
    """Negative log-likelihood of a Poisson target: ``exp(p) - t * p`` (``log_input``) or
    ``p - t * log(p + eps)``; with ``full``, plus ``t log t - t + 0.5 log(2 pi t)`` where ``t > 1``
    (PyTorch ``nn.PoissonNLLLoss``).

    ``forward(predictions, targets)``: Float tensors of one shape -> ``[1]``.
    """

    log_input: bool = True
    full: bool = False
    eps: float = 1e-8
    reduction: Reduction = Reduction.MEAN

    def forward(self, predictions: Tensor, targets: Tensor) -> Tensor:
        return reduce(self.forward_no_reduction(predictions, targets), self.reduction)

    def forward_no_reduction(self, predictions: Tensor, targets: Tensor) -> Tensor:
        same_shape("PoissonNllLoss", predictions, targets)
        if self.log_input:
            loss = predictions.exp() - targets * predictions
        else:
            loss = predictions - targets * (predictions + self.eps).log()
        if self.full:
            big = targets.greater_elem(1.0)
            t = targets.mask_fill(big.bool_not(), 1.0)
            stirling = t * t.log() - t + (t * (2.0 * math.pi)).log() * 0.5
            loss = loss + stirling.mask_fill(big.bool_not(), 0.0)
        return loss
