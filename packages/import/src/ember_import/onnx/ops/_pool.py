"""Pooling: ``MaxPool``, ``AveragePool``, ``LpPool``, ``GlobalAveragePool``, ``GlobalMaxPool``, ``GlobalLpPool``
and ``MaxUnpool``.

Opsets: AveragePool 1-22 (``count_include_pad`` from 7, ``ceil_mode`` from 10, ``dilations`` from 19), MaxPool
1-22 (``Indices`` and ``storage_order`` from 8, ``ceil_mode``/``dilations`` from 10, int8/uint8 from 12),
LpPool 1-22 (``p`` a float at 1, an int from 2; ``ceil_mode``/``dilations`` from 18), MaxUnpool 9-22. Absent
attributes default to the earlier behaviour, so one converter serves every version.

Output sizes, the ceil-mode rule (the last window must start inside the input or its left padding) and the
average's divisor follow the ONNX reference implementation (``onnx/reference/ops/op_pool_common.py``): with
``count_include_pad`` the divisor counts the window's elements inside the input and its explicit pads,
otherwise only those inside the input.

1-D and 2-D pools whose pads Ember's (PyTorch's) ``max_pool*`` / ``avg_pool*`` express (symmetric, at most half
the kernel, Float input) use them; every other case pads explicitly and takes windows with
:meth:`Tensor.unfold` along each spatial dim, any number of dims.
"""

from __future__ import annotations

import math
from typing import Any

from ember import DType, Float, Tensor
from ember.tensor import functional as M

from .. import rules
from .._context import Context
from .._errors import OnnxImportError
from .._ir import Node
from .._registry import converter
from ._late import late
from ._spatial import Geometry, geometry, pad_or_crop, spatial_rank

__all__ = ["max_pool", "average_pool", "lp_pool", "max_unpool"]

_INT_MIN = {DType.INT8: -(2**7), DType.INT16: -(2**15), DType.INT32: -(2**31), DType.INT64: -(2**63)}


