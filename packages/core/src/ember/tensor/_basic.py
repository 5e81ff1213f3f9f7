"""Shape tensor ops (Burn's ``BasicOps``): reshape, squeeze/unsqueeze, permutations, flip,
expand/repeat. ``BasicOps`` gathers the whole group: cat/stack/split, roll, unfold, pad and the triangular masks
are :mod:`._rearrange`, the indexing half (slicing, ``t[...]``, select, gather, scatter, masks) :mod:`._indexing`
and :mod:`._getitem`. Every op validates its arguments here, in the core, and then calls backend
primitives; composite ops (``flatten``, ``transpose``, ``chunk``, ``roll``, ``triu`` ...) are
written with primitives so every backend, and ``Autodiff``, gets them for free.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._errors import IndexError_, ShapeError
from ._core import wrap
from ._getitem import ItemOps
from ._index_args import fail, seq_of_ints
from ._rearrange import RearrangeOps
from ._util import norm_dim, norm_dims, numel


class BasicOps(RearrangeOps, ItemOps):
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

    def _reshaped(self, op: str, shape: tuple[int, ...]) -> Any:
        """``self`` with exactly ``shape`` (same element count, checked by the caller's arithmetic): the reshape
        of the ops that compute their target (``flatten``, ``squeeze``, ``unsqueeze``, ``repeat``), where a ``0``
        is an empty dim, not :meth:`reshape`'s "keep this dim" (Burn's convention for a shape a user writes)."""
        if shape == self.shape:
            return self
        return self._prim(op, "reshape", shape)

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
            return self._reshaped("flatten", (1,))
        s = norm_dim("flatten", start_dim, len(shape))
        e = norm_dim("flatten", end_dim, len(shape))
        if s > e:
            raise IndexError_(f"flatten: start_dim {start_dim} comes after end_dim {end_dim} (rank {len(shape)}).")
        return self._reshaped("flatten", shape[:s] + (numel(shape[s:e + 1]),) + shape[e + 1:])

    def squeeze(self, dim: int | None = None) -> Any:
        """Every dim of size 1 removed (Burn's ``squeeze``); ``squeeze(dim)`` is :meth:`squeeze_dim`."""
        if dim is not None:
            return self.squeeze_dim(dim)
        return self._reshaped("squeeze", tuple(s for s in self.shape if s != 1))

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
        return self._reshaped(_op, tuple(s for i, s in enumerate(shape) if i not in ds))

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
        return self._reshaped("unsqueeze", (1,) * (rank - len(shape)) + shape)

    def unsqueeze_dim(self, dim: int) -> Any:
        """A new dim of size 1 inserted at ``dim`` of the result (``-1`` appends; PyTorch's
        ``unsqueeze``). ``[3, 4].unsqueeze_dim(1) -> [3, 1, 4]``.

        Raises:
            IndexError_: ``dim`` outside ``[-(rank + 1), rank]``.
        """
        r = self.rank
        d = norm_dim("unsqueeze_dim", dim, r + 1)
        s = self.shape
        return self._reshaped("unsqueeze_dim", s[:d] + (1,) + s[d:])

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
        return self._reshaped("unsqueeze_dims", tuple(1 if i in pos else next(it) for i in range(out_rank)))

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
        t = self._reshaped("repeat", shape)
        if all(r == 1 for r in reps):
            return t
        inter = tuple(x for s in shape for x in (1, s))
        big = tuple(x for r, s in zip(reps, shape) for x in (r, s))
        return t._reshaped("repeat", inter).expand(big)._reshaped("repeat", tuple(r * s for r, s in zip(reps, shape)))


__all__ = ["BasicOps"]
