"""Shape and indexing primitives of the numpy backend.

Arguments arrive normalized by the core (non-negative dims, positive-step slices clipped to the
dims, shapes resolved). Views of the input are returned where numpy gives them (``reshape``,
``permute``, ``flip``, ``slice``, ``unfold``, ``expand`` to more than 16384 elements): that is safe
because no op ever writes into an array it did not allocate; ops that write (``slice_assign``,
``scatter_add``, ``select_add``) copy first. Smaller ``expand`` results are materialized, which is
faster than building a broadcast view.

Index values arrive checked by the core (``[0, size)``, :mod:`ember.tensor._index_check`): numpy
would count negative ones from the end. Negative index values are not part of the contract.
"""

from __future__ import annotations

from math import prod as _prod
from typing import Any

import numpy as np

from ._quiet import enter, leave

_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)
#: ``np.where`` without the ``__array_function__`` dispatch (a Python frame; primitives are plain
#: ndarrays, so there is nothing to dispatch to); falls back to ``np.where`` if numpy changes
_where = getattr(np.where, "_implementation", np.where)

#: the builtin ``slice`` (the class below defines a method of that name)
_Slice = slice


#: open coordinate grids by (shape, dim): index arrays reused by gather / scatter_add
_GRIDS: dict[tuple[tuple[int, ...], int], tuple[Any, ...]] = {}
#: results of expand with at most this many elements are materialized (a copy is ~1 µs, while
#: ``np.broadcast_to`` costs 3-5 µs of Python); larger ones are broadcast views (no memory)
_EXPAND_COPY_MAX = 1 << 14


def _grid(shape: tuple[int, ...], dim: int, idx: Any) -> tuple[Any, ...]:
    """Open (broadcasting) coordinate grid of ``shape`` with ``idx`` in place of ``dim``.

    The ``np.arange`` parts are cached per ``(shape, dim)`` (read-only, at most 256 entries)."""
    key = (shape, dim)
    g = _GRIDS.get(key)
    if g is None:
        n = len(shape)
        parts: list[Any] = []
        for d, s in enumerate(shape):
            r = np.arange(s).reshape((1,) * d + (s,) + (1,) * (n - d - 1))
            r.flags.writeable = False
            parts.append(None if d == dim else r)
        g = tuple(parts)
        if len(_GRIDS) >= 256:
            _GRIDS.clear()
        _GRIDS[key] = g
    return g[:dim] + (idx,) + g[dim + 1 :]



def _scatter_into(out: Any, dim: int, indices: Any, values: Any) -> Any:
    """``out`` with ``values`` added in place at ``indices`` along ``dim`` (repeats accumulate)."""
    if indices.size:
        np.add.at(out, _grid(indices.shape, dim, indices), values)
    return out


def _select_into(out: Any, dim: int, indices: Any, values: Any) -> Any:
    """``out`` with ``values`` added in place at 1-D ``indices`` along ``dim`` (repeats accumulate)."""
    if indices.size:
        np.add.at(out, (slice(None),) * dim + (indices,), values)
    return out

class NumpyShapeOps:
    def reshape(self, a: Any, shape: tuple[int, ...]) -> Any:
        return a.reshape(shape)

    def permute(self, a: Any, axes: tuple[int, ...]) -> Any:
        return a.transpose(axes)

    def expand(self, a: Any, shape: tuple[int, ...]) -> Any:
        if _prod(shape) <= _EXPAND_COPY_MAX:
            out = np.empty(shape, a.dtype)
            out[...] = a
            return out
        return np.broadcast_to(a, shape)

    def flip(self, a: Any, axes: tuple[int, ...]) -> Any:
        return np.flip(a, axes) if axes else a

    def slice(self, a: Any, slices: tuple[_Slice, ...]) -> Any:
        return a[slices]

    def slice_assign(self, a: Any, slices: tuple[_Slice, ...], value: Any) -> Any:
        out = np.array(a, copy=True)
        out[slices] = value
        return out

    def cat(self, ps: list[Any], dim: int) -> Any:
        return np.concatenate(ps, axis=dim)

    def stack(self, ps: list[Any], dim: int) -> Any:
        return np.stack(ps, axis=dim)

    def gather(self, a: Any, dim: int, indices: Any) -> Any:
        # ``np.take_along_axis`` builds the same fancy index in Python on every call (~6 µs)
        g = _GRIDS.get((indices.shape, dim))  # _grid's cache hit inlined (the loss's gather, every step)
        if g is None:
            return a[_grid(indices.shape, dim, indices)]
        return a[g[:dim] + (indices,) + g[dim + 1 :]]

    def scatter_add(self, a: Any, dim: int, indices: Any, values: Any) -> Any:
        return _scatter_into(a.copy(), dim, indices, values)

    def select(self, a: Any, dim: int, indices: Any) -> Any:
        return np.take(a, indices, axis=dim)

    def select_add(self, a: Any, dim: int, indices: Any, values: Any) -> Any:
        return _select_into(np.array(a, copy=True), dim, indices, values)

    def zeros_scatter_add(self, shape: tuple[int, ...], dim: int, indices: Any, values: Any) -> Any:
        # the new buffer filled in place: scatter_add of zeros would copy them first
        return _scatter_into(np.zeros(shape, values.dtype), dim, indices, values)

    def zeros_select_add(self, shape: tuple[int, ...], dim: int, indices: Any, values: Any) -> Any:
        return _select_into(np.zeros(shape, values.dtype), dim, indices, values)

    @staticmethod
    def mask_fill(a: Any, mask: Any, value: Any) -> Any:
        dt = a.dtype
        tok = enter()  # a value out of the dtype's range becomes inf (as torch's masked_fill), silently
        try:
            # a Python float takes a's float dtype as it is (NEP 50): no conversion needed
            v = value if value.__class__ is float and (dt is _F32 or dt is _F64) else np.asarray(value, dtype=dt)
            return _where(mask, v, a)
        finally:
            leave(tok)

    def mask_where(self, a: Any, mask: Any, value: Any) -> Any:
        return np.where(mask, value, a).astype(a.dtype, copy=False)

    def repeat_dim(self, a: Any, dim: int, times: int) -> Any:
        reps = [1] * np.ndim(a)
        reps[dim] = times
        return np.tile(a, reps)

    def unfold(self, a: Any, dim: int, size: int, step: int) -> Any:
        win = np.lib.stride_tricks.sliding_window_view(a, size, axis=dim)
        if step != 1:
            win = win[(slice(None),) * dim + (slice(None, None, step),)]
        return win

    def pad(self, a: Any, pads: tuple[tuple[int, int], ...], value: Any) -> Any:
        full = tuple(pads) + ((0, 0),) * (np.ndim(a) - len(pads))
        return np.pad(a, full, mode="constant", constant_values=np.asarray(value, dtype=a.dtype))

    def nonzero(self, a: Any) -> list[Any]:
        return [c.astype(self._idt, copy=False) for c in np.nonzero(a)]  # type: ignore[attr-defined]

    def argwhere(self, a: Any) -> Any:
        return np.argwhere(a).astype(self._idt, copy=False)  # type: ignore[attr-defined]
