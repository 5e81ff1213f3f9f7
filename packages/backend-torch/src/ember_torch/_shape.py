"""Shape and indexing primitives of the torch backend.

View-returning torch ops (reshape, permute, expand, slicing, unfold) are used as they are: the
backend never writes into a primitive it has returned, so sharing memory is safe. The ops that
write (``slice_assign``) work on a fresh clone.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F  # noqa: N812 - torch's own convention

_Slices = tuple[slice, ...]  # named here: the ``slice`` method below shadows the builtin in the class


def _index_error(op: str, exc: RuntimeError) -> Exception:
    # torch reports an index value out of range as a RuntimeError from most kernels (IndexError
    # from a few); the contract wants the library's IndexError (the core maps it to
    # ember.IndexError). On CUDA the kernels assert on the device instead and cannot be caught.
    msg = str(exc)
    if "out of bounds" in msg or "out of DATA bounds" in msg or ("index" in msg and "range" in msg):
        return IndexError(f"{op}: {msg}")
    return exc


class TorchShapeOps:
    _itd: torch.dtype

    reshape = staticmethod(torch.reshape)
    permute = staticmethod(torch.permute)
    expand = staticmethod(torch.broadcast_to)
    flip = staticmethod(torch.flip)  # a copy: torch has no negative strides
    @staticmethod
    def select(a: Any, dim: int, indices: Any) -> Any:
        try:
            return torch.index_select(a, dim, indices)
        except RuntimeError as exc:
            raise _index_error("select", exc) from None

    @staticmethod
    def select_add(a: Any, dim: int, indices: Any, values: Any) -> Any:
        try:
            return torch.index_add(a, dim, indices, values)  # out-of-place; repeats accumulate
        except RuntimeError as exc:
            raise _index_error("select_add", exc) from None

    @staticmethod
    def gather(a: Any, dim: int, indices: Any) -> Any:
        try:
            return torch.gather(a, dim, indices)  # accepts int32 and int64 indices
        except RuntimeError as exc:
            raise _index_error("gather", exc) from None

    @staticmethod
    def scatter_add(a: Any, dim: int, indices: Any, values: Any) -> Any:
        try:
            return torch.scatter_add(a, dim, indices, values)  # out-of-place form
        except RuntimeError as exc:
            raise _index_error("scatter_add", exc) from None

    @staticmethod
    def zeros_scatter_add(shape: tuple[int, ...], dim: int, indices: Any, values: Any) -> Any:
        try:  # the new buffer filled in place: one allocation, where scatter_add of zeros copies them
            return values.new_zeros(shape).scatter_add_(dim, indices, values)
        except RuntimeError as exc:
            raise _index_error("scatter_add", exc) from None

    @staticmethod
    def zeros_select_add(shape: tuple[int, ...], dim: int, indices: Any, values: Any) -> Any:
        try:
            return values.new_zeros(shape).index_add_(dim, indices, values)
        except RuntimeError as exc:
            raise _index_error("select_add", exc) from None

    @staticmethod
    def slice(a: Any, slices: _Slices) -> Any:
        return a[slices]

    @staticmethod
    def slice_assign(a: Any, slices: _Slices, value: Any) -> Any:
        out = a.clone()
        out[slices] = value
        return out

    @staticmethod
    def cat(ps: list[Any], dim: int) -> Any:
        return torch.cat(ps, dim)

    @staticmethod
    def stack(ps: list[Any], dim: int) -> Any:
        return torch.stack(ps, dim)

    @staticmethod
    def mask_where(a: Any, mask: Any, value: Any) -> Any:
        if not isinstance(value, torch.Tensor):  # a Python scalar would promote an Int tensor to float
            return torch.masked_fill(a, mask, value)
        out = torch.where(mask, value, a)
        return out if out.dtype is a.dtype else out.to(a.dtype)

    @staticmethod
    def mask_fill(a: Any, mask: Any, value: Any) -> Any:
        return torch.masked_fill(a, mask, value)

    @staticmethod
    def repeat_dim(a: Any, dim: int, times: int) -> Any:
        reps = [1] * a.dim()
        reps[dim] = times
        return a.repeat(reps)

    @staticmethod
    def unfold(a: Any, dim: int, size: int, step: int) -> Any:
        return a.unfold(dim, size, step)

    @staticmethod
    def pad(a: Any, pads: tuple[tuple[int, int], ...], value: Any) -> Any:
        # F.pad lists (before, after) from the last dim backwards
        flat: list[int] = []
        for before, after in reversed(pads):
            flat += (before, after)
        if not any(flat):
            return a
        return F.pad(a, flat, mode="constant", value=value)

    def nonzero(self, a: Any) -> list[Any]:
        return [c.to(self._itd) for c in torch.nonzero(a, as_tuple=True)]

    def argwhere(self, a: Any) -> Any:
        return torch.argwhere(a).to(self._itd)