def _pool_geometry(node: Node, x: Tensor) -> tuple[Geometry, list[int]]:
    """The geometry and the output spatial sizes of a pooling node."""
    sizes = x.shape[2:]
    g = geometry(node, sizes)
    auto = node.attr("auto_pad", "NOTSET")
    ceil = bool(node.attr("ceil_mode", 0)) and (auto.decode() if isinstance(auto, bytes) else auto) == "NOTSET"
    out = []
    for n, s, e, b, a in zip(sizes, g.strides, g.effective(), g.begin, g.end):
        span = n + b + a - e
        o = (-(-span // s) if ceil else span // s) + 1
        if ceil and (o - 1) * s >= n + b:
            o -= 1
        if o < 1:
            raise OnnxImportError(f"{node.where()}: the window (extent {e}) does not fit the padded input of shape "
                                  f"{list(x.shape)}; check kernel_shape, pads and dilations.")
        out.append(o)
    return g, out


def _pad_exact(x: Tensor, g: Geometry, out: list[int], value: float | int) -> Tensor:
    """``x`` padded with ``value`` (or cropped) to exactly the extent the ``out`` windows cover."""
    ends = [(o - 1) * s + e - n - b for o, s, e, n, b in zip(out, g.strides, g.effective(), x.shape[2:], g.begin)]
    return pad_or_crop(x, g.begin, ends, value)


def _windows(x: Tensor, g: Geometry, out: list[int], value: float | int) -> Tensor:
    """``[N, C, *out, *kernel]``: every window of ``x`` padded with ``value`` (dilated windows subsampled)."""
    nd = len(out)
    x = _pad_exact(x, g, out, value)
    for i, (e, s) in enumerate(zip(g.effective(), g.strides)):
        x = x.unfold(2 + i, e, s)
    if any(d > 1 for d in g.dilations):
        x = x.slice([None] * (2 + nd) + [(0, e, d) for e, d in zip(g.effective(), g.dilations)])
    return x


def _flat_windows(w: Tensor, nd: int) -> Tensor:
    """The windows ``[N, C, *out, *kernel]`` with the kernel dims flattened into one last dim."""
    return w.reshape(list(w.shape[: w.rank - nd]) + [-1])


def _fits_module_pool(g: Geometry, x: Tensor, dilated: bool) -> bool:
    return (x.rank in (3, 4) and x.kind is Float and g.symmetric()
            and all(0 <= 2 * p <= k for p, k in zip(g.begin, g.kernel))
            and (dilated or all(d == 1 for d in g.dilations)))


def _window_sum(ctx: Context, x: Tensor, g: Geometry, out: list[int]) -> Tensor:
    """The sum of every window of ``x`` padded with zeros: a module average pool of the exactly padded input
    times the window size for 1-D/2-D undilated Float windows, else :func:`_windows`."""
    nd = len(out)
    if x.rank in (3, 4) and x.kind is Float and all(d == 1 for d in g.dilations):
        pool: Any = late(M, "avg_pool1d") if x.rank == 3 else late(M, "avg_pool2d")
        return pool(_pad_exact(x, g, out, 0), g.kernel, g.strides, 0) * math.prod(g.kernel)
    w = _windows(x, g, out, 0)
    return w.sum_dims(list(range(w.rank - nd, w.rank))).reshape(list(x.shape[:2]) + out)


def _divisor(ctx: Context, x: Tensor, g: Geometry, out: list[int], include_pad: bool) -> Tensor | int:
    """The count of elements in each window (ONNX reference ``pool``): a scalar when all windows are full."""
    counts: list[list[int]] = []
    for n, o, s, k, d, b, a in zip(x.shape[2:], out, g.strides, g.kernel, g.dilations, g.begin, g.end):
        lo, hi = (0, n + b + a) if include_pad else (b, b + n)
        counts.append([sum(1 for j in range(k) if lo <= i * s + j * d < hi) for i in range(o)])
    full = math.prod(g.kernel)
    if all(c == k for row, k in zip(counts, g.kernel) for c in row):
        return full
    div: Tensor | None = None
    for i, row in enumerate(counts):
        shape = [1] * (2 + len(out))
        shape[2 + i] = len(row)
        t = ctx.tensor(row, x.dtype).reshape(shape)
        div = t if div is None else div * t
    assert div is not None
    return div


@converter("AveragePool", since=1)
def average_pool(ctx: Context, node: Node, x: Tensor) -> Tensor:
    """``AveragePool`` (opsets 1-22): windows' mean with ``count_include_pad``, ``ceil_mode``, ``dilations``."""
    spatial_rank(node, x)
    g, out = _pool_geometry(node, x)
    include_pad = bool(node.attr("count_include_pad", 0))
    ceil = bool(node.attr("ceil_mode", 0))
    if _fits_module_pool(g, x, dilated=False):
        fn: Any = late(M, "avg_pool1d") if x.rank == 3 else late(M, "avg_pool2d")
        y = fn(x, g.kernel, g.strides, g.begin, count_include_pad=include_pad, ceil_mode=ceil)
        if list(y.shape[2:]) == out:
            return y
    div = _divisor(ctx, x, g, out, include_pad)
    return _window_sum(ctx, x, g, out) / div


def _compose(coords: list[Tensor], sizes: tuple[int, ...], column_major: bool) -> Tensor:
    """Flat index of spatial ``coords`` in a plane of ``sizes`` (row-major, or column-major for
    ``storage_order`` 1)."""
    order = range(len(sizes)) if column_major else range(len(sizes) - 1, -1, -1)
    flat: Tensor | None = None
    step = 1
    for i in order:
        term = coords[i] * step if step != 1 else coords[i]
        flat = term if flat is None else flat + term
        step *= sizes[i]
    assert flat is not None
    return flat


def _coords_of_windows(ctx: Context, arg: Tensor, g: Geometry, out: list[int]) -> list[Tensor]:
    """Input coordinates of the window positions ``arg`` (flat over the kernel dims) of outputs ``[N, C, *out]``."""
    nd = len(out)
    coords: list[Tensor] = [arg] * nd
    rest = arg
    for i in range(nd - 1, -1, -1):
        k = g.kernel[i]
        j = rest % k if i else rest
        rest = rest // k
        shape = [1] * (2 + nd)
        shape[2 + i] = out[i]
        pos = Tensor.arange(0, out[i], arg.device).reshape(shape) * g.strides[i] - g.begin[i]
        coords[i] = j * g.dilations[i] + pos
    return coords


def _indices(ctx: Context, x: Tensor, coords: list[Tensor], column_major: bool) -> Tensor:
    """ONNX MaxPool ``Indices``: flat int64 positions in ``X`` (batch and channel included)."""
    n, c, *sizes = x.shape
    plane = math.prod(sizes)
    flat = _compose(coords, tuple(sizes), column_major)
    base = Tensor.arange(0, n * c, flat.device).reshape([n, c] + [1] * len(sizes)) * plane
    return (flat + base).cast(DType.INT64)


_MAX_POOL: dict[tuple[int, bool], Any] = {
    (3, False): late(M, "max_pool1d"), (4, False): late(M, "max_pool2d"),
    (3, True): late(M, "max_pool1d_with_indices"), (4, True): late(M, "max_pool2d_with_indices"),
}


@converter("MaxPool", since=1)
def max_pool(ctx: Context, node: Node, x: Tensor) -> Any:
    """``MaxPool`` (opsets 1-22): windows' maximum and, when asked, ``Indices`` (int64 flat positions in
    ``X``, row-major or column-major by ``storage_order``, padding never counted)."""
    nd = spatial_rank(node, x)
    g, out = _pool_geometry(node, x)
    want_idx = len(node.outputs) > 1 and node.outputs[1] != ""
    column_major = bool(node.attr("storage_order", 0))
    ceil = bool(node.attr("ceil_mode", 0))
    fill = float("-inf") if x.kind is Float else _INT_MIN.get(x.dtype, 0)
    if x.rank in (3, 4) and x.kind is Float:
        if _fits_module_pool(g, x, dilated=True) and not ceil:  # Ember pads (with -inf) itself
            src, pad, shift = x, g.begin, [0] * nd
        else:  # the exactly padded input
            src, pad, shift = _pad_exact(x, g, out, fill), [0] * nd, g.begin
        y = _MAX_POOL[(x.rank, want_idx)](src, g.kernel, g.strides, pad, g.dilations)
        if not want_idx:
            return y
        flat, width = y[1], src.shape[-1]
        coords = [flat - shift[0]] if nd == 1 else [flat // width - shift[0], flat % width - shift[1]]
        return y[0], _indices(ctx, x, coords, column_major)
    w = _flat_windows(_windows(x, g, out, fill), nd)
    if not want_idx:
        return w.max_dim(-1).reshape(list(x.shape[:2]) + out)
    vals, arg = w.max_dim_with_indices(-1)
    shape = list(x.shape[:2]) + out
    coords = _coords_of_windows(ctx, arg.reshape(shape), g, out)
    return vals.reshape(shape), _indices(ctx, x, coords, column_major)


def _lp(x: Tensor, p: float) -> Tensor:
    return x.square() if p == 2 else x.abs() ** p


def _root(s: Tensor, p: float) -> Tensor:
    return s.sqrt() if p == 2 else s ** (1.0 / p)


@converter("LpPool", since=1)
def lp_pool(ctx: Context, node: Node, x: Tensor) -> Tensor:
    """``LpPool`` (opsets 1-22): ``(sum |x|^p)^(1/p)`` over each window, zero padding (as onnxruntime and the
    node suite's expected values)."""
    spatial_rank(node, x)
    g, out = _pool_geometry(node, x)
    p = float(node.attr("p", 2))
    return _root(_window_sum(ctx, _lp(x, p), g, out), p)


def _spatial_dims(node: Node, x: Tensor) -> list[int]:
    return list(range(2, 2 + spatial_rank(node, x)))


@converter("GlobalAveragePool", since=1)
def global_average_pool(ctx: Context, node: Node, x: Tensor) -> Tensor:
    """``GlobalAveragePool`` (opsets 1-22): mean over the spatial dims, kept with size 1."""
    return x.mean_dims(_spatial_dims(node, x))


@converter("GlobalMaxPool", since=1)
def global_max_pool(ctx: Context, node: Node, x: Tensor) -> Tensor:
    """``GlobalMaxPool`` (opsets 1-22): maximum over the spatial dims, kept with size 1."""
    return x.max_dims(_spatial_dims(node, x))


@converter("GlobalLpPool", since=1)
def global_lp_pool(ctx: Context, node: Node, x: Tensor) -> Tensor:
    """``GlobalLpPool`` (opsets 1-22): ``(sum |x|^p)^(1/p)`` over the spatial dims, kept with size 1."""
    p = float(node.attr("p", 2))
    return _root(_lp(x, p).sum_dims(_spatial_dims(node, x)), p)


@converter("MaxUnpool", since=9, static=(2,))
def max_unpool(ctx: Context, node: Node, x: Tensor, indices: Tensor, output_shape: Tensor | None = None) -> Tensor:
    """``MaxUnpool`` (opsets 9-22): zeros of the unpooled shape ``(n - 1) s + k - pad_begin - pad_end`` per
    spatial dim with ``X`` scattered at the flat ``I``, zero-extended at the end to the ``output_shape`` input
    when given (the ONNX reference implementation, ``op_max_unpool.py``)."""
    nd = spatial_rank(node, x)
    g = geometry(node, x.shape[2:])
    inferred = list(x.shape[:2]) + [(n - 1) * s + k - b - e for n, s, k, b, e in
                                    zip(x.shape[2:], g.strides, g.kernel, g.begin, g.end)]
    try:  # the zeros appended per dim: a host rule (an output_shape read from the data stays code)
        ends = rules.unpool_ends(inferred, ctx.ints(output_shape) or inferred)
    except OnnxImportError as exc:
        raise OnnxImportError(f"{node.where()}: {exc}") from exc
    flat = Tensor.zeros([math.prod(inferred)], x.device, x.kind).cast(x.dtype)
    idx = indices.to_device(x.device) if indices.device is not x.device else indices
    y = flat.scatter(0, idx.reshape([-1]), x.reshape([-1])).reshape(inferred)
    if rules.from_data(ends):
        return y.pad([(0, e) for e in ends])
    return pad_or_crop(y, [0] * (nd + 2), ends)
