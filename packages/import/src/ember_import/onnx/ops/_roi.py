"""``RoiAlign`` (opsets 10, 16, 22): bilinear pooling of regions of interest (Mask R-CNN).

Each region ``[x1, y1, x2, y2]`` (scaled by ``spatial_scale``, shifted by half a pixel in the ``half_pixel``
transform, the default from opset 16; opset 10 behaves as ``output_half_pixel``) is split into
``output_height x output_width`` bins, each sampled on a ``sampling_ratio``-square grid (``ceil(bin size)``
per dim when ``sampling_ratio`` is 0). Samples outside ``[-1, size]`` count 0; others are read bilinearly with
coordinates clamped to the input. ``avg`` averages the samples; ``max`` takes the largest weighted corner of
each sample and the largest over the bin, as the ONNX reference and onnxruntime do. Source:
``onnx/reference/ops/op_roi_align.py``.

Everything is computed with tensor ops on the region coordinates, except that ``sampling_ratio`` 0 reads the
regions on the host to size the sampling grid (refused under a compiled step).
"""

from __future__ import annotations

import math

from ember import Tensor

from .._context import Context
from .._errors import OnnxImportError
from .._ir import Node
from .._registry import converter

__all__ = ["roi_align"]


def _axis(ctx: Context, start: Tensor, length: Tensor, grid: Tensor, bins: int, samples: int, dim: int) -> Tensor:
    """Sample positions ``[R, 1, ..]`` along one axis: ``start + p * bin + (i + 0.5) * bin / grid`` with ``p``
    on output dim ``1 + dim`` and ``i`` on sample dim ``3 + dim`` of ``[R, oh, ow, gh, gw]``."""
    shape_p = [1, 1, 1, 1, 1]
    shape_p[1 + dim] = bins
    shape_i = [1, 1, 1, 1, 1]
    shape_i[3 + dim] = samples
    p = ctx.tensor(list(range(bins)), start.dtype, start.device).reshape(shape_p)
    i = ctx.tensor([k + 0.5 for k in range(samples)], start.dtype, start.device).reshape(shape_i)
    b = (length / bins).reshape([-1, 1, 1, 1, 1])
    return start.reshape([-1, 1, 1, 1, 1]) + p * b + i * b / grid.reshape([-1, 1, 1, 1, 1])


@converter("RoiAlign", since=10)
def roi_align(ctx: Context, node: Node, x: Tensor, rois: Tensor, batch_indices: Tensor) -> Tensor:
    """``RoiAlign``: ``X`` ``[N, C, H, W]``, ``rois`` ``[R, 4]``, ``batch_indices`` ``[R]`` ->
    ``[R, C, output_height, output_width]``."""
    if x.rank != 4 or rois.rank != 2 or rois.shape[1] != 4:
        raise OnnxImportError(f"{node.where()}: expected X [N, C, H, W] and rois [R, 4], got {list(x.shape)} and "
                              f"{list(rois.shape)}.")
    ctm = node.attr("coordinate_transformation_mode", "half_pixel" if ctx.opset >= 16 else "output_half_pixel")
    half = (ctm.decode() if isinstance(ctm, bytes) else str(ctm)) == "half_pixel"
    mode = node.attr("mode", "avg")
    mode = mode.decode() if isinstance(mode, bytes) else str(mode)
    oh, ow = int(node.attr("output_height", 1)), int(node.attr("output_width", 1))
    ratio = int(node.attr("sampling_ratio", 0))
    scale = float(node.attr("spatial_scale", 1.0))
    r_count, c = rois.shape[0], x.shape[1]
    h, w = x.shape[2], x.shape[3]
    r = (rois.cast(x.dtype) if rois.dtype != x.dtype else rois) * scale - (0.5 if half else 0.0)
    x1, y1, x2, y2 = (r.slice([None, i]).reshape([-1]) for i in range(4))
    rw, rh = x2 - x1, y2 - y1
    if not half:
        rw, rh = rw.clamp_min(1.0), rh.clamp_min(1.0)
    if ratio > 0:
        gh = gw = ratio
        grid_h = grid_w = rh.zeros_like() + ratio
    else:
        sizes = ctx.floats(rh.reshape([-1])) or [], ctx.floats(rw.reshape([-1])) or []
        counts_h = [max(1, math.ceil(v / oh)) for v in sizes[0]]
        counts_w = [max(1, math.ceil(v / ow)) for v in sizes[1]]
        gh, gw = max(counts_h, default=1), max(counts_w, default=1)
        grid_h = ctx.tensor(counts_h, x.dtype, x.device)
        grid_w = ctx.tensor(counts_w, x.dtype, x.device)
    ys = _axis(ctx, y1, rh, grid_h, oh, gh, 0)  # [R, oh, 1, gh, 1]
    xs = _axis(ctx, x1, rw, grid_w, ow, gw, 1)  # [R, 1, ow, 1, gw]
    shape = [r_count, oh, ow, gh, gw]
    inside = (ys.greater_equal(-1.0) & ys.lower_equal(float(h))).expand(shape) & (
        xs.greater_equal(-1.0) & xs.lower_equal(float(w))).expand(shape)
    if ratio <= 0:  # samples beyond a region's own grid
        iy = ctx.tensor(list(range(gh)), x.dtype, x.device).reshape([1, 1, 1, gh, 1])
        ix = ctx.tensor(list(range(gw)), x.dtype, x.device).reshape([1, 1, 1, 1, gw])
        used = iy.lower(grid_h.reshape([-1, 1, 1, 1, 1])).expand(shape) & ix.lower(
            grid_w.reshape([-1, 1, 1, 1, 1])).expand(shape)
    else:
        used = None
    ys, xs = ys.clamp(0, h - 1).expand(shape), xs.clamp(0, w - 1).expand(shape)
    y0, x0 = ys.floor(), xs.floor()
    ly, lx = ys - y0, xs - x0
    y1i = (y0 + 1).clamp_max(h - 1)
    x1i = (x0 + 1).clamp_max(w - 1)
    weight_mask = inside.float().cast(x.dtype)
    planes = x.reshape([x.shape[0], c, h * w]).take(0, batch_indices.int().reshape([-1]))  # [R, C, H * W]
    values = []
    for yi, wy in ((y0, ly * -1 + 1), (y1i, ly)):
        for xi, wx in ((x0, lx * -1 + 1), (x1i, lx)):
            idx = (yi * w + xi).int().reshape([r_count, 1, -1])
            v = planes.gather(2, idx.expand([r_count, c, idx.shape[2]]))
            values.append(v * (wy * wx * weight_mask).reshape([r_count, 1, -1]))
    out = [r_count, c, oh, ow, gh * gw]
    if mode == "avg":
        total = (values[0] + values[1] + values[2] + values[3]).reshape([r_count, c, oh, ow, gh, gw])
        if used is not None:
            total = total * used.float().cast(x.dtype).reshape([r_count, 1, oh, ow, gh, gw])
        count = (grid_h * grid_w).clamp_min(1.0).reshape([-1, 1, 1, 1])
        return total.sum_dims([4, 5]).reshape([r_count, c, oh, ow]) / count
    if mode != "max":
        raise OnnxImportError(f"{node.where()}: mode must be avg or max, got {mode!r}.")
    best = values[0].max_pair(values[1]).max_pair(values[2]).max_pair(values[3]).reshape(out)
    if used is not None:
        best = best.mask_fill(used.bool_not().reshape([r_count, 1, oh, ow, gh * gw]).expand(out), float("-inf"))
    return best.max_dim(4).reshape([r_count, c, oh, ow])
