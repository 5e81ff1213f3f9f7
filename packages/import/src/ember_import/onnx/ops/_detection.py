"""``NonMaxSuppression`` (opsets 10, 11): greedy per batch and class selection of boxes by score.

One call of :func:`ember.tensor.functional.non_max_suppression` over the ``[batch, class]`` problems (the boxes
of a batch shared by its classes, their overlaps computed once), whose output size depends on the data.
``center_point_box`` 0 reads boxes as ``[y1, x1, y2, x2]`` (any two opposite corners, which the function takes
as they are: IoU is the same with x and y swapped), 1 as ``[x_center, y_center, width, height]`` (converted to
corners first). Semantics and tie-breaking follow the ONNX specification and
``onnx.reference.ops.op_non_max_suppression``; opset 11 only widened the accepted types.
"""

from __future__ import annotations

from ember import DType, Tensor
from ember.tensor import functional

from .._context import Context
from .._errors import OnnxImportError
from .._ir import Node
from .._registry import converter
from ._elementwise_util import to_dtype


def _corners(boxes: Tensor) -> Tensor:
    """``[x_c, y_c, w, h]`` boxes as ``[x1, y1, x2, y2]`` corners."""
    center, size = boxes.narrow(2, 0, 2), boxes.narrow(2, 2, 2) / 2.0
    return Tensor.cat([center - size, center + size], 2)


@converter("NonMaxSuppression", since=10, static=(2, 3, 4))
def non_max_suppression(
    ctx: Context,
    node: Node,
    boxes: Tensor,
    scores: Tensor,
    max_out: Tensor | None = None,
    iou: Tensor | None = None,
    score_threshold: Tensor | None = None,
) -> Tensor:
    """``NonMaxSuppression``: ``[num_selected, 3]`` int64 rows ``(batch, class, box)``; ``max_output_boxes_per_class``
    0 or omitted selects none."""
    if (
        boxes.rank != 3
        or boxes.shape[2] != 4
        or scores.rank != 3
        or scores.shape[0] != boxes.shape[0]
        or scores.shape[2] != boxes.shape[1]
    ):
        raise OnnxImportError(
            f"{node.where()}: expected boxes [batch, boxes, 4] and scores [batch, classes, boxes], got "
            f"{list(boxes.shape)} and {list(scores.shape)}."
        )
    corners = _corners(boxes) if node.attr("center_point_box", 0) else boxes
    threshold = None if score_threshold is None else ctx.float_scalar(score_threshold)
    selected = functional.non_max_suppression(  # the boxes of an image shared by its classes: [batch, 1, N, 4]
        corners.unsqueeze_dim(1), scores, ctx.float_scalar(iou, 0.0), threshold, ctx.int_scalar(max_out, 0)
    )
    return to_dtype(selected, DType.INT64)
