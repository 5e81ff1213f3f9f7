"""Sampling at arbitrary positions: ``GridSample`` (opsets 16, 20, 22) and ``AffineGrid`` (opset 20), and the
sampler that ``DeformConv`` and ``RoiAlign`` share.

:func:`sample` reads ``x`` ``[N, C, *spatial]`` at Float pixel coordinates (one tensor ``[N, *points]`` per
spatial dim) with nearest, linear or cubic (Keys, ``A = -0.75``) taps; each tap is a :meth:`Tensor.gather` of
the flattened input, weighted and summed, so it runs on every backend and is differentiable in ``x`` and in
the coordinates. Out-of-range taps follow ``padding``: ``zeros`` (the tap counts 0), ``border`` (clamped) or
``reflection`` (mirrored). Formulas: the ONNX reference ``onnx/reference/ops/op_grid_sample.py`` (PyTorch's
``grid_sampler``), ``op_affine_grid.py``; except that cubic sampling with ``border``/``reflection`` clamps or
mirrors each tap rather than the coordinate, as PyTorch and onnxruntime do (the reference clamps the
coordinate first, which gives other values near the border).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

from ember import Tensor

from .._context import Context
from .._errors import OnnxImportError
from .._ir import Node
from .._registry import converter
from .._validate import validating
from ..rules import affine_grid_axis

__all__ = ["sample", "grid_sample", "affine_grid"]

_A = -0.75


def _reflect(c: Tensor, lo: float, hi: float) -> Tensor:
    """``c`` mirrored at ``lo`` and ``hi`` until inside ``[lo, hi]`` (the reference's ``_gs_reflect``)."""
    span = hi - lo
    if span <= 0:
        return c.zeros_like() + lo
    below, above = c.lower(lo), c.greater(hi)
    dx = (c * -1 + lo).clamp_min(0) + (c - hi).clamp_min(0)
    n = (dx / span).floor()
    r = dx - n * span
    odd = (n - (n / 2).floor() * 2).greater(0.5)
    low_side = r + lo   # reached after an even number of reflections from below / odd from above
    high_side = r * -1 + hi
    from_below = low_side.mask_where(odd, high_side)
    from_above = high_side.mask_where(odd, low_side)
    return c.mask_where(below, from_below).mask_where(above, from_above)


def _taps(c: Tensor, mode: str) -> list[tuple[Tensor, Tensor | None]]:
    """``(integral position, weight)`` taps of coordinate ``c`` (weight ``None`` for a single tap)."""
    if mode == "nearest":
        return [(c, None)]
    f = c.floor()
    t = c - f
    if mode == "linear":
        return [(f, t * -1 + 1), (f + 1, t)]
    u = t * -1 + 1
    w0 = ((t + 1) * _A - 5 * _A) * (t + 1) * (t + 1) + 8 * _A * (t + 1) - 4 * _A
    w1 = (t * (_A + 2) - (_A + 3)) * t * t + 1
    w2 = (u * (_A + 2) - (_A + 3)) * u * u + 1
    w3 = ((u + 1) * _A - 5 * _A) * (u + 1) * (u + 1) + 8 * _A * (u + 1) - 4 * _A
    return [(f - 1, w0), (f, w1), (f + 1, w2), (f + 2, w3)]


def sample(x: Tensor, coords: Sequence[Tensor], mode: str, padding: str,
           bounds: Sequence[tuple[float, float]] | None = None) -> Tensor:
    """``x`` ``[N, C, *spatial]`` read at pixel ``coords`` (``[N, *points]`` each, one per spatial dim in
    order) -> ``[N, C, *points]``. ``mode``: ``nearest`` (coordinates taken as they are, truncated), ``linear``
    or ``cubic``; ``padding``: ``zeros``, ``border`` or ``reflection`` (mirrored at ``bounds[d]``, default
    ``(-0.5, n - 0.5)``) for taps outside the input."""
    n, c = x.shape[0], x.shape[1]
    sizes = x.shape[2:]
    points = list(coords[0].shape[1:])
    flat_x = x.reshape([n, c, -1])
    per_dim = [_taps(cd, mode) for cd in coords]
    out: Tensor | None = None
    for combo in itertools.product(*per_dim):
        flat: Tensor | None = None
        weight: Tensor | None = None
        for d, (pos, w) in enumerate(combo):
            size = sizes[d]
            if padding == "reflection":
                lo, hi = bounds[d] if bounds is not None else (-0.5, size - 0.5)
                pos = _reflect(pos, lo, hi)
            elif padding == "zeros":
                inside = (pos.greater_equal(0) & pos.lower_equal(size - 1)).float().cast(x.dtype)
                w = inside if w is None else w * inside
            idx = pos.trunc().clamp(0, size - 1).int()
            flat = idx if flat is None else flat * size + idx
            if w is not None:
                weight = w if weight is None else weight * w
        assert flat is not None
        idx3 = flat.reshape([n, 1, -1])
        gathered = flat_x.gather(2, idx3.expand([n, c, idx3.shape[2]]))
        term = gathered if weight is None else gathered * weight.reshape([n, 1, -1])
        out = term if out is None else out + term
    assert out is not None
    return out.reshape([n, c] + points)


def _str(node: Node, name: str, default: str) -> str:
    v = node.attr(name, default)
    return v.decode() if isinstance(v, bytes) else str(v)


_MODES = {"bilinear": "linear", "linear": "linear", "nearest": "nearest", "bicubic": "cubic", "cubic": "cubic"}


@converter("GridSample", since=16)
def grid_sample(ctx: Context, node: Node, x: Tensor, grid: Tensor) -> Tensor:
    """``GridSample`` (16: 2-D, modes bilinear/nearest/bicubic; 20 and 22: N-D, modes linear/nearest/cubic):
    ``X`` ``[N, C, *spatial]`` sampled at the normalized ``grid`` ``[N, *out, nd]`` (last dim ``x, y[, z]``:
    width first), with ``padding_mode`` and ``align_corners`` (PyTorch ``F.grid_sample``)."""
    mode = _MODES.get(_str(node, "mode", "linear" if ctx.opset >= 20 else "bilinear"))
    padding = _str(node, "padding_mode", "zeros")
    align = bool(node.attr("align_corners", 0))
    nd = x.rank - 2
    if mode is None or padding not in ("zeros", "border", "reflection"):
        raise OnnxImportError(f"{node.where()}: unsupported mode {node.attr('mode', '')!r} or padding_mode "
                              f"{padding!r}; expected linear/nearest/cubic and zeros/border/reflection.")
    if nd < 1 or grid.rank != nd + 2 or grid.shape[-1] != nd or grid.shape[0] != x.shape[0]:
        raise OnnxImportError(f"{node.where()}: expected X [N, C, *spatial] and grid [N, *out, {nd}], got "
                              f"{list(x.shape)} and {list(grid.shape)}.")
    g = grid.cast(x.dtype) if grid.dtype != x.dtype else grid
    coords: list[Tensor] = []
    bounds: list[tuple[float, float]] = []
    for d in range(nd):
        size = x.shape[2 + d]
        u = g.slice([None] * (nd + 1) + [nd - 1 - d]).reshape(list(grid.shape[:-1]))
        c = (u + 1) * ((size - 1) / 2) if align else ((u + 1) * size - 1) / 2
        lo, hi = (0.0, size - 1.0) if align else (-0.5, size - 0.5)
        if mode == "nearest":
            c = c.round()
        if padding != "zeros" and mode != "cubic":  # coordinates beyond the border: clamped or mirrored
            outside = c.lower(lo) | c.greater(hi)
            c = c.mask_where(outside, c.clamp(0, size - 1) if padding == "border" else _reflect(c, lo, hi))
        coords.append(c)
        bounds.append((lo, hi))
    return sample(x, coords, mode, padding, bounds)


def _base_grid(sizes: Sequence[int], align: bool, like: Tensor) -> Tensor:
    """Homogeneous normalized positions ``[prod(sizes), nd + 1]``, rows ``(x, y[, z], 1)`` in row-major order
    of ``sizes`` (``op_affine_grid.py``), in ``like``'s dtype on its device: per dim ``start + i * step``
    (:func:`~..rules.affine_grid_axis`), broadcast over the others. The sizes may be read from the data."""
    nd = len(sizes)
    dev, dtype = like.device, like.dtype
    cols = []
    for k in reversed(range(nd)):  # x varies along the last dim
        start, step = affine_grid_axis(sizes[k], align)
        pos = Tensor.arange(0, sizes[k], dev).float().cast(dtype) * step + start
        cols.append(pos.reshape([sizes[k] if i == k else 1 for i in range(nd)]).expand(list(sizes)))
    cols.append(Tensor.ones(list(sizes), dev).cast(dtype))
    return Tensor.stack(cols, nd).reshape([math.prod(sizes), nd + 1])


@converter("AffineGrid", since=20, static=(1,))
def affine_grid(ctx: Context, node: Node, theta: Tensor, size: Tensor) -> Tensor:
    """``AffineGrid`` (opset 20): ``theta`` ``[N, 2, 3]`` (2-D) or ``[N, 3, 4]`` (3-D) applied to the
    normalized grid of ``size`` ``[N, C, H, W]`` / ``[N, C, D, H, W]`` -> ``[N, H, W, 2]`` / ``[N, D, H, W, 3]``
    (PyTorch ``F.affine_grid``)."""
    if theta.rank == 3 and size.rank == 1:  # a size consistent with theta for a trace's stand-in
        ctx.example(size, [theta.shape[0], 1, *range(2, size.shape[0])])
    shape = ctx.ints(size) or []
    nd = len(shape) - 2
    with validating():  # only rejects a bad model (the sizes may be read from the data)
        bad = nd not in (2, 3) or list(theta.shape) != [shape[0], nd, nd + 1]
    if bad:
        raise OnnxImportError(f"{node.where()}: expected size [N, C, H, W] or [N, C, D, H, W] and theta "
                              f"[N, nd, nd + 1], got size {shape} and theta {list(theta.shape)}.")
    base = _base_grid(shape[2:], bool(node.attr("align_corners", 0)), theta)
    grid = base.unsqueeze_dim(0).matmul(theta.swap_dims(1, 2))  # [N, prod, nd]
    return grid.reshape([theta.shape[0], *shape[2:], nd])

