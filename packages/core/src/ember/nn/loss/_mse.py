"""``MseLoss`` (Burn's ``nn::loss::MseLoss``)."""

from __future__ import annotations

from ...module import Module
from ...tensor import Tensor
from ._common import same_shape
from ._reduction import Reduction, reduce

__all__ = ["MseLoss"]


class MseLoss(Module):
    """Mean squared error ``(predictions - targets)^2`` (Burn's ``MseLoss``, PyTorch ``nn.MSELoss``).

    ``forward(predictions, targets, reduction=Reduction.MEAN)``: two Float tensors of one shape ->
    ``[1]``. ``forward_no_reduction`` keeps the element-wise values.
    """

    def forward(self, predictions: Tensor, targets: Tensor, reduction: Reduction | str = Reduction.MEAN) -> Tensor:
        return reduce(self.forward_no_reduction(predictions, targets), reduction)

    def forward_no_reduction(self, predictions: Tensor, targets: Tensor) -> Tensor:
        same_shape("MseLoss", predictions, targets)
        return (predictions - targets).square()
