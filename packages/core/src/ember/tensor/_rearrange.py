"""Tensor ops that rearrange elements across positions (part of Burn's ``BasicOps``): cat/stack/split/chunk,
``iter_dim``, roll, unfold, pad and the triangular masks (``triu`` / ``tril`` and their masks). Composites of
primitives, so every backend, and ``Autodiff``, gets them for free.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from .._errors import KindError, ShapeError
from .._kind import Bool, Float, Int
from ..backend._device import Device
from . import _core
from ._base import TensorBase
from ._core import wrap
from ._index_args import fail, seq_of_ints
from ._util import as_shape, check_same, norm_dim

__all__ = ["RearrangeOps"]


def _pads_of(padding: Any, rank: int) -> tuple[tuple[int, int], ...]:
    """Burn 0.21 ``IntoPadding``: ``(left, right, top, bottom)`` pads the last two dims;
    a sequence of ``(before, after)`` pairs pads the last ``len(pairs)`` dims. Flat int sequences
    of another even length follow ``torch.nn.functional.pad`` (last dim first)."""
    items = list(padding)
    if items and len(items) % 2 == 0 and all(isinstance(x, int) for x in items):
        flat = [(items[i], items[i + 1]) for i in range(0, len(items), 2)]
        pairs = flat[::-1]
    elif all(isinstance(x, (tuple, list)) and len(x) == 2 for x in items):
        pairs = [(int(a), int(b)) for a, b in items]
    else:
        raise TypeError(
            f"pad: padding must be (left, right, top, bottom), a flat int tuple of even length or a sequence of "
            f"(before, after) pairs, got {padding!r}."
        )
    if len(pairs) > rank:
        raise ShapeError(
            f"pad: padding {padding!r} covers {len(pairs)} dims but the tensor has rank {rank}."
        )
    return ((0, 0),) * (rank - len(pairs)) + tuple(pairs)


class RearrangeOps(TensorBase):
    __slots__ = ()

    # ------------------------------------------------------------------ joining and splitting
    @staticmethod
    def cat(tensors: Sequence[Any], dim: int) -> Any:
        """Tensors joined along the existing ``dim`` (Burn's ``cat``); every other dim must match.

        Raises:
            ShapeError: no tensors, ranks differ, or another dim differs (both shapes named).
            IndexError_: ``dim`` out of range. DeviceError/KindError: mixed devices or kinds.
        """
        ts = list(tensors)
        if not ts:
            raise ShapeError("cat: got no tensors; pass at least one.")
        first = ts[0]
        fs = first.shape
        d = norm_dim("cat", dim, len(fs))
        for t in ts[1:]:
            if t.device is not first.device or t.kind is not first.kind:
                check_same("cat", first, t)
            s = t.shape
            if len(s) != len(fs) or any(a != b for i, (a, b) in enumerate(zip(s, fs)) if i != d):
                raise ShapeError(
                    f"cat: shapes {list(fs)} and {list(s)} differ outside dim {dim}; every other dim must match."
                )
        if len(ts) == 1:
            return first
        try:
            p = first.ops.cat([t.primitive for t in ts], d)
        except Exception as exc:
            raise fail("cat", exc, *ts) from exc
        return wrap(p, first, first.kind)

    @staticmethod
    def stack(tensors: Sequence[Any], dim: int) -> Any:
        """Tensors of equal shape joined along a new ``dim`` (Burn's ``stack``):
        ``n`` tensors ``[a, b]`` stacked on dim 1 give ``[a, n, b]``.

        Raises:
            ShapeError: empty list or shapes differ. IndexError_: ``dim`` out of
            ``[-(rank + 1), rank]``. DeviceError/KindError: mixed devices/kinds.
        """
        ts = list(tensors)
        if not ts:
            raise ShapeError("stack: got no tensors; pass at least one.")
        first = ts[0]
        d = norm_dim("stack", dim, first.rank + 1)
        for t in ts[1:]:
            if t.device is not first.device or t.kind is not first.kind:
                check_same("stack", first, t)
            if t.shape != first.shape:
                raise ShapeError(f"stack: shapes differ: {list(first.shape)} and {list(t.shape)}; all must be equal.")
        try:
            p = first.ops.stack([t.primitive for t in ts], d)
        except Exception as exc:
            raise fail("stack", exc, *ts) from exc
        return wrap(p, first, first.kind)

    def split_with_sizes(self, sizes: Sequence[int], dim: int = 0) -> list[Any]:
        """Consecutive pieces of the given sizes along ``dim`` (Burn's ``split_with_sizes``).

        Raises:
            ShapeError: sizes negative or not summing to the dim's size. IndexError_: bad ``dim``.
        """
        shape = self.shape
        d = norm_dim("split_with_sizes", dim, len(shape))
        sz = seq_of_ints("split_with_sizes", "sizes", sizes)
        if any(s < 0 for s in sz) or sum(sz) != shape[d]:
            raise ShapeError(
                f"split_with_sizes: sizes {sz} must be >= 0 and sum to {shape[d]}, the size of dim {dim} "
                f"of shape {list(shape)}."
            )
        out, start = [], 0
        for s in sz:
            out.append(self.narrow(d, start, s))
            start += s
        return out

    def split(self, split_size: int | Sequence[int], dim: int = 0) -> list[Any]:
        """Pieces of ``split_size`` along ``dim``, the last one smaller if the size does not divide
        (Burn's/PyTorch's ``split``). A list of sizes calls :meth:`split_with_sizes`.

        Raises:
            ShapeError: ``split_size`` < 1 on a non-empty dim. IndexError_: bad ``dim``.
        """
        if not isinstance(split_size, int):
            return self.split_with_sizes(split_size, dim)
        shape = self.shape
        d = norm_dim("split", dim, len(shape))
        n = shape[d]
        if split_size < 1:
            if n == 0 and split_size == 0:
                return [self]
            raise ShapeError(f"split: split_size must be >= 1, got {split_size}.")
        if n == 0:
            return [self]
        return [self.narrow(d, s, min(split_size, n - s)) for s in range(0, n, split_size)]

    def chunk(self, chunks: int, dim: int = 0) -> list[Any]:
        """At most ``chunks`` pieces along ``dim`` (``torch.chunk``, which Burn follows): each of
        ``ceil(size / chunks)`` elements, the last smaller; fewer pieces when the size is small
        (size 5 in 4 chunks gives sizes 2, 2, 1). A dim of size 0 gives one empty piece.

        Raises:
            ShapeError: ``chunks`` < 1. IndexError_: bad ``dim``.
        """
        if not isinstance(chunks, int) or chunks < 1:
            raise ShapeError(f"chunk: chunks must be an int >= 1, got {chunks!r}.")
        shape = self.shape
        d = norm_dim("chunk", dim, len(shape))
        n = shape[d]
        return self.split(max(1, -(-n // chunks)), d)

    def iter_dim(self, dim: int) -> Iterator[Any]:
        """Iterate over ``dim``, yielding slices that keep it with size 1 (Burn's ``iter_dim``):
        ``[3, 4].iter_dim(0)`` yields three ``[1, 4]`` tensors.

        Raises:
            IndexError_: ``dim`` out of range.
        """
        shape = self.shape
        d = norm_dim("iter_dim", dim, len(shape))
        for i in range(shape[d]):
            yield self.narrow(d, i, 1)

    # ------------------------------------------------------------------ roll / unfold / pad
    def roll_dim(self, shift: int, dim: int) -> Any:
        """Elements shifted by ``shift`` along ``dim``, wrapping around (Burn's ``roll_dim``,
        ``torch.roll``): ``[0, 1, 2, 3].roll_dim(1, 0) -> [3, 0, 1, 2]``.

        Raises:
            IndexError_: ``dim`` out of range.
        """
        return self.roll([shift], [dim], _op="roll_dim")

    def roll(self, shifts: int | Sequence[int], dims: int | Sequence[int] | None = None, _op: str = "roll") -> Any:
        """Elements shifted by ``shifts[i]`` along ``dims[i]``, wrapping around (Burn's ``roll``,
        ``torch.roll``). With ``dims=None`` the flattened tensor is rolled and reshaped back.

        Raises:
            IndexError_: a dim out of range. ShapeError: shifts and dims of different lengths.
        """
        sh = seq_of_ints(_op, "shifts", shifts)
        shape = self.shape
        if dims is None:
            if len(sh) != 1:
                raise ShapeError(f"{_op}: without dims, give one shift (got {sh}).")
            return self.flatten().roll(sh, [0], _op=_op)._reshaped(_op, shape)  # (a 0 in shape: an empty dim)
        ds = [norm_dim(_op, d, len(shape)) for d in seq_of_ints(_op, "dims", dims)]
        if len(ds) != len(sh):
            raise ShapeError(f"{_op}: {len(sh)} shifts for {len(ds)} dims; give one shift per dim.")
        t = self
        for s, d in zip(sh, ds):
            n = shape[d]
            k = s % n if n else 0
            if k:
                t = _core.Tensor.cat([t.narrow(d, n - k, k), t.narrow(d, 0, n - k)], d)
        return t

    def unfold(self, dim: int, size: int, step: int) -> Any:
        """Sliding windows of ``size`` every ``step`` along ``dim`` (``torch.Tensor.unfold``, Burn's
        ``unfold``): ``dim`` becomes the window count ``(n - size) // step + 1`` and a trailing dim
        of ``size`` is added: ``[2, 7].unfold(1, 3, 2) -> [2, 3, 3]``.

        Raises:
            IndexError_: ``dim`` out of range. ShapeError: ``size`` larger than the dim or < 0, or
            ``step`` < 1.
        """
        shape = self.shape
        d = norm_dim("unfold", dim, len(shape))
        if not isinstance(size, int) or not isinstance(step, int) or size < 0 or step < 1 or size > shape[d]:
            raise ShapeError(
                f"unfold: need 0 <= size <= {shape[d]} (dim {dim} of shape {list(shape)}) and step >= 1, "
                f"got size {size!r}, step {step!r}."
            )
        return self._prim("unfold", "unfold", d, size, step)

    def pad(self, padding: Sequence[Any], value: float | int | bool = 0, mode: str = "constant") -> Any:
        """The tensor padded (Burn 0.21's ``pad``).

        ``padding`` is ``(left, right, top, bottom)``, which pads the last two dims (width, then
        height, as Burn and ``torch.nn.functional.pad``), or a sequence of ``(before, after)``
        pairs for the last ``len(pairs)`` dims in order (``[(1, 1)]`` pads the last dim only).
        Other flat int tuples of even length follow ``torch.nn.functional.pad``: ``(left, right)``
        pads the last dim, 6 ints the last three dims.
        ``mode``: ``"constant"`` fills with ``value``; ``"reflect"`` mirrors without repeating the
        edge (needs padding < the dim's size); ``"edge"`` repeats the edge element (Burn's
        ``PadMode``). ``[1, 2, 3]`` padded ``[(2, 1)]``: constant 0 gives ``[0, 0, 1, 2, 3, 0]``,
        reflect ``[3, 2, 1, 2, 3, 2]``, edge ``[1, 1, 1, 2, 3, 3]``. A negative amount crops that many
        elements first (``torch.nn.functional.pad``, ONNX ``Pad``): ``[(-1, 1)]`` of ``[1, 2, 3]`` with
        constant 0 gives ``[2, 3, 0]``.

        Raises:
            ShapeError: more pairs than dims, a 4-tuple on a rank < 2 tensor,
            reflect padding >= the (cropped) dim size, or edge padding of an empty dim.
            KindError: a ``value`` that does not fit the kind.
        """
        shape = self.shape
        pads = _pads_of(padding, len(shape))
        if any(a < 0 or b < 0 for a, b in pads):  # crop first (never below an empty dim), then pad
            t = self
            for d, (n, (a, b)) in enumerate(zip(shape, pads)):
                if a < 0 or b < 0:
                    start = min(max(-a, 0), n)
                    t = t.narrow(d, start, max(n - max(-b, 0) - start, 0))
            return t.pad([(max(a, 0), max(b, 0)) for a, b in pads], value, mode)
        if all(a == 0 and b == 0 for a, b in pads):
            return self
        if mode == "constant":
            v = _core.scalar_for("pad", self, value)
            return self._prim("pad", "pad", pads, v)
        if mode not in ("reflect", "edge"):
            raise ValueError(f"pad: mode must be 'constant', 'reflect' or 'edge', got {mode!r}.")
        t = self
        for d, (a, b) in enumerate(pads):
            if not (a or b):
                continue
            n = shape[d]
            if mode == "reflect" and (a >= n or b >= n):
                raise ShapeError(f"pad: reflect padding ({a}, {b}) must be smaller than dim {d} of size {n}.")
            if mode == "edge" and n == 0:
                raise ShapeError(f"pad: edge padding of dim {d}, which is empty.")
            parts = []
            if a:
                parts.append(t.slice_dim(d, (1, a + 1, -1)) if mode == "reflect"
                             else t.narrow(d, 0, 1).repeat_dim(d, a))
            parts.append(t)
            if b:
                parts.append(t.slice_dim(d, (n - 1 - b, n - 1, -1)) if mode == "reflect"
                             else t.narrow(d, n - 1, 1).repeat_dim(d, b))
            t = _core.Tensor.cat(parts, d)
        return t

    # ------------------------------------------------------------------ triangles
    @staticmethod
    def _tri_mask(op: str, shape: Sequence[int], offset: int, device: Device, cmp: str) -> Any:
        shp = as_shape(op, shape)
        if len(shp) < 2:
            raise ShapeError(f"{op}: shape {list(shp)} needs at least 2 dims (the last two form the matrix).")
        if not isinstance(offset, int):
            raise TypeError(f"{op}: offset must be an int, got {offset!r}.")
        h, w = shp[-2], shp[-1]
        iops, bops = device.ops[1], device.ops[2]
        idt = device.backend.int_dtype
        try:
            rows = iops.reshape(iops.arange(0, h, 1, idt, device.handle), (h, 1))
            cols = iops.reshape(iops.arange(0, w, 1, idt, device.handle), (1, w))
            diff = iops.sub(cols, rows)  # [h, w]: j - i
            m = getattr(iops, cmp)(diff, offset)
            m = bops.expand(m, shp) if shp != (h, w) else m
        except Exception as exc:
            raise fail(op, exc) from exc
        return _core.new(m, device, Bool, bops)

    @staticmethod
    def triu_mask(shape: Sequence[int], offset: int, device: Device) -> Any:
        """Bool mask over the last two dims of ``shape`` that is **true where elements are masked
        out** by an upper-triangular selection, i.e. below diagonal ``offset`` (Burn's
        ``triu_mask``): true where ``col - row < offset``. ``triu_mask([3, 3], 0)`` is
        ``[[F, F, F], [T, F, F], [T, T, F]]``; use it as ``x.mask_fill(mask, 0)``.

        Raises:
            ShapeError: fewer than 2 dims or a negative size.
        """
        return RearrangeOps._tri_mask("triu_mask", shape, offset, device, "lower")

    @staticmethod
    def tril_mask(shape: Sequence[int], offset: int, device: Device) -> Any:
        """Bool mask, **true where elements are masked out** by a lower-triangular selection
        (Burn's ``tril_mask``): true where ``col - row > offset``. ``tril_mask([3, 3], 0)`` is
        ``[[F, T, T], [F, F, T], [F, F, F]]``.

        Raises:
            ShapeError: fewer than 2 dims or a negative size.
        """
        return RearrangeOps._tri_mask("tril_mask", shape, offset, device, "greater")

    @staticmethod
    def diag_mask(shape: Sequence[int], offset: int, device: Device) -> Any:
        """Bool mask, **true everywhere except on diagonal** ``offset`` (Burn's ``diag_mask``):
        true where ``col - row != offset``. ``diag_mask([3, 3], 1)`` is
        ``[[T, F, T], [T, T, F], [T, T, T]]``.

        Raises:
            ShapeError: fewer than 2 dims or a negative size.
        """
        return RearrangeOps._tri_mask("diag_mask", shape, offset, device, "not_equal")

    def _tri(self, op: str, diagonal: int, cmp: str) -> Any:
        if self.kind not in (Float, Int):
            raise KindError(f"{op} needs a Float or Int tensor, got {self.kind}; convert with .int() first.")
        shape = self.shape
        if len(shape) < 2:
            raise ShapeError(f"{op}: needs at least 2 dims (the last two form the matrix), got shape {list(shape)}.")
        mask = RearrangeOps._tri_mask(op, shape[-2:], diagonal, self.device, cmp)
        return self.mask_fill(mask, 0)

    def triu(self, diagonal: int = 0) -> Any:
        """The upper triangle of the last two dims, the rest set to 0 (Burn's ``triu``,
        ``torch.triu``): keeps elements with ``col - row >= diagonal``.

        Raises:
            KindError: a Bool tensor. ShapeError: rank < 2.
        """
        return self._tri("triu", diagonal, "lower")

    def tril(self, diagonal: int = 0) -> Any:
        """The lower triangle of the last two dims, the rest set to 0 (Burn's ``tril``,
        ``torch.tril``): keeps elements with ``col - row <= diagonal``.

        Raises:
            KindError: a Bool tensor. ShapeError: rank < 2.
        """
        return self._tri("tril", diagonal, "greater")
