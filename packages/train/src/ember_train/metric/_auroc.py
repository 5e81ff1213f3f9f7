"""``AurocMetric``: area under the ROC curve of a binary classifier (Burn's ``AurocMetric``)."""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from ._base import DeviceMetric, MetricMetadata
from ._inputs import AurocInput

__all__ = ["AurocMetric", "auroc"]


def auroc(scores: np.ndarray, labels: np.ndarray) -> float:
    """AUROC by the Mann–Whitney U statistic with average ranks for ties (Hanley & McNeil, 1982):
    ``(sum of positive ranks - P(P+1)/2) / (P·N)``. NaN when the batch has a single class."""
    scores = np.asarray(scores, dtype=np.float64).reshape(-1)
    labels = np.asarray(labels).reshape(-1) != 0
    p = int(labels.sum())
    n = labels.size - p
    if p == 0 or n == 0:
        return math.nan
    order = np.argsort(scores, kind="mergesort")
    s = scores[order]
    ranks = np.empty(s.size, dtype=np.float64)
    # average ranks over runs of equal scores
    bounds = np.flatnonzero(np.diff(s)) + 1
    starts = np.concatenate([[0], bounds])
    ends = np.concatenate([bounds, [s.size]])
    avg = (starts + ends + 1) / 2.0  # 1-based average rank of each run
    ranks[order] = np.repeat(avg, ends - starts)
    return float((ranks[labels].sum() - p * (p + 1) / 2.0) / (p * n))


class AurocMetric(DeviceMetric):
    """AUROC of each batch, a fraction in [0, 1] (Burn's ``AurocMetric``; batches with one class give NaN
    and are left out of the epoch mean). It ranks scores on the host (one transfer per step).

    Input: :class:`AurocInput` (``predictions`` ``[batch, 2]``: column 1 is the positive score, or
    ``[batch]``; ``targets`` Int ``[batch]`` of 0/1).
    """

    input_type: ClassVar[type] = AurocInput
    higher_is_better: ClassVar[bool | None] = True

    def name(self) -> str:
        return "AUROC"

    def compute(self, item: AurocInput, metadata: MetricMetadata) -> tuple[Any, Any]:
        pred = item.predictions.to_numpy()
        if pred.ndim == 2:
            if pred.shape[1] != 2:
                raise ValueError(f"AurocMetric: predictions must be [batch, 2] or [batch], got {list(pred.shape)}.")
            pred = pred[:, 1]
        targets = item.targets.to_numpy()
        return auroc(pred, targets), int(targets.size)
