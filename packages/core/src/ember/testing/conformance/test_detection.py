"""``functional.non_max_suppression`` against hand-computed selections (the ONNX operator's documented cases)
and a float64 numpy greedy reference on random boxes."""

from __future__ import annotations

import numpy as np
import pytest

from ember import Int, KindError, ShapeError, Tensor
from ember.tensor import functional as F
from ember.testing.conformance._shape_helpers import check, raises

# the boxes of ONNX's NonMaxSuppression examples, (y1, x1, y2, x2)
BOXES = [
    [0.0, 0.0, 1.0, 1.0],
    [0.0, 0.1, 1.0, 1.1],
    [0.0, -0.1, 1.0, 0.9],
    [0.0, 10.0, 1.0, 11.0],
    [0.0, 10.1, 1.0, 11.1],
    [0.0, 100.0, 1.0, 101.0],
]
SCORES = [0.9, 0.75, 0.6, 0.95, 0.5, 0.3]


def _reference(
    boxes: np.ndarray, scores: np.ndarray, iou: float, score_threshold: float | None, limit: int
) -> np.ndarray:
    """Greedy NMS in float64 numpy, one problem per leading index."""
    lead, n = scores.shape[:-1], scores.shape[-1]
    rows = []
    for where in np.ndindex(*lead):
        b, s = boxes[where].astype(np.float64), scores[where].astype(np.float64)
        lo, hi = np.minimum(b[:, :2], b[:, 2:]), np.maximum(b[:, :2], b[:, 2:])
        area = np.prod(hi - lo, axis=1)
        kept: list[int] = []
        for i in sorted(range(n), key=lambda i: (-s[i], i)):
            if len(kept) >= limit or (score_threshold is not None and s[i] <= score_threshold):
                continue
            ov = np.minimum(hi[kept], hi[i]) - np.maximum(lo[kept], lo[i])
            inter = np.prod(np.clip(ov, 0.0, None), axis=1)
            union = area[kept] + area[i] - inter
            iou_i = inter / np.where(union > 0, union, 1)
            hit = (ov > 0).all(axis=1) & (area[kept] > 0) & (area[i] > 0) & (iou_i > iou)
            if not hit.any():
                kept.append(i)
        rows += [[*where, i] for i in kept]
    return np.asarray(rows, dtype=np.int64).reshape(-1, len(lead) + 1)


@pytest.mark.parametrize(
    ("iou", "score_threshold", "limit", "expected"),
    [
        (0.5, 0.0, 3, [[3], [0], [5]]),  # suppress by IoU
        (0.5, 0.4, 3, [[3], [0]]),  # and by score
        (0.5, None, 2, [[3], [0]]),  # limit
        (0.5, None, 0, np.zeros((0, 1))),
        (1.0, None, 10, [[3], [0], [1], [2], [4], [5]]),  # nothing overlaps by more than 1
    ],
)
def test_non_max_suppression_documented_cases(f64_device, iou, score_threshold, limit, expected):
    boxes, scores = Tensor.from_data(BOXES, f64_device), Tensor.from_data(SCORES, f64_device)
    got = F.non_max_suppression(boxes, scores, iou, score_threshold, limit)
    check(got, np.asarray(expected, dtype=np.int64), Int)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_non_max_suppression_random_batches(f64_device, seed):
    rng = np.random.default_rng(seed)
    centers = rng.uniform(0, 2, (2, 3, 12, 2))
    corners = np.concatenate([centers, centers + rng.uniform(-2.0, 2.0, (2, 3, 12, 2))], axis=-1)
    corners[0, 0, 0] = [1.0, 1.0, 1.0, 3.0]  # zero area
    scores = rng.choice([0.1, 0.5, 0.5, 0.8, 0.9], (2, 3, 12))  # ties
    b, s = Tensor.from_data(corners, f64_device), Tensor.from_data(scores, f64_device)
    shared = Tensor.from_data(corners[:, :1], f64_device)  # [2, 1, 12, 4]: one set of boxes per batch
    for iou, thr, limit in ((0.3, None, 100), (0.05, None, 100), (0.0, 0.4, 3), (0.7, 0.1, 5)):
        got = F.non_max_suppression(b, s, iou, thr, limit)
        check(got, _reference(corners, scores, iou, thr, limit), Int)
        got = F.non_max_suppression(shared, s, iou, thr, limit)
        check(got, _reference(np.broadcast_to(corners[:, :1], corners.shape), scores, iou, thr, limit), Int)


def test_non_max_suppression_errors(device):
    boxes = Tensor.from_data(BOXES, device)
    raises(ShapeError, "non_max_suppression", F.non_max_suppression, boxes, Tensor.from_data([0.5], device), 0.5)
    raises(
        ShapeError,
        "non_max_suppression",
        F.non_max_suppression,
        boxes.narrow(1, 0, 3),
        Tensor.from_data(SCORES, device),
        0.5,
    )
    raises(
        ShapeError,
        "non_max_suppression",
        F.non_max_suppression,
        Tensor.from_data(np.zeros((2, 6, 4)), device),
        Tensor.from_data(np.zeros((3, 6)), device),
        0.5,
    )
    raises(KindError, "non_max_suppression", F.non_max_suppression, boxes.int(), Tensor.from_data(SCORES, device), 0.5)
    empty = F.non_max_suppression(boxes.narrow(0, 0, 0), Tensor.from_data(SCORES, device).narrow(0, 0, 0), 0.5)
    assert empty.shape == (0, 1) and empty.kind is Int
