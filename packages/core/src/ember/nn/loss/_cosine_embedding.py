"""``CosineEmbeddingLoss`` (Burn's ``nn::loss::CosineEmbeddingLoss``, PyTorch's ``nn.CosineEmbeddingLoss``)."""

from __future__ import annotations

from ..._errors import ShapeError
from ...backend._device import Device
from ...config import config
from ...module import Module
from ...tensor import Tensor
from .._checks import check_float, check_int, config_error
from ._reduction import Reduction, reduce

__all__ = ["CosineEmbeddingLossConfig", "CosineEmbeddingLoss"]

_EPS = 1e-8


@config
class CosineEmbeddingLossConfig:
    """Configuration of :class:`CosineEmbeddingLoss` (Burn's ``CosineEmbeddingLossConfig``).

    Args:
        margin: in ``[-1, 1]`` (default 0, Burn and PyTorch).
        reduction: default ``Reduction.MEAN``.
    """

    margin: float = 0.0
    reduction: Reduction = Reduction.MEAN

    def init(self, device: Device | None = None) -> CosineEmbeddingLoss:
        """Raises ConfigError for a margin outside ``[-1, 1]``."""
        if not -1.0 <= self.margin <= 1.0:
            raise config_error("CosineEmbeddingLossConfig", f"margin must be in [-1, 1], got {self.margin}.")
        return CosineEmbeddingLoss(margin=self.margin, reduction=self.reduction)


class CosineEmbeddingLoss(Module):
    """``1 - cos(x1, x2)`` for target 1, ``max(0, cos(x1, x2) - margin)`` for target -1, with
    ``cos = x1.x2 / sqrt((|x1|^2 + eps) (|x2|^2 + eps))``, ``eps = 1e-8`` (PyTorch's formula).

    ``forward(input1, input2, target)``: Float ``[batch, dim]`` twice, Int ``[batch]`` of 1 / -1 -> ``[1]``.
    ``forward_no_reduction`` gives ``[batch]``.
    """

    margin: float = 0.0
    reduction: Reduction = Reduction.MEAN

    def forward(self, input1: Tensor, input2: Tensor, target: Tensor) -> Tensor:
        return reduce(self.forward_no_reduction(input1, input2, target), self.reduction)

    def forward_no_reduction(self, input1: Tensor, input2: Tensor, target: Tensor) -> Tensor:
        name = "CosineEmbeddingLoss"
        check_float(name, input1, "input1")
        check_float(name, input2, "input2")
        check_int(name, target, "target")
        if input1.rank != 2 or input1.shape != input2.shape or target.shape != input1.shape[:1]:
            raise ShapeError(f"{name}: expected input1 and input2 [batch, dim] and target [batch], got "
                             f"{list(input1.shape)}, {list(input2.shape)}, {list(target.shape)}.")
        dot = (input1 * input2).sum_dim(1)
        n1 = input1.square().sum_dim(1) + _EPS
        n2 = input2.square().sum_dim(1) + _EPS
        cos = (dot / (n1 * n2).sqrt()).squeeze_dim(1)
        positive = target.equal_elem(1)
        return (cos * -1.0 + 1.0).mask_where(positive.bool_not(), (cos - self.margin).clamp_min(0.0))
