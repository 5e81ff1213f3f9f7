"""Element indexing: ``GatherElements``, ``GatherND``, ``Scatter``, ``ScatterElements``, ``ScatterND``,
``Compress`` and ``NonZero``.

Negative indices wrap (``i + n``), as ONNX allows from opset 11; indices outside ``[-n, n)`` raise (the Ember
op's ``ember.IndexError``, inside an ``OnnxImportError`` naming the node), as in onnxruntime. Scatters with
``reduction='none'`` replace (the positions are cleared, then the updates added, which is exact); ``'add'``
adds; ``'mul'``/``'max'``/``'min'`` combine one index slice at a time (within a slice the positions are
distinct), which also gives the reference's last-write-wins order for repeated indices. ``Compress`` and
``NonZero`` have data-dependent output shapes: they read their condition on the host, so they run eagerly but
not under ``ember_jax.jit``.
Semantics: onnx/docs/Operators.md and onnx/reference/ops.
"""

from __future__ import annotations

from collections.abc import Callable

from ember import Bool, DType, Int, Tensor

from .._context import Context
from .._errors import OnnxImportError
from .._ir import Node
from .._registry import converter
from ._axes import norm_axis
from ._elementwise_util import to_dtype

__all__ = ["wrap_index"]


def wrap_index(idx: Tensor, n: int | Tensor) -> Tensor:
    """Indices in ``[-n, n)`` as ``[0, n)``: ``n`` is added to the negative ones (ONNX counts them from the end;
    ``n`` may be a broadcasting Int tensor). Values outside ``[-n, n)`` stay out of range, so the Ember op rejects
    them with ``ember.IndexError`` as onnxruntime rejects them (a floor modulo would wrap them silently)."""
    if isinstance(n, int):
        return idx if n <= 0 else idx.mask_where(idx.lower_elem(0), idx.add_scalar(n))
    return idx.mask_where(idx.lower_elem(0), idx.add(n))


@converter("GatherElements", since=11)
def gather_elements(ctx: Context, node: Node, data: Tensor, indices: Tensor) -> Tensor:
    """``GatherElements`` (11, 13): ``torch.gather`` along ``axis``; the output has the indices' shape."""
    axis = norm_axis(node, int(node.attr("axis", 0)), data.rank)
    return data.gather(axis, wrap_index(indices, data.shape[axis]))


def _dims_tensor(ctx: Context, dims: list[int], like: Tensor) -> Tensor:
    return ctx.tensor(dims, like.dtype, device=like.device)


@converter("GatherND", since=11)
def gather_nd(ctx: Context, node: Node, data: Tensor, indices: Tensor) -> Tensor:
    """``GatherND`` (11, 12: ``batch_dims``, 13): slices of ``data`` at the coordinates in ``indices``'s last
    dim; the first ``batch_dims`` dims of both are matched pairwise."""
    b = int(node.attr("batch_dims", 0))
    k = indices.shape[-1]
    if k + b > data.rank:
        raise OnnxImportError(
            f"{node.where()}: coordinates of length {k} after {b} batch dims exceed the data's rank {data.rank}."
        )
    idx = wrap_index(indices, _dims_tensor(ctx, list(data.shape[b:b + k]), indices)) if k else indices
    if b == 0:
        return data.gather_nd(idx)
    batch = list(data.shape[:b])
    nb = 1
    for s in batch:
        nb *= s
    inner = list(indices.shape[b:-1])
    flat_idx = idx.reshape([nb, -1, k]) if k else idx.reshape([nb, -1, 0])
    m = flat_idx.shape[1]
    bcoord = Tensor.arange(0, nb, idx.device).cast(idx.dtype).reshape([nb, 1, 1]).expand([nb, m, 1])
    coords = Tensor.cat([bcoord, flat_idx], 2)
    out = data.reshape([nb] + list(data.shape[b:])).gather_nd(coords)
    return out.reshape(batch + inner + list(data.shape[b + k:]))


def _as_number(t: Tensor) -> Tensor:
    return t.int() if t.kind is Bool else t


def _combine(reduction: str, node: Node) -> Callable[[Tensor, Tensor], Tensor]:
    table: dict[str, Callable[[Tensor, Tensor], Tensor]] = {
        "none": lambda old, new: new,
        "add": lambda old, new: old.add(new),
        "mul": lambda old, new: old.mul(new),
        "max": lambda old, new: old.max_pair(new),
        "min": lambda old, new: old.min_pair(new),
    }
    if reduction not in table:
        raise OnnxImportError(f"{node.where()}: unknown reduction {reduction!r}; expected none, add, mul, max or min.")
    return table[reduction]


def _put_elements(data: Tensor, axis: int, idx: Tensor, values: Tensor) -> Tensor:
    """``data`` with ``values`` written (replacing) at ``idx`` along ``axis`` (positions distinct)."""
    hit = Tensor.zeros(list(idx.shape), data.device, Int).add(1)
    covered = Tensor.zeros(list(data.shape), data.device, Int).scatter(axis, idx, hit).greater(0)
    return data.mask_fill(covered, 0).scatter(axis, idx, values)


