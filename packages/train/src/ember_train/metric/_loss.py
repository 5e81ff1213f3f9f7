"""``LossMetric`` (Burn's): the step's loss."""

from __future__ import annotations

from typing import Any, ClassVar

from ._base import DeviceMetric, MetricMetadata
from ._inputs import LossInput

__all__ = ["LossMetric"]


class LossMetric(DeviceMetric):
    """The loss of each step; the epoch value is the mean over iterations weighted by batch size when the
    adaptor gives it (Burn weights every iteration by 1). Input: :class:`LossInput`."""

    input_type: ClassVar[type] = LossInput
    higher_is_better: ClassVar[bool | None] = False

    def name(self) -> str:
        return "Loss"

    def compute(self, item: LossInput, metadata: MetricMetadata) -> tuple[Any, Any]:
        t = item.tensor
        if t.num_elements() != 1:
            t = t.mean()
        return t.reshape([1]), (1 if item.batch_size is None else item.batch_size)
