"""Shape and indexing primitives of the numpy backend.

Arguments arrive normalized by the core (non-negative dims, positive-step slices clipped to the
dims, shapes resolved). Views of the input are returned where numpy gives them (``reshape``,
``permute``, ``flip``, ``slice``, ``expand``, ``unfold``): that is safe because no op ever writes
into an array it did not allocate; ops that write (``slice_assign``, ``scatter_add``,
``select_add``) copy first.

Index values out of range raise numpy's ``IndexError``, which the core turns into
``ember.IndexError`` naming the op. Negative index values are not part of the contract.
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: the builtin ``slice`` (the class below defines a method of that name)
_Slice = slice


def _grid(shape: tuple[int, ...], dim: int, idx: Any) -> tuple[Any, ...]:
    """Open (broadcasting) coordinate grid of ``shape`` with ``idx`` in place of ``dim``."""
    n = len(shape)
    out: list[Any] = []
    for d, s in enumerate(shape):
        if d == dim:
            out.append(idx)
        else:
            out.append(np.arange(s).reshape((1,) * d + (s,) + (1,) * (n - d - 1)))
    return tuple(out)


class NumpyShapeOps:
    def reshape(self, a: Any, shape: tuple[int, ...]) -> Any:
        return a.reshape(shape)

    def permute(self, a: Any, axes: tuple[int, ...]) -> Any:
        return a.transpose(axes)

    def expand(self, a: Any, shape: tuple[int, ...]) -> Any:
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
        return np.take_along_axis(np.asarray(a), indices, axis=dim)

    def scatter_add(self, a: Any, dim: int, indices: Any, values: Any) -> Any:
        out = np.array(a, copy=True)
        if indices.size:
            np.add.at(out, _grid(indices.shape, dim, indices), values)
        return out

    def select(self, a: Any, dim: int, indices: Any) -> Any:
        return np.take(a, indices, axis=dim)

    def select_add(self, a: Any, dim: int, indices: Any, values: Any) -> Any:
        out = np.array(a, copy=True)
        if indices.size:
            np.add.at(out, (slice(None),) * dim + (indices,), values)
        return out

    def mask_fill(self, a: Any, mask: Any, value: Any) -> Any:
        return np.where(mask, np.asarray(value, dtype=a.dtype), a)

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
