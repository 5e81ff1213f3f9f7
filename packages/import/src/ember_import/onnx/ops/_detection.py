"""``NonMaxSuppression`` (opsets 10, 11): greedy per batch and class selection of boxes by score.

The pairwise "suppresses" matrix (IoU above ``iou_threshold``, boxes of positive area) is computed for
every batch at once with Ember ops; the greedy walk down the scores (ties: the lower box index first) is a
host loop over it, as the output's length depends on the data. ``center_point_box`` 0 reads boxes as
``[y1, x1, y2, x2]`` (any two opposite corners), 1 as ``[x_center, y_center, width, height]``. Semantics and
tie-breaking follow the ONNX specification and ``onnx.reference.ops.op_non_max_suppression``; opset 11 only
widened the accepted types.
"""

from __future__ import annotations

from ember import DType, Int, Tensor

from .._context import Context
from .._errors import OnnxImportError
from .._ir import Node
from .._registry import converter


def _corners(boxes: Tensor, center: bool) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """``(x_min, x_max, y_min, y_max)`` each ``[B, N]``."""
    a, b, c, d = (p.squeeze_dim(2) for p in boxes.split(1, dim=2))
    if center:  # [x_c, y_c, w, h]
        return a - c / 2.0, a + c / 2.0, b - d / 2.0, b + d / 2.0
    return b.min_pair(d), b.max_pair(d), a.min_pair(c), a.max_pair(c)


def _suppresses(boxes: Tensor, center: bool, iou_threshold: float) -> Tensor:
    """Bool ``[B, N, N]``: box ``i`` suppresses box ``j`` (IoU > threshold, positive areas)."""
    x0, x1, y0, y1 = _corners(boxes, center)

    def pair(lo: Tensor, hi: Tensor) -> Tensor:  # the overlap length of every pair, [B, N, N]
        return hi.unsqueeze_dim(2).min_pair(hi.unsqueeze_dim(1)) - lo.unsqueeze_dim(2).max_pair(lo.unsqueeze_dim(1))

    ix, iy = pair(x0, x1), pair(y0, y1)
    inter = ix.clamp_min(0.0) * iy.clamp_min(0.0)
    area = (x1 - x0) * (y1 - y0)
    union = area.unsqueeze_dim(2) + area.unsqueeze_dim(1) - inter
    positive = area.greater(0.0)
    ok = ix.greater(0.0) & iy.greater(0.0) & positive.unsqueeze_dim(2) & positive.unsqueeze_dim(1) & union.greater(0.0)
    iou = inter / union.mask_fill(union.lower_equal(0.0), 1.0)
    return ok & iou.greater(iou_threshold)


@converter("NonMaxSuppression", since=10, static=(2, 3, 4))
def non_max_suppression(ctx: Context, node: Node, boxes: Tensor, scores: Tensor, max_out: Tensor | None = None,
                        iou: Tensor | None = None, score_threshold: Tensor | None = None) -> Tensor:
    """``NonMaxSuppression``: ``[num_selected, 3]`` int64 rows ``(batch, class, box)``."""
    limit = int(ctx.scalar(max_out, 0))
    threshold = None if score_threshold is None else float(ctx.scalar(score_threshold))
    if boxes.rank != 3 or boxes.shape[2] != 4 or scores.rank != 3 or scores.shape[0] != boxes.shape[0] \
            or scores.shape[2] != boxes.shape[1]:
        raise OnnxImportError(
            f"{node.where()}: expected boxes [batch, boxes, 4] and scores [batch, classes, boxes], got "
            f"{list(boxes.shape)} and {list(scores.shape)}."
        )
    rows: list[list[int]] = []
    if limit > 0 and boxes.shape[1] > 0:
        center = bool(node.attr("center_point_box", 0))
        sup = _suppresses(boxes.float(), center, float(ctx.scalar(iou, 0.0))).tolist()
        all_scores = scores.tolist()
        for b, per_class in enumerate(all_scores):
            for c, sc in enumerate(per_class):
                order = sorted((i for i in range(len(sc)) if threshold is None or sc[i] > threshold),
                               key=lambda i: (-sc[i], i))
                chosen: list[int] = []
                for i in order:
                    if len(chosen) >= limit:
                        break
                    if not any(sup[b][s][i] for s in chosen):
                        chosen.append(i)
                rows.extend([b, c, i] for i in chosen)
    if not rows:
        return Tensor.zeros([0, 3], ctx.device, Int).cast(DType.INT64)
    return ctx.tensor(rows, DType.INT64)
