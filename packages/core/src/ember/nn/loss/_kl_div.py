"""``KLDivLoss``: the Kullback-Leibler divergence (PyTorch's ``nn.KLDivLoss``)."""

from __future__ import annotations

from ...backend._device import Device
from ...config import config
from ...module import Module
from ...tensor import Tensor
from ._common import same_shape
from ._reduction import Reduction, reduce

__all__ = ["KLDivLossConfig", "KLDivLoss"]


@config
class KLDivLossConfig:
    """Configuration of :class:`KLDivLoss` (``log_target`` default ``False``, PyTorch)."""

    log_target: bool = False

    def init(self, device: Device | None = None) -> KLDivLoss:
        return KLDivLoss(log_target=self.log_target)


class KLDivLoss(Module):
    """Point-wise ``target * (log(target) - input)`` where ``input`` holds log-probabilities and
    ``target`` probabilities (log-probabilities when ``log_target``: ``exp(t) * (t - input)``);
    ``target = 0`` contributes 0 (PyTorch ``nn.KLDivLoss``).

    ``forward(input, target, reduction=Reduction.BATCH_MEAN)``: Float tensors of one shape ``[batch, ...]``
    -> ``[1]``. ``BATCH_MEAN`` (sum / batch) is the true KL divergence; ``MEAN`` divides by every element
    (PyTorch's default, which it warns about).
    """

    log_target: bool = False

    def forward(self, input: Tensor, target: Tensor,  # noqa: A002 - PyTorch's name
                reduction: Reduction | str = Reduction.BATCH_MEAN) -> Tensor:
        return reduce(self.forward_no_reduction(input, target), reduction)

    def forward_no_reduction(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        same_shape("KLDivLoss", input, target, ("input", "target"))
        if self.log_target:
            return target.exp() * (target - input)
        positive = target.greater_elem(0.0)
        safe = target.mask_fill(positive.bool_not(), 1.0)
        return (target * (safe.log() - input)).mask_fill(positive.bool_not(), 0.0)
