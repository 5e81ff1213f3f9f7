"""Selection and rearrangement: ``TopK``, ``Unique``, ``OneHot``, ``EyeLike``, ``Trilu``, ``DepthToSpace``,
``SpaceToDepth``, ``CenterCropPad``, ``ReverseSequence`` and ``TensorScatter``.

Counts and sizes (``TopK``'s k, ``OneHot``'s depth, ``Trilu``'s k, ``CenterCropPad``'s shape) are static
inputs read on the host. ``Unique`` has data-dependent output shapes: it is :meth:`ember.Tensor.unique` (eager
only, not under ``ember_jax.jit``).
Semantics: onnx/docs/Operators.md and onnx/reference/ops.
"""

from __future__ import annotations

import math

from ember import Bool, DType, Float, Int, Tensor

from .._context import Context
from .._dtypes import dtype_of
from .._errors import OnnxImportError
from .._ir import Node
from .._registry import converter
from .._validate import validating
from ._axes import norm_axis
from ._elementwise_util import to_dtype
from ._indexing import _put_elements

__all__: list[str] = []


def _topk(node: Node, x: Tensor, k: int) -> tuple[Tensor, Tensor]:
    axis = norm_axis(node, int(node.attr("axis", -1)), x.rank)
    n = x.shape[axis]
    with validating():
        bad = not 0 <= k <= n
    if bad:
        raise OnnxImportError(f"{node.where()}: k={k} is outside 0..{n} (the size of axis {axis}).")
    largest = bool(node.attr("largest", 1))
    # stable sorts: equal values keep the lower index first, as ONNX requires
    if largest:
        vals, idx = x.sort_descending_with_indices(axis) if x.kind is not Float else _desc_stable(x, axis)
    else:
        vals, idx = x.sort_with_indices(axis)
    return vals.narrow(axis, 0, k), to_dtype(idx.narrow(axis, 0, k), DType.INT64)


def _desc_stable(x: Tensor, axis: int) -> tuple[Tensor, Tensor]:
    """Descending, ties by ascending index: the ascending stable sort of ``-x`` (exact for floats)."""
    vals, idx = x.neg().sort_with_indices(axis)
    return vals.neg(), idx


@converter("TopK", since=1)
def topk_v1(ctx: Context, node: Node, x: Tensor) -> tuple[Tensor, Tensor]:
    """``TopK`` 1: ``k`` attribute, largest, sorted."""
    return _topk(node, x, int(node.attr("k", 1)))


@converter("TopK", since=10, static=(1,))
def topk(ctx: Context, node: Node, x: Tensor, k: Tensor) -> tuple[Tensor, Tensor]:
    """``TopK`` 10 (``k`` input), 11 (``largest``, ``sorted``; results are always sorted), 24: values and int64
    indices of the k largest (or smallest) along ``axis``; equal values keep index order."""
    return _topk(node, x, ctx.int_scalar(k))


