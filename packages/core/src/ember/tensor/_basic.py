"""Shape tensor ops (Burn's ``BasicOps``): reshape, squeeze/unsqueeze, permutations, flip,
expand/repeat, cat/stack/split, roll, unfold, pad and the triangular masks.

The indexing half of the group (slicing, ``t[...]``, select, gather, scatter, masks) lives in
:mod:`._indexing`. Every op validates its arguments here, in the core, and then calls backend
primitives; composite ops (``flatten``, ``transpose``, ``chunk``, ``roll``, ``triu`` ...) are
written with primitives so every backend, and ``Autodiff``, gets them for free.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from .._errors import IndexError_, KindError, ShapeError
from .._kind import Bool, Float, Int
from ..backend._device import Device
from . import _core
from ._core import wrap
from ._getitem import ItemOps
from ._index_args import fail, seq_of_ints
from ._util import as_shape, check_same, norm_dim, norm_dims, numel


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
    if any(a < 0 or b < 0 for a, b in pairs):
        raise ShapeError(f"pad: padding {padding!r} has a negative amount; use slice to crop.")
    return ((0, 0),) * (rank - len(pairs)) + tuple(pairs)


class BasicOps(ItemOps):
    __slots__ = ()

    # ------------------------------------------------------------------ reshaping
    def reshape(self, shape: Sequence[int]) -> Any:
        """The same elements (C order) with ``shape``. An entry ``-1`` is inferred (at most one);
        ``0`` keeps that dim's current size (Burn's convention).

        Raises:
            ShapeError: the element counts differ, or several ``-1``.
        """
        cur = self.shape
        if isinstance(shape, int):
            shape = (shape,)
        shp = [int(s) for s in shape]
        for i, s in enumerate(shp):
            if s == 0:
                if i >= len(cur):
                    raise ShapeError(f"reshape: 0 at position {i} but the tensor has rank {len(cur)}.")
                shp[i] = cur[i]
        neg = [i for i, s in enumerate(shp) if s == -1]
        total = numel(cur)
        if len(neg) > 1:
            raise ShapeError(f"reshape: {shape!r} has more than one -1; only one dim can be inferred.")
        if any(s < -1 for s in shp):
            raise ShapeError(f"reshape: {shape!r} has a negative size other than -1.")
        if neg:
            rest = numel([s for s in shp if s != -1])
            if rest == 0 or total % rest:
                raise ShapeError(
                    f"reshape: cannot infer -1 in {list(shape)} for {total} elements (shape {list(cur)})."
                )
            shp[neg[0]] = total // rest
        new_shape = tuple(shp)
        if numel(new_shape) != total:
            raise ShapeError(
                f"reshape: shape {list(cur)} ({total} elements) cannot become {list(new_shape)} "
                f"({numel(new_shape)} elements)."
            )
        if new_shape == cur:
            return self
        return self._prim("reshape", "reshape", new_shape)

    def _prim(self, op: str, prim: str, *args: Any) -> Any:
        """One primitive call on this tensor, errors mapped, same kind."""
        try:
            p = getattr(self.ops, prim)(self.primitive, *args)
        except Exception as exc:
            raise fail(op, exc, self) from exc
        return wrap(p, self, self.kind)

    def flatten(self, start_dim: int = 0, end_dim: int = -1) -> Any:
        """Dims ``start_dim..=end_dim`` (inclusive, Burn/PyTorch) merged into one:
        ``[2, 3, 4].flatten(1, 2) -> [2, 12]``. A rank-0 tensor becomes ``[1]``.

        Raises:
            IndexError_: a dim out of range, or ``start_dim > end_dim``.
        """
        shape = self.shape
        if not shape:
            return self.reshape((1,))
        s = norm_dim("flatten", start_dim, len(shape))
        e = norm_dim("flatten", end_dim, len(shape))
        if s > e:
            raise IndexError_(f"flatten: start_dim {start_dim} comes after end_dim {end_dim} (rank {len(shape)}).")
        return self.reshape(shape[:s] + (numel(shape[s:e + 1]),) + shape[e + 1:])

    def squeeze(self, dim: int | None = None) -> Any:
        """Every dim of size 1 removed (Burn's ``squeeze``); ``squeeze(dim)`` is :meth:`squeeze_dim`."""
        if dim is not None:
            return self.squeeze_dim(dim)
        return self.reshape(tuple(s for s in self.shape if s != 1))

    def squeeze_dim(self, dim: int) -> Any:
        """The size-1 ``dim`` removed (Burn's ``squeeze_dim``): ``[2, 1, 3].squeeze_dim(1) -> [2, 3]``.

        Raises:
            IndexError_: ``dim`` out of range. ShapeError: the dim's size is not 1.
        """
        return self.squeeze_dims([dim], _op="squeeze_dim")

    def squeeze_dims(self, dims: Sequence[int], _op: str = "squeeze_dims") -> Any:
        """The given size-1 dims removed (Burn's ``squeeze_dims``; negative dims count from the
        end). An empty list removes every size-1 dim, as Burn does.

        Raises:
            IndexError_: a dim out of range or repeated. ShapeError: a dim whose size is not 1.
        """
        shape = self.shape
        ds = norm_dims(_op, seq_of_ints(_op, "dims", dims), len(shape))
        if not ds:
            return self.squeeze()
        for d in ds:
            if shape[d] != 1:
                raise ShapeError(
                    f"{_op}: dim {d} of shape {list(shape)} has size {shape[d]}; only size-1 dims can be squeezed."
                )
        return self.reshape(tuple(s for i, s in enumerate(shape) if i not in ds))

    def unsqueeze(self, rank: int) -> Any:
        """Size-1 dims prepended up to ``rank`` (Burn's ``unsqueeze::<D2>()``):
        ``[3, 4].unsqueeze(4) -> [1, 1, 3, 4]``. PyTorch's ``unsqueeze(dim)`` is :meth:`unsqueeze_dim`.

        Raises:
            ShapeError: ``rank`` is lower than the tensor's rank.
        """
        shape = self.shape
        if not isinstance(rank, int) or rank < len(shape):
            raise ShapeError(
                f"unsqueeze: target rank {rank!r} is lower than the tensor's rank {len(shape)}; "
                "to insert a dim at a position use unsqueeze_dim(dim)."
            )
        return self.reshape((1,) * (rank - len(shape)) + shape)

    def unsqueeze_dim(self, dim: int) -> Any:
        """A new dim of size 1 inserted at ``dim`` of the result (``-1`` appends; PyTorch's
        ``unsqueeze``). ``[3, 4].unsqueeze_dim(1) -> [3, 1, 4]``.

        Raises:
            IndexError_: ``dim`` outside ``[-(rank + 1), rank]``.
        """
        r = self.rank
        d = norm_dim("unsqueeze_dim", dim, r + 1)
        s = self.shape
        return self.reshape(s[:d] + (1,) + s[d:])

    def unsqueeze_dims(self, dims: Sequence[int]) -> Any:
        """Size-1 dims inserted at ``dims``, positions in the *result* (``numpy.expand_dims``;
        negative positions count from the result's end): ``[3, 4].unsqueeze_dims([0, -1]) ->
        [1, 3, 4, 1]``.

        Raises:
            IndexError_: a position out of range for the result's rank, or repeated.
        """
        shape = self.shape
        ds = seq_of_ints("unsqueeze_dims", "dims", dims)
        out_rank = len(shape) + len(ds)
        pos = set(norm_dims("unsqueeze_dims", ds, out_rank))
        it = iter(shape)
        return self.reshape(tuple(1 if i in pos else next(it) for i in range(out_rank)))

    # ------------------------------------------------------------------ permutations
    def permute(self, axes: Sequence[int]) -> Any:
        """Dims reordered: result dim ``i`` is input dim ``axes[i]`` (negative dims allowed):
        ``[2, 3, 4].permute([2, 0, 1]) -> [4, 2, 3]``.

        Raises:
            IndexError_: an axis out of range or repeated. ShapeError: not one axis per dim.
        """
        shape = self.shape
        ax = seq_of_ints("permute", "axes", axes)
        if len(ax) != len(shape):
            raise ShapeError(f"permute: {len(ax)} axes {ax} for a tensor of rank {len(shape)}; give every dim once.")
        a = norm_dims("permute", ax, len(shape))
        if a == tuple(range(len(shape))):
            return self
        return self._prim("permute", "permute", a)

    def swap_dims(self, dim1: int, dim2: int) -> Any:
        """Dims ``dim1`` and ``dim2`` exchanged (Burn's ``swap_dims``, ``torch.transpose``).

        Raises:
            IndexError_: a dim out of range.
        """
        r = self.rank
        a, b = norm_dim("swap_dims", dim1, r), norm_dim("swap_dims", dim2, r)
        if a == b:
            return self
        axes = list(range(r))
        axes[a], axes[b] = b, a
        return self._prim("swap_dims", "permute", tuple(axes))

    def transpose(self) -> Any:
        """The last two dims swapped (Burn's ``transpose``): ``[b, m, n] -> [b, n, m]``. Tensors of
        rank 0 or 1 are returned unchanged (as ``torch.Tensor.t``)."""
        if self.rank < 2:
            return self
        return self.swap_dims(-2, -1)

    def t(self) -> Any:
        """Alias of :meth:`transpose` (Burn's ``t``)."""
        return self.transpose()

    @property
    def T(self) -> Any:  # noqa: N802 - numpy/PyTorch name
        """Alias of :meth:`transpose` (last two dims)."""
        return self.transpose()

    def movedim(self, source: int | Sequence[int], destination: int | Sequence[int]) -> Any:
        """Dims ``source`` moved to positions ``destination``, the others keeping their order
        (Burn's/PyTorch's ``movedim``): ``[2, 3, 4].movedim(0, -1) -> [3, 4, 2]``.

        Raises:
            IndexError_: a dim out of range or repeated. ShapeError: lists of different lengths.
        """
        r = self.rank
        src = norm_dims("movedim", seq_of_ints("movedim", "source", source), r)
        dst = norm_dims("movedim", seq_of_ints("movedim", "destination", destination), r)
        if len(src) != len(dst):
            raise ShapeError(f"movedim: source {source!r} and destination {destination!r} differ in length.")
        order: list[int | None] = [None] * r
        for s, d in zip(src, dst):
            order[d] = s
        rest = iter(i for i in range(r) if i not in src)
        return self.permute([o if o is not None else next(rest) for o in order])

    def flip(self, axes: Sequence[int]) -> Any:
        """Elements reversed along ``axes`` (Burn's ``flip``; negative dims allowed).

        Raises:
            IndexError_: an axis out of range or repeated.
        """
        a = norm_dims("flip", seq_of_ints("flip", "axes", axes), self.rank)
        if not a:
            return self
        return self._prim("flip", "flip", tuple(sorted(a)))

    # ------------------------------------------------------------------ expand / repeat
    def expand(self, shape: Sequence[int]) -> Any:
        """Broadcast to ``shape`` (numpy rules, Burn's ``expand``; ``-1`` keeps a dim; the rank may
        grow on the left). No data is copied where the library allows views.

        Raises:
            ShapeError: a dim of size other than 1 would change, or the rank would shrink.
        """
        cur = self.shape
        shp = seq_of_ints("expand", "shape", shape)
        if len(shp) < len(cur):
            raise ShapeError(f"expand: cannot expand shape {list(cur)} to the lower rank {list(shp)}.")
        off = len(shp) - len(cur)
        for i, s in enumerate(shp):
            if s == -1:
                if i < off:
                    raise ShapeError(f"expand: -1 at new leading dim {i} of {list(shp)}.")
                shp[i] = cur[i - off]
            elif s < 0:
                raise ShapeError(f"expand: shape {list(shape)} has a negative size.")
        for i, c in enumerate(cur):
            if c != 1 and c != shp[i + off]:
                raise ShapeError(
                    f"expand: dim {i} of shape {list(cur)} has size {c} and cannot become {shp[i + off]}; "
                    "only size-1 dims expand."
                )
        tgt = tuple(shp)
        if tgt == cur:
            return self
        return self._prim("expand", "expand", tgt)

    def repeat_dim(self, dim: int, times: int) -> Any:
        """The tensor tiled ``times`` along ``dim`` (Burn's ``repeat_dim``): ``[2, 3]`` repeated 2
        times on dim 0 gives ``[4, 3]`` (rows ``0, 1, 0, 1``).

        Raises:
            IndexError_: ``dim`` out of range. ShapeError: ``times`` negative.
        """
        d = norm_dim("repeat_dim", dim, self.rank)
        if not isinstance(times, int) or times < 0:
            raise ShapeError(f"repeat_dim: times must be an int >= 0, got {times!r}.")
        if times == 1:
            return self
        return self._prim("repeat_dim", "repeat_dim", d, times)

    def repeat(self, sizes: Sequence[int]) -> Any:
        """The tensor tiled ``sizes[i]`` times along each dim (Burn's ``repeat``,
        ``torch.Tensor.repeat``): ``[2, 3].repeat([2, 1]) -> [4, 3]``. Extra leading entries add
        dims, as in PyTorch. One expand and one reshape, whatever the rank.

        Raises:
            ShapeError: fewer sizes than dims, or a negative size.
        """
        reps = seq_of_ints("repeat", "sizes", sizes)
        shape = self.shape
        if len(reps) < len(shape) or any(r < 0 for r in reps):
            raise ShapeError(
                f"repeat: sizes {reps} must be non-negative with at least one entry per dim of shape {list(shape)}."
            )
        shape = (1,) * (len(reps) - len(shape)) + shape
        t = self.reshape(shape) if shape != self.shape else self
        if all(r == 1 for r in reps):
            return t
        inter = tuple(x for s in shape for x in (1, s))
        big = tuple(x for r, s in zip(reps, shape) for x in (r, s))
        return t.reshape(inter).expand(big).reshape(tuple(r * s for r, s in zip(reps, shape)))

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
            return self.flatten().roll(sh, [0], _op=_op).reshape(shape)
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
        reflect ``[3, 2, 1, 2, 3, 2]``, edge ``[1, 1, 1, 2, 3, 3]``.

        Raises:
            ShapeError: negative amounts, more pairs than dims, a 4-tuple on a rank < 2 tensor,
            reflect padding >= the dim size, or edge padding of an empty dim.
            KindError: a ``value`` that does not fit the kind.
        """
        shape = self.shape
        pads = _pads_of(padding, len(shape))
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
        return BasicOps._tri_mask("triu_mask", shape, offset, device, "lower")

    @staticmethod
    def tril_mask(shape: Sequence[int], offset: int, device: Device) -> Any:
        """Bool mask, **true where elements are masked out** by a lower-triangular selection
        (Burn's ``tril_mask``): true where ``col - row > offset``. ``tril_mask([3, 3], 0)`` is
        ``[[F, T, T], [F, F, T], [F, F, F]]``.

        Raises:
            ShapeError: fewer than 2 dims or a negative size.
        """
        return BasicOps._tri_mask("tril_mask", shape, offset, device, "greater")

    @staticmethod
    def diag_mask(shape: Sequence[int], offset: int, device: Device) -> Any:
        """Bool mask, **true everywhere except on diagonal** ``offset`` (Burn's ``diag_mask``):
        true where ``col - row != offset``. ``diag_mask([3, 3], 1)`` is
        ``[[T, F, T], [T, T, F], [T, T, T]]``.

        Raises:
            ShapeError: fewer than 2 dims or a negative size.
        """
        return BasicOps._tri_mask("diag_mask", shape, offset, device, "not_equal")

    def _tri(self, op: str, diagonal: int, cmp: str) -> Any:
        if self.kind not in (Float, Int):
            raise KindError(f"{op} needs a Float or Int tensor, got {self.kind}; convert with .int() first.")
        shape = self.shape
        if len(shape) < 2:
            raise ShapeError(f"{op}: needs at least 2 dims (the last two form the matrix), got shape {list(shape)}.")
        mask = BasicOps._tri_mask(op, shape[-2:], diagonal, self.device, cmp)
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


__all__ = ["BasicOps"]
