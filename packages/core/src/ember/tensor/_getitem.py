"""``t[...]``: numpy-style indexing of tensors (part of Burn's ``BasicOps``), on the slicing and ``take`` of
:mod:`._indexing`. A key of ints and positive-step slices takes a fast path (one ``slice`` primitive); any other
key is expanded (:func:`_expand_key`), planned item by item (:func:`_plan_key`), applied as one slice, a flip,
at most one ``take`` and a reshape (:func:`_result_shape`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._errors import IndexError_
from .._kind import Bool
from . import _core
from ._index_args import _FULL, _index, _is_int, call_wrap, fail, index_arg, norm_range, plan_kind
from ._indexing import IndexingOps

__all__ = ["ItemOps"]


class ItemOps(IndexingOps):
    __slots__ = ()

    def __getitem__(self, key: Any) -> Any:
        """numpy-style indexing: ints (drop the dim; negative count from the end), slices (any
        step, negative bounds), ``None`` (a new dim of size 1), ``...``, and on at most one dim an
        Int tensor, integer numpy array or list of ints (its shape replaces the dim, as
        :meth:`take`; lists may hold negative indices). ``x[1:, ::-1, None]`` works on every
        backend (negative steps become a slice plus a flip). As in numpy and PyTorch, when ints and
        the index list are separated by a slice or ``None`` (``x[0, :, [1, 2]]``), the index
        list's dims come first in the result.

        Raises:
            IndexError_: too many indices, an int or list entry out of range, or an Int tensor
            value outside ``[0, size)`` (as :meth:`take`). TypeError: bools, Bool masks
            (use ``mask_where``/``nonzero``) or several index tensors (use ``gather_nd``).
        """
        fast = self._getitem_basic(key)
        if fast is not None:
            return fast
        shape = self.shape
        items = _expand_key(list(key) if type(key) is tuple else [key], shape)
        slices, flips, plan, take_dim, take_idx = _plan_key(self, items, shape)
        t = self._slice_norm("indexing", slices, flips)
        if take_idx is not None:
            t = t._take("indexing", take_dim, take_idx)
        cur = t.shape
        out, take_pos, take_rank = _result_shape(plan, cur)
        if out != cur:
            t = call_wrap("indexing", t, lambda: t.ops.reshape(t.primitive, out))
        # numpy/PyTorch rule: ints and the index list are all "advanced" indices; when they are
        # not adjacent in the key, the index list's dims go first.
        adv = [j for j, it in enumerate(items) if _is_int(it) or (it is not None and plan_kind(it))]
        if take_pos > 0 and adv and adv[-1] - adv[0] + 1 != len(adv):
            rest = [i for i in range(len(out)) if not take_pos <= i < take_pos + take_rank]
            t = t.permute(list(range(take_pos, take_pos + take_rank)) + rest)
        return t

    def _getitem_basic(self, key: Any) -> Any:
        """Fast path of ``t[...]`` for keys made only of ints and positive-step slices (the common
        case): one ``slice`` primitive plus a ``reshape`` when ints drop dims. ``None`` when the
        key needs the general path (it also reports the errors)."""
        items = key if type(key) is tuple else (key,)
        ops = self.ops
        p = self.primitive
        shape = ops.shape(p)
        if len(items) > len(shape):
            return None
        slices: list[slice] = []
        out: list[int] = []
        full = True
        drop = False
        for it, n in zip(items, shape):
            ti = type(it)
            if ti is int:
                if not -n <= it < n:
                    return None
                i = it + n if it < 0 else it
                slices.append(slice(i, i + 1, 1))
                drop = True
                full = False
            elif ti is slice:
                st = it.step
                if st is not None and (type(st) is not int or st < 1):
                    return None
                start, stop, step = it.indices(n)
                if stop < start:
                    stop = start
                slices.append(slice(start, stop, step))
                m = len(range(start, stop, step))
                out.append(m)
                if m != n:
                    full = False
            else:
                return None
        if full and not drop:
            return self
        for n in shape[len(items):]:
            slices.append(slice(0, n, 1))
            out.append(n)
        try:
            r = ops.slice(p, tuple(slices))
            if drop:
                r = ops.reshape(r, tuple(out))
        except Exception as exc:
            raise fail("indexing", exc, self) from exc
        return _core.new(r, self.device, self.kind, ops)  # the fast path builds the tensor without ``wrap``

    def __setitem__(self, key: Any, value: Any) -> None:
        raise TypeError(
            "ember tensors are immutable values and do not support item assignment; use "
            "t = t.slice_assign(ranges, values) (or slice_fill / mask_fill / select_assign), which returns a "
            "new tensor."
        )


def _expand_key(items: list[Any], shape: tuple[int, ...]) -> list[Any]:
    """The items of a ``t[...]`` key with ``...`` (or the missing trailing dims) expanded to full slices.

    Raises:
        IndexError_: several ellipses, or more indices than dims.
    """
    rank = len(shape)
    n_ell = sum(1 for it in items if it is Ellipsis)
    if n_ell > 1:
        raise IndexError_("indexing: an index can only have a single ellipsis ('...').")
    used = sum(1 for it in items if it is not None and it is not Ellipsis)
    if used > rank:
        raise IndexError_(
            f"indexing: too many indices for a tensor of rank {rank} (shape {list(shape)}): {used} given."
        )
    if n_ell:
        i = next(j for j, it in enumerate(items) if it is Ellipsis)
        items[i:i + 1] = [_FULL] * (rank - used)
    else:
        items.extend([_FULL] * (rank - used))
    return items


def _plan_key(t: Any, items: list[Any], shape: tuple[int, ...]) -> tuple[
        tuple[slice, ...], tuple[int, ...], list[Any], int, Any]:
    """``(slices, flips, plan, take_dim, take_idx)`` of an expanded key: one slice per dim, the dims to flip
    (negative steps), per item ``"new"`` / ``"drop"`` / ``"keep"`` / ``("take", index tensor)``, and the dim and
    Int tensor of the (at most one) index list.

    Raises:
        IndexError_: an int or list entry out of range. TypeError: bools, Bool masks, several index lists, or an
        unsupported item.
    """
    slices: list[slice] = []
    flips: list[int] = []
    plan: list[Any] = []
    take_dim = -1
    take_idx: Any = None
    for it in items:
        if it is None:
            plan.append("new")
            continue
        d = len(slices)
        if isinstance(it, slice):
            s, f = norm_range("indexing", it, shape[d], d)
            slices.append(s)
            if f:
                flips.append(d)
            plan.append("keep")
        elif _is_int(it):
            i = _index("indexing", int(it), shape[d], d)
            slices.append(slice(i, i + 1, 1))
            plan.append("drop")
        elif isinstance(it, (bool, np.bool_)):
            raise TypeError("indexing: bool indices are not supported; use mask_where/mask_fill or nonzero().")
        elif plan_kind(it):
            if take_idx is not None:
                raise TypeError(
                    "indexing: an index tensor or list is allowed on one dim only; for coordinates over "
                    "several dims use gather_nd."
                )
            take_idx = index_arg("indexing", t, _index_list(it, shape[d], d))
            take_dim = d
            slices.append(slice(0, shape[d], 1))
            plan.append(("take", take_idx))
        else:
            raise TypeError(
                f"indexing: unsupported index {it!r} of type {type(it).__name__}; use ints, slices, None, "
                "..., or an Int tensor / list of ints."
            )
    return tuple(slices), tuple(flips), plan, take_dim, take_idx


def _index_list(it: Any, n: int, d: int) -> Any:
    """An index tensor as it is (not Bool), or a list / integer array with its negative entries counted from the
    end (numpy semantics) after a range check against the dim's size ``n``."""
    if type(it) is _core.Tensor:
        if it.kind is Bool:
            raise TypeError("indexing: Bool masks are not supported as indices; use mask_where/mask_fill or nonzero().")
        return it
    arr = np.asarray(it)
    if arr.dtype.kind in "iu" and arr.size:
        if (arr < -n).any() or (arr >= n).any():
            raise IndexError_(f"indexing: index list {it!r} has values out of range for dim {d} of size {n}.")
        return np.where(arr < 0, arr + n, arr)
    return it


def _result_shape(plan: list[Any], cur: tuple[int, ...]) -> tuple[tuple[int, ...], int, int]:
    """The shape of the result of ``t[...]`` from the plan and the shape ``cur`` after slicing and taking, with
    the position and rank of the index list's dims in it (``-1, 0`` without one)."""
    out: list[int] = []
    c = 0
    take_pos, take_rank = -1, 0
    for p in plan:
        if p == "new":
            out.append(1)
        elif p == "drop":
            c += 1
        elif p == "keep":
            out.append(cur[c])
            c += 1
        else:
            take_pos, take_rank = len(out), p[1].rank
            out.extend(cur[c:c + take_rank])
            c += take_rank
    return tuple(out), take_pos, take_rank
