"""``AccuracyMetric`` and ``TopKAccuracyMetric`` (Burn's, in percent)."""

from __future__ import annotations

import math
from typing import Any, ClassVar

from ._base import DeviceMetric, MetricMetadata
from ._inputs import AccuracyInput, TopKAccuracyInput

__all__ = ["AccuracyMetric", "TopKAccuracyMetric"]


def _pad_mask(targets: Any, pad_token: int | None) -> tuple[Any, Any]:
    """``(keep mask [batch] Bool or None, number of kept items: an int or an Int [1] tensor)``."""
    n = int(targets.shape[0])
    if pad_token is None:
        return None, n
    keep = targets.not_equal_elem(pad_token)
    return keep, keep.int().sum()


class AccuracyMetric(DeviceMetric):
    """Share of items whose arg-max output equals the target, in percent (Burn's ``AccuracyMetric``).

    ``100 * sum(argmax(outputs, 1) == targets) / batch``; with ``with_pad_token(p)`` items whose target is
    ``p`` are left out of numerator and denominator (sequence padding), as Burn.
    Input: :class:`AccuracyInput` (outputs ``[batch, num_classes]``, targets Int ``[batch]``).
    """

    input_type: ClassVar[type] = AccuracyInput
    higher_is_better: ClassVar[bool | None] = True
    unit: ClassVar[str] = "%"
    precision: ClassVar[int] = 2

    def __init__(self) -> None:
        super().__init__()
        self.pad_token: int | None = None

    def with_pad_token(self, index: int) -> AccuracyMetric:
        """Ignore items whose target is ``index``."""
        self.pad_token = int(index)
        return self

    def name(self) -> str:
        return "Accuracy"

    def compute(self, item: AccuracyInput, metadata: MetricMetadata) -> tuple[Any, Any]:
        targets = item.targets.reshape([-1])
        pred = item.outputs.argmax(1).reshape([-1])
        correct = pred.equal(targets)
        keep, total = _pad_mask(targets, self.pad_token)
        if keep is not None:
            correct = correct.bool_and(keep)
        return correct.int().sum(), total

    #: correct and total counts: summed over data-parallel ranks
    distributed_reduce: ClassVar[str] = "sum"

    def finalize(self, value: float, weight: float) -> tuple[float, float]:
        return (100.0 * value / weight if weight else math.nan), weight


class TopKAccuracyMetric(DeviceMetric):
    """Share of items whose target is among the ``k`` highest outputs, in percent (Burn's
    ``TopKAccuracyMetric``); ``with_pad_token`` as :class:`AccuracyMetric`.

    Raises:
        ValueError: ``k < 1``.
    """

    input_type: ClassVar[type] = TopKAccuracyInput
    higher_is_better: ClassVar[bool | None] = True
    unit: ClassVar[str] = "%"
    precision: ClassVar[int] = 2

    def __init__(self, k: int) -> None:
        super().__init__()
        if not isinstance(k, int) or k < 1:
            raise ValueError(f"TopKAccuracyMetric: k must be an int >= 1, got {k!r}.")
        self.k = k
        self.pad_token: int | None = None

    def with_pad_token(self, index: int) -> TopKAccuracyMetric:
        self.pad_token = int(index)
        return self

    def name(self) -> str:
        return f"Top-K Accuracy @ TopK({self.k})"

    def compute(self, item: TopKAccuracyInput, metadata: MetricMetadata) -> tuple[Any, Any]:
        targets = item.targets.reshape([-1])
        k = min(self.k, int(item.outputs.shape[1]))
        top = item.outputs.argtopk(k, 1)                           # [batch, k]
        hit = top.equal(targets.reshape([-1, 1]).repeat_dim(1, k)).int().sum_dim(1).reshape([-1])  # [batch]
        keep, total = _pad_mask(targets, self.pad_token)
        if keep is not None:
            hit = hit.mul(keep.int())
        return hit.sum(), total

    #: correct and total counts: summed over data-parallel ranks
    distributed_reduce: ClassVar[str] = "sum"

    def finalize(self, value: float, weight: float) -> tuple[float, float]:
        return (100.0 * value / weight if weight else math.nan), weight
