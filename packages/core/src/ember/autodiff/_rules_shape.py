"""Backward rules of shape, slicing, indexing and joining ops.

Each gradient is the adjoint of the forward index map: ``slice`` <-> ``slice_assign`` into
zeros, ``gather`` <-> ``scatter_add``, ``select`` <-> ``select_add``, ``cat`` <-> slices,
``expand`` <-> a sum over the broadcast dims, ``unfold`` <-> ``select_add`` of the windows.
Index and mask arguments are constants.
"""

from __future__ import annotations

from typing import Any

from ._rules_util import along, unbroadcast, zeros
from ._slice_grads import SliceGrad
from ._table import general, unary


@unary("reshape", save="s")
def _reshape(B: Any, g: Any, s: Any, y: Any, args: Any) -> Any:
    return B.reshape(g, s)


@unary("permute")
def _permute(B: Any, g: Any, x: Any, y: Any, args: Any) -> Any:
    axes = args[0]
    inv = [0] * len(axes)
    for i, a in enumerate(axes):
        inv[a] = i
    return B.permute(g, tuple(inv))


@unary("expand", save="s")
def _expand(B: Any, g: Any, s: Any, y: Any, args: Any) -> Any:
    return unbroadcast(B, g, s)


@unary("flip")
def _flip(B: Any, g: Any, x: Any, y: Any, args: Any) -> Any:
    return B.flip(g, args[0])


@unary("slice", save="s")
def _slice(B: Any, g: Any, s: Any, y: Any, args: Any) -> Any:
    # kept sparse: the sweep gathers the pieces of a split and writes them out once (see _slice_grads)
    return SliceGrad(s, [(args[0], g)])


@general("slice_assign", diff=(0, 2))
def _slice_assign(B: Any, g: Any, args: Any, y: Any, needs: Any) -> Any:
    _, slices, vshape = args
    ga = B.slice_assign(g, slices, zeros(B, vshape, g)) if needs[0] else None
    gv = unbroadcast(B, B.slice(g, slices), vshape) if needs[1] else None
    return ga, gv


@unary("pad", save="s")
def _pad(B: Any, g: Any, s: Any, y: Any, args: Any) -> Any:
    pads = args[0]
    sl = tuple(slice(pads[i][0], pads[i][0] + n, 1) if i < len(pads) else slice(0, n, 1) for i, n in enumerate(s))
    return B.slice(g, sl)


@general("cat", diff=(0,))
def _cat(B: Any, g: Any, args: Any, y: Any, needs: Any) -> Any:
    shapes, dim = args
    gs = B.shape(g)
    out, off = [], 0
    for need, s in zip(needs, shapes):
        n = s[dim]
        out.append(B.slice(g, along(gs, dim, off, off + n)) if need else None)
        off += n
    return out


@general("stack", diff=(0,))
def _stack(B: Any, g: Any, args: Any, y: Any, needs: Any) -> Any:
    shapes, dim = args
    gs = B.shape(g)
    return [B.reshape(B.slice(g, along(gs, dim, i, i + 1)), s) if need else None
            for i, (need, s) in enumerate(zip(needs, shapes))]


@unary("repeat_dim", save="s")
def _repeat_dim(B: Any, g: Any, s: Any, y: Any, args: Any) -> Any:
    dim, times = args
    split = s[:dim] + (times, s[dim]) + s[dim + 1:]
    return B.reshape(B.sum_dim(B.reshape(g, split), dim), s)


@unary("unfold", save="s")
def _unfold(B: Any, g: Any, s: Any, y: Any, args: Any) -> Any:
    # out[..., w, ..., j] = x[..., w * step + j, ...]: move the window dim next to ``dim``, merge
    # (windows, size) and add the rows back at w * step + j
    dim, size, step = args
    gs = B.shape(g)
    r = len(gs)
    nw = gs[dim]
    perm = tuple(range(dim + 1)) + (r - 1,) + tuple(range(dim + 1, r - 1))
    gm = B.permute(g, perm)
    merged = s[:dim] + (nw * size,) + s[dim + 1:]
    gm = B.reshape(gm, merged)
    h = B.device_handle(g)
    w = B.mul(B.arange(0, nw, 1, B.int_dtype, h), step)
    j = B.arange(0, size, 1, B.int_dtype, h)
    idx = B.reshape(B.add(B.reshape(w, (nw, 1)), B.reshape(j, (1, size))), (nw * size,))
    return B.zeros_select_add(s, dim, idx, gm)


@unary("gather", save="s", direct=True)
def _gather(B: Any, g: Any, saved: Any, ps: Any) -> Any:
    dim, idx = saved[2]
    return (B.zeros_scatter_add(saved[0], dim, idx, g),)


@general("scatter_add", diff=(0, 3))
def _scatter_add(B: Any, g: Any, args: Any, y: Any, needs: Any) -> Any:
    _, dim, idx, _ = args
    return (g if needs[0] else None, B.gather(g, dim, idx) if needs[1] else None)


@general("zeros_scatter_add", diff=(3,))
def _zeros_scatter_add(B: Any, g: Any, args: Any, y: Any, needs: Any) -> Any:
    _, dim, idx, _ = args
    return (B.gather(g, dim, idx) if needs[0] else None,)


@general("zeros_select_add", diff=(3,))
def _zeros_select_add(B: Any, g: Any, args: Any, y: Any, needs: Any) -> Any:
    _, dim, idx, _ = args
    return (B.select(g, dim, idx) if needs[0] else None,)


@unary("select", save="s")
def _select(B: Any, g: Any, s: Any, y: Any, args: Any) -> Any:
    dim, idx = args
    return B.zeros_select_add(s, dim, idx, g)


@general("select_add", diff=(0, 3))
def _select_add(B: Any, g: Any, args: Any, y: Any, needs: Any) -> Any:
    _, dim, idx, _ = args
    return (g if needs[0] else None, B.select(g, dim, idx) if needs[1] else None)


@unary("mask_fill")
def _mask_fill(B: Any, g: Any, x: Any, y: Any, args: Any) -> Any:
    return B.mask_fill(g, args[0], 0.0)


@general("mask_where", diff=(0, 2))
def _mask_where(B: Any, g: Any, args: Any, y: Any, needs: Any) -> Any:
    ashape, mask, vshape = args
    ga = unbroadcast(B, B.mask_fill(g, mask, 0.0), ashape) if needs[0] else None
    gv = unbroadcast(B, B.mask_fill(g, B.logical_not(mask), 0.0), vshape) if needs[1] else None
    return ga, gv