def _scatter_elements(node: Node, data: Tensor, indices: Tensor, updates: Tensor, reduction: str) -> Tensor:
    axis = norm_axis(node, int(node.attr("axis", 0)), data.rank)
    idx = wrap_index(indices, data.shape[axis])
    x, u = _as_number(data), _as_number(updates)
    if reduction == "add":
        out = x.scatter(axis, idx, u)
    elif reduction == "none" and idx.shape[axis] <= 1:
        out = _put_elements(x, axis, idx, u)
    else:
        fn = _combine(reduction, node)
        out = x
        for j in range(idx.shape[axis]):  # one slice at a time: distinct positions within it
            ij, uj = idx.narrow(axis, j, 1), u.narrow(axis, j, 1)
            out = _put_elements(out, axis, ij, fn(out.gather(axis, ij), uj))
    return to_dtype(out, data.dtype) if data.kind is Bool else out


@converter("Scatter", since=9)
def scatter(ctx: Context, node: Node, data: Tensor, indices: Tensor, updates: Tensor) -> Tensor:
    """``Scatter`` (9, 11; deprecated for ``ScatterElements``): replace ``data`` at ``indices`` along ``axis``."""
    return _scatter_elements(node, data, indices, updates, "none")


@converter("ScatterElements", since=11)
def scatter_elements(ctx: Context, node: Node, data: Tensor, indices: Tensor, updates: Tensor) -> Tensor:
    """``ScatterElements`` (11, 13, 16: ``reduction`` add/mul, 18: max/min)."""
    return _scatter_elements(node, data, indices, updates, str(node.attr("reduction", "none")))


def _put_nd(data: Tensor, idx: Tensor, values: Tensor) -> Tensor:
    ones = Tensor.zeros(list(values.shape), data.device, Int).add(1)
    covered = Tensor.zeros(list(data.shape), data.device, Int).scatter_nd(idx, ones).greater(0)
    return data.mask_fill(covered, 0).scatter_nd(idx, values)


@converter("ScatterND", since=11)
def scatter_nd(ctx: Context, node: Node, data: Tensor, indices: Tensor, updates: Tensor) -> Tensor:
    """``ScatterND`` (11, 13, 16: ``reduction`` add/mul, 18: max/min): ``updates`` slices written at the
    coordinates in ``indices``'s last dim."""
    reduction = str(node.attr("reduction", "none"))
    k = indices.shape[-1]
    idx = wrap_index(indices, _dims_tensor(ctx, list(data.shape[:k]), indices))
    x, u = _as_number(data), _as_number(updates)
    if reduction == "add":
        out = x.scatter_nd(idx, u)
    else:
        fn = _combine(reduction, node)
        rows = idx.reshape([-1, k])
        vals = u.reshape([rows.shape[0]] + list(data.shape[k:]))
        if reduction == "none":
            out = _put_nd(x, rows, vals)
        else:
            out = x
            for r in range(rows.shape[0]):
                ir, vr = rows.narrow(0, r, 1), vals.narrow(0, r, 1)
                out = _put_nd(out, ir, fn(out.gather_nd(ir), vr))
    return to_dtype(out, data.dtype) if data.kind is Bool else out


@converter("Compress", since=9)
def compress(ctx: Context, node: Node, x: Tensor, condition: Tensor) -> Tensor:
    """``Compress`` (9, 11: negative ``axis``): the slices along ``axis`` (the flattened input without one)
    where the 1-D ``condition`` is true; a shorter condition leaves the rest out. The kept positions are one
    ``argwhere`` (data-dependent size: a device sync, refused under ``ember_jax.jit``)."""
    axis = node.attr("axis", None)
    if axis is None:
        x, axis = x.reshape([-1]), 0
    axis = norm_axis(node, int(axis), x.rank)
    n = x.shape[axis]
    if condition.rank != 1 or condition.shape[0] > n:
        raise OnnxImportError(f"{node.where()}: expected a 1-D condition of at most {n} entries (the size of axis "
                              f"{axis}), got shape {list(condition.shape)}.")
    flags = condition if condition.kind is Bool else condition.bool()
    return x.select(axis, flags.argwhere().squeeze_dim(1))


@converter("NonZero", since=9)
def nonzero(ctx: Context, node: Node, x: Tensor) -> Tensor:
    """``NonZero`` (9, 13): int64 ``[rank, count]`` coordinates of the non-zero elements, in C order."""
    flags = x if x.kind is Bool else x.not_equal(0)
    if x.rank == 0:
        flags = flags.reshape([1])
    coords = flags.argwhere()
    out = coords.transpose() if x.rank else coords.reshape([0, coords.shape[0]])
    return to_dtype(out, DType.INT64)