@converter("Unique", since=11)
def unique(ctx: Context, node: Node, x: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """``Unique`` (11): the unique elements (or slices along ``axis``), sorted unless ``sorted=0`` (then in
    order of first occurrence), with the int64 first-occurrence indices, inverse indices and counts.

    One :meth:`ember.Tensor.unique` call: the output size depends on the data, so it runs eagerly (under
    ``ember_jax.jit`` it is refused, as ``nonzero`` is).
    """
    axis = node.attr("axis", None)
    dim = None if axis is None else norm_axis(node, int(axis), x.rank)
    values, first, inverse, counts = x.unique(dim, sorted=bool(node.attr("sorted", 1)))
    i64 = DType.INT64
    return values, to_dtype(first, i64), to_dtype(inverse, i64), to_dtype(counts, i64)


@converter("OneHot", since=9, static=(1,))
def one_hot(ctx: Context, node: Node, indices: Tensor, depth: Tensor, values: Tensor) -> Tensor:
    """``OneHot`` (9, 11: negative indices): a new dim of size ``depth`` at ``axis`` holding ``values[1]``
    at each index and ``values[0]`` elsewhere; indices outside ``[-depth, depth)`` give all ``values[0]``."""
    n = ctx.int_scalar(depth)
    idx = indices if indices.kind is Int else indices.int()
    idx = idx.mask_where(idx.lower(0), idx.add(n))
    rank = idx.rank + 1
    axis = norm_axis(node, int(node.attr("axis", -1)), rank)
    shape = [n if d == axis else 1 for d in range(rank)]
    classes = Tensor.arange(0, n, idx.device).cast(idx.dtype).reshape(shape)
    hot = idx.unsqueeze_dim(axis).equal(classes)
    off, on = values.narrow(0, 0, 1), values.narrow(0, 1, 1)
    out_shape = list(hot.shape)
    return off.reshape([1] * rank).expand(out_shape).mask_where(hot, on.reshape([1] * rank).expand(out_shape))


@converter("EyeLike", since=9)
def eye_like(ctx: Context, node: Node, x: Tensor) -> Tensor:
    """``EyeLike`` (9, 22): ones on diagonal ``k`` of a matrix shaped like ``x`` (``dtype``, default x's)."""
    if x.rank != 2:
        raise OnnxImportError(f"{node.where()}: EyeLike needs a 2-D input, got shape {list(x.shape)}.")
    dt = x.dtype if node.attr("dtype", None) is None else dtype_of(int(node.attr("dtype")), node.where())
    rows, cols = x.shape
    r = Tensor.arange(0, rows, x.device).reshape([rows, 1])
    c = Tensor.arange(0, cols, x.device).reshape([1, cols])
    return to_dtype(c.sub(r).equal(Tensor.full([1, 1], int(node.attr("k", 0)), x.device, Int).cast(r.dtype)), dt)


@converter("Trilu", since=14, static=(1,))
def trilu(ctx: Context, node: Node, x: Tensor, k: Tensor | None = None) -> Tensor:
    """``Trilu`` (14): the upper (``upper=1``) or lower triangle of the last two dims from diagonal ``k``."""
    diag = ctx.int_scalar(k, 0)
    y = x.int() if x.kind is Bool else x
    y = y.triu(diag) if node.attr("upper", 1) else y.tril(diag)
    return to_dtype(y, x.dtype) if x.kind is Bool else y


def _check_blocks(node: Node, x: Tensor, b: int) -> None:
    if x.rank != 4 or b < 1:
        raise OnnxImportError(f"{node.where()}: expected a 4-D input and blocksize >= 1, got {list(x.shape)}, {b}.")


@converter("DepthToSpace", since=1)
def depth_to_space(ctx: Context, node: Node, x: Tensor) -> Tensor:
    """``DepthToSpace`` (1, 11: ``mode`` DCR/CRD, 13): channels ``C`` to ``C / b^2`` with ``b x b`` blocks."""
    b = int(node.attr("blocksize"))
    _check_blocks(node, x, b)
    n, c, h, w = x.shape
    mode = node.attr("mode", "DCR")
    if mode == "DCR":
        y = x.reshape([n, b, b, c // (b * b), h, w]).permute([0, 3, 4, 1, 5, 2])
    else:
        y = x.reshape([n, c // (b * b), b, b, h, w]).permute([0, 1, 4, 2, 5, 3])
    return y.reshape([n, c // (b * b), h * b, w * b])


@converter("SpaceToDepth", since=1)
def space_to_depth(ctx: Context, node: Node, x: Tensor) -> Tensor:
    """``SpaceToDepth`` (1, 13, 25: ``mode`` DCR/CRD): ``b x b`` spatial blocks into channels (``C * b^2``)."""
    b = int(node.attr("blocksize"))
    _check_blocks(node, x, b)
    n, c, h, w = x.shape
    perm = [0, 3, 5, 1, 2, 4] if node.attr("mode", "DCR") == "DCR" else [0, 1, 3, 5, 2, 4]
    y = x.reshape([n, c, h // b, b, w // b, b]).permute(perm)
    return y.reshape([n, c * b * b, h // b, w // b])


@converter("CenterCropPad", since=18, static=(1,))
def center_crop_pad(ctx: Context, node: Node, x: Tensor, shape: Tensor) -> Tensor:
    """``CenterCropPad`` (18): each of ``axes`` (default all) cropped or zero-padded to ``shape``, centered
    (the window starts rounded down when cropping, the pad before is the smaller half)."""
    target = ctx.ints(shape) or []
    axes = node.attr("axes", None)
    dims = list(range(x.rank)) if axes is None else [norm_axis(node, int(a), x.rank) for a in axes]
    if len(set(dims)) != len(dims):
        raise OnnxImportError(f"{node.where()}: axes {list(axes or [])} repeat an axis; list each once.")
    if len(target) != len(dims):
        raise OnnxImportError(f"{node.where()}: shape {target} must give one size per axis ({len(dims)}).")
    pairs = [(0, 0)] * x.rank
    for d, want in zip(dims, target, strict=True):
        diff = want - x.shape[d]
        before = math.trunc(diff / 2)  # crop: the window starts rounded down; pad: the smaller half before
        pairs[d] = (before, diff - before)  # Tensor.pad crops negative amounts
    return x.pad(pairs, False if x.kind is Bool else 0)


@converter("ReverseSequence", since=10)
def reverse_sequence(ctx: Context, node: Node, x: Tensor, lens: Tensor) -> Tensor:
    """``ReverseSequence`` (10): for each batch entry ``b`` the first ``lens[b]`` steps along ``time_axis``
    reversed, the rest kept."""
    t_axis = norm_axis(node, int(node.attr("time_axis", 0)), x.rank)
    b_axis = norm_axis(node, int(node.attr("batch_axis", 1)), x.rank)
    steps, batch = x.shape[t_axis], x.shape[b_axis]
    t_shape = [1] * x.rank
    t_shape[t_axis] = steps
    b_shape = [1] * x.rank
    b_shape[b_axis] = batch
    t = Tensor.arange(0, steps, x.device).reshape(t_shape)
    n = lens.cast(t.dtype) if lens.dtype is not t.dtype else lens
    n = n.reshape(b_shape)
    rev = n.sub(1).sub(t)
    idx = t.expand(list(x.shape)).mask_where(t.lower(n).expand(list(x.shape)), rev.expand(list(x.shape)))
    return x.gather(t_axis, idx)


@converter("TensorScatter", since=24)
def tensor_scatter(ctx: Context, node: Node, past: Tensor, update: Tensor, write: Tensor | None = None) -> Tensor:
    """``TensorScatter`` (24): ``update`` written into the cache ``past`` along ``axis`` from each batch entry's
    ``write_indices`` (0 by default); ``mode='circular'`` wraps around the cache length."""
    axis = norm_axis(node, int(node.attr("axis", -2)), past.rank)
    if axis == 0:
        raise OnnxImportError(f"{node.where()}: axis must not be the batch axis 0.")
    seq, length = update.shape[axis], past.shape[axis]
    s_shape = [1] * past.rank
    s_shape[axis] = seq
    s = Tensor.arange(0, seq, past.device).reshape(s_shape)
    if write is not None:
        w = write.cast(s.dtype) if write.dtype is not s.dtype else write
        s = s.add(w.reshape([past.shape[0]] + [1] * (past.rank - 1)))
    if node.attr("mode", "linear") == "circular":
        s = s.remainder(length)
    idx = s.expand(list(update.shape))
    data = past.int() if past.kind is Bool else past
    out = _put_elements(data, axis, idx, update.int() if past.kind is Bool else update)
    return to_dtype(out, past.dtype) if past.kind is Bool else out
