"""``HammingScore`` (Burn's): share of correct labels in multi-label classification."""

from __future__ import annotations

from typing import Any, ClassVar

from ember.tensor import activation

from ._base import DeviceMetric, MetricMetadata
from ._inputs import HammingScoreInput

__all__ = ["HammingScore"]


class HammingScore(DeviceMetric):
    """``mean(pred == targets)`` over ``[batch, num_classes]`` with ``pred = sigmoid(outputs) > threshold``
    (Burn's ``HammingScore``: threshold 0.5, sigmoid on), a fraction in [0, 1].

    Args:
        threshold: decision threshold (default 0.5, Burn's).
        sigmoid: apply a sigmoid to the outputs first (default ``True``: outputs are logits).
    """

    input_type: ClassVar[type] = HammingScoreInput
    higher_is_better: ClassVar[bool | None] = True

    def __init__(self, threshold: float = 0.5, sigmoid: bool = True) -> None:
        super().__init__()
        self.threshold = float(threshold)
        self.sigmoid = bool(sigmoid)

    def with_threshold(self, threshold: float) -> HammingScore:
        self.threshold = float(threshold)
        return self

    def with_sigmoid(self, sigmoid: bool) -> HammingScore:
        self.sigmoid = bool(sigmoid)
        return self

    def name(self) -> str:
        return "Hamming Score"

    def compute(self, item: HammingScoreInput, metadata: MetricMetadata) -> tuple[Any, Any]:
        out = activation.sigmoid(item.outputs) if self.sigmoid else item.outputs
        pred = out.greater_elem(self.threshold)
        correct = pred.equal(item.targets.bool()).float().mean()
        return correct.reshape([1]), int(item.outputs.shape[0])
