"""``non_max_suppression``: greedy selection of boxes by score, independently for every leading index
(torchvision's ``batched_nms`` without the category trick; ONNX ``NonMaxSuppression``).

The pairwise "suppresses" matrix (IoU above the threshold, both boxes of positive area, a positive overlap in
both directions) is computed for every problem at once with tensor ops; the greedy walk down the scores is a
host loop over it, as the number of boxes kept depends on the data (a device sync, like ``argwhere``; refused
under ``ember_jax.jit``). Ties in score keep the lower box index first (a stable descending order), as the
ONNX specification and ``onnx.reference.ops.op_non_max_suppression`` do.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from .._errors import KindError, ShapeError
from .._kind import Float, Int

if TYPE_CHECKING:
    from ._tensor import Tensor

__all__ = ["non_max_suppression"]


def _suppresses(boxes: Any, iou_threshold: float) -> Any:
    """Bool ``[P, N, N]``: box ``i`` suppresses box ``j`` in each of the ``P`` problems."""
    a, b, c, d = (p.squeeze_dim(2) for p in boxes.split(1, dim=2))
    x0, x1, y0, y1 = a.min_pair(c), a.max_pair(c), b.min_pair(d), b.max_pair(d)

    def overlap(lo: Any, hi: Any) -> Any:  # the overlap length of every pair, [P, N, N]
        return hi.unsqueeze_dim(2).min_pair(hi.unsqueeze_dim(1)) - lo.unsqueeze_dim(2).max_pair(lo.unsqueeze_dim(1))

    ix, iy = overlap(x0, x1), overlap(y0, y1)
    inter = ix.clamp_min(0.0) * iy.clamp_min(0.0)
    area = (x1 - x0) * (y1 - y0)
    union = area.unsqueeze_dim(2) + area.unsqueeze_dim(1) - inter
    positive = area.greater(0.0)
    ok = ix.greater(0.0) & iy.greater(0.0) & positive.unsqueeze_dim(2) & positive.unsqueeze_dim(1) & union.greater(0.0)
    iou = inter / union.mask_fill(union.lower_equal(0.0), 1.0)
    return ok & iou.greater(iou_threshold)


def _greedy(sup: list[list[bool]], scores: list[float], threshold: float | None, limit: int) -> list[int]:
    """The boxes kept in one problem, best score first."""
    order = sorted((i for i, s in enumerate(scores) if threshold is None or s > threshold), key=lambda i: -scores[i])
    chosen: list[int] = []
    for i in order:  # sorted() is stable: equal scores keep the lower index first
        if len(chosen) >= limit:
            break
        if not any(sup[s][i] for s in chosen):
            chosen.append(i)
    return chosen


def non_max_suppression(
    boxes: Tensor,
    scores: Tensor,
    iou_threshold: float,
    score_threshold: float | None = None,
    max_output: int | None = None,
) -> Tensor:
    """The boxes greedy non-maximum suppression keeps, for each leading index of ``scores``.

    In each problem, boxes are visited by decreasing score (equal scores: lower index first); a box is kept
    unless a kept box overlaps it with an IoU above ``iou_threshold`` (boxes of zero area suppress and are
    suppressed by nothing), until ``max_output`` are kept.

    Args:
        boxes: Float ``[*box_batch, N, 4]``, two opposite corners ``(x1, y1, x2, y2)`` of each box in any order
            (IoU is the same with x and y swapped, so ``(y1, x1, y2, x2)`` works too). ``box_batch`` has the
            rank of ``batch`` and each of its dims is ``batch``'s or 1: boxes shared by several problems (the
            classes of one image) have their overlaps computed once.
        scores: Float ``[*batch, N]``.
        iou_threshold: a box overlapping a kept one by more than this is dropped.
        score_threshold: boxes scoring this or less are never kept (``None``: no threshold).
        max_output: the most boxes kept per problem (``None``: no limit; 0 or less: none).

    Returns:
        Int ``[K, len(batch) + 1]``: one row ``(*batch index, box index)`` per kept box, by batch index in C
        order, then by decreasing score (ONNX ``NonMaxSuppression``'s ``selected_indices`` for ``batch =
        [batches, classes]`` and ``box_batch = [batches, 1]``). Data-dependent size: this reads the data (a
        device sync).

    Raises:
        KindError: ``boxes`` or ``scores`` not Float.
        ShapeError: ``scores`` not ``[*batch, N]``, or ``boxes`` not ``[*box_batch, N, 4]``.
    """
    if boxes.kind is not Float or scores.kind is not Float:
        raise KindError(f"non_max_suppression: boxes and scores must be Float, got {boxes.kind} and {scores.kind}.")
    lead, box_lead = list(scores.shape[:-1]), list(boxes.shape[:-2])
    if (
        scores.rank < 1
        or boxes.rank != scores.rank + 1
        or boxes.shape[-1] != 4
        or boxes.shape[-2] != scores.shape[-1]
        or any(b not in (1, d) for b, d in zip(box_lead, lead))
    ):
        raise ShapeError(
            f"non_max_suppression: expected scores [*batch, N] and boxes [*box_batch, N, 4] (each box_batch dim "
            f"batch's or 1), got boxes {list(boxes.shape)} and scores {list(scores.shape)}."
        )
    n = scores.shape[-1]
    problems = math.prod(lead)
    limit = n if max_output is None else min(int(max_output), n)
    if limit <= 0 or n == 0 or problems == 0:
        return boxes.zeros([0, len(lead) + 1], boxes.device, Int)
    sup = _suppresses(boxes.detach().reshape([math.prod(box_lead), n, 4]), float(iou_threshold)).tolist()
    flat = scores.detach().reshape([problems, n]).tolist()
    threshold = None if score_threshold is None else float(score_threshold)
    rows: list[list[int]] = []
    for p in range(problems):
        where: list[int] = []
        q = p
        for size in reversed(lead):  # the C-order index of problem p
            where.insert(0, q % size)
            q //= size
        b = 0
        for w, size in zip(where, box_lead):  # the C-order index of its boxes (0 on a shared dim)
            b = b * size + (w if size > 1 else 0)
        rows.extend([*where, i] for i in _greedy(sup[b], flat[p], threshold, limit))
    if not rows:
        return boxes.zeros([0, len(lead) + 1], boxes.device, Int)
    return boxes.from_data(rows, boxes.device, Int)
