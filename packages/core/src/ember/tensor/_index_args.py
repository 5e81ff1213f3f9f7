"""Argument handling shared by the indexing ops (:mod:`._indexing`, :mod:`._getitem`, :mod:`._basic`): ranges and
slices normalised, index tensors checked, masks checked, and backend failures mapped to ``ember`` errors.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from .._errors import EmberError, IndexError_, KindError, ShapeError
from .._kind import Bool, Int, Kind
from . import _core
from ._core import op_error, wrap
from ._util import broadcast_shapes, require_device

_FULL = slice(None)

#: the builtin ``slice`` (the class below defines a method of that name)
_Slice = slice


def fail(op: str, exc: Exception, *tensors: Any) -> EmberError:
    """Map a backend exception to an EmberError; a library ``IndexError`` (an index value out of
    range) becomes ``ember.IndexError``."""
    if isinstance(exc, IndexError) and not isinstance(exc, EmberError):
        shapes = ", ".join(str(list(t.shape)) for t in tensors if hasattr(t, "primitive"))
        return IndexError_(
            f"{op}: an index value is out of range for the indexed dim (operand shapes {shapes}); "
            f"index values must lie in [0, size). Backend said: {exc}"
        )
    return op_error(op, exc, *tensors)


def index_arg(op: str, t: Any, indices: Any, what: str = "indices") -> Any:
    """``indices`` as an Int tensor on ``t``'s device.

    Raises:
        KindError: a Float or Bool tensor (or non-integer array). DeviceError: another device.
    """
    if type(indices) is _core.Tensor:
        if indices.kind is not Int:
            raise KindError(
                f"{op}: {what} must be an Int tensor, got a {indices.kind} tensor; convert with .int()."
            )
        if indices.device is not t.device:
            require_device(op, t, indices, what)
        return indices
    arr = np.asarray(indices)
    if arr.size == 0 and arr.dtype.kind == "f":
        arr = arr.astype(np.int64)
    if arr.dtype.kind not in "iu":
        raise KindError(f"{op}: {what} must be integers (an Int tensor or a list of ints), got {arr.dtype} values.")
    return _core.Tensor.from_data(arr, t.device, Int)


def _index(op: str, i: Any, size: int, dim: int) -> int:
    """An integer index in ``[-size, size)`` as a non-negative int."""
    if -size <= i < size:
        return i + size if i < 0 else i
    raise IndexError_(
        f"{op}: index {i} is out of range for dim {dim} of size {size}; expected an index in "
        f"[{-size}, {size - 1}]." if size else f"{op}: index {i} given for dim {dim}, which has size 0."
    )


def _is_int(x: Any) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def norm_range(op: str, r: Any, size: int, dim: int) -> tuple[slice, bool]:
    """One per-dim range as ``(positive-step slice clipped to the dim, flip)``.

    ``r`` is ``None`` (the whole dim), an int ``i`` (``i..i+1``, the dim is kept), a Python
    ``slice``/``range`` (Python semantics, any step) or a tuple ``(start, end)`` /
    ``(start, end, step)`` (Burn's ``Slice``: the range ``start..end``, walked backward when
    ``step < 0``). A negative step becomes a positive-step slice plus a flip of the dim, so every
    backend only needs positive steps.
    """
    if r is None:
        return slice(0, size, 1), False
    if _is_int(r):
        i = _index(op, int(r), size, dim)
        return slice(i, i + 1, 1), False
    if isinstance(r, (slice, range)):
        if r.step == 0:
            raise IndexError_(f"{op}: slice step of dim {dim} is zero; use a non-zero step.")
        start, stop, step = slice(r.start, r.stop, r.step).indices(size)
        n = len(range(start, stop, step))
        if n == 0:
            return slice(0, 0, 1), False
        if n == 1:  # one element: step 1 (a huge step would overflow a backend's stride, torch's as_strided)
            return slice(start, start + 1, 1), False
        if step > 0:
            return slice(start, start + (n - 1) * step + 1, step), False
        lo = start + (n - 1) * step
        return slice(lo, start + 1, -step), n > 1
    if isinstance(r, tuple) and len(r) in (2, 3):
        start, end = r[0], r[1]
        step = r[2] if len(r) == 3 else 1
        for name, v in (("start", start), ("end", end), ("step", step)):
            if v is not None and not _is_int(v):
                raise TypeError(f"{op}: range {r!r} of dim {dim} has a non-int {name}.")
        step = 1 if step is None else int(step)
        if step == 0:
            raise IndexError_(f"{op}: range {r!r} of dim {dim} has step 0; use a non-zero step.")
        s = 0 if start is None else int(start)
        e = size if end is None else int(end)
        s = min(max(s + size if s < 0 else s, 0), size)
        e = min(max(e + size if e < 0 else e, 0), size)
        e = max(e, s)
        a = abs(step)
        n = -(-(e - s) // a)
        if n == 0:
            return slice(0, 0, 1), False
        if n == 1:  # one element (the first of the walk): step 1, as above
            return (slice(s, s + 1, 1) if step > 0 else slice(e - 1, e, 1)), False
        if step > 0:
            return slice(s, s + (n - 1) * a + 1, a), False
        hi = e - 1
        lo = hi - (n - 1) * a
        return slice(lo, hi + 1, a), n > 1
    raise TypeError(
        f"{op}: cannot use {r!r} as the range of dim {dim}; use None, an int, a slice, a range or a "
        "(start, end[, step]) tuple."
    )


def norm_ranges(
    op: str, ranges: Any, shape: tuple[int, ...]
) -> tuple[tuple[slice, ...], tuple[int, ...], tuple[int, ...]]:
    """Per-dim ranges (fewer than the rank: the remaining dims are whole) as
    ``(slices, dims to flip, result shape)``."""
    if not isinstance(ranges, (list, tuple)):
        ranges = [ranges]
    elif type(ranges) is tuple and ranges and all(r is None or _is_int(r) for r in ranges):
        raise TypeError(
            f"{op}: the tuple {ranges!r} is ambiguous; pass a list: [{ranges!r}] for one (start, end[, step]) "
            f"range on dim 0, or {list(ranges)!r} for one index per dim."
        )
    if len(ranges) > len(shape):
        raise IndexError_(
            f"{op}: {len(ranges)} ranges given for a tensor of rank {len(shape)} (shape {list(shape)}); give at "
            "most one range per dim."
        )
    slices: list[slice] = []
    flips: list[int] = []
    out: list[int] = []
    for d, size in enumerate(shape):
        if d < len(ranges):
            s, f = norm_range(op, ranges[d], size, d)
        else:
            s, f = slice(0, size, 1), False
        slices.append(s)
        out.append(len(range(s.start, s.stop, s.step)))
        if f:
            flips.append(d)
    return tuple(slices), tuple(flips), tuple(out)


def _is_full(slices: Iterable[slice], shape: tuple[int, ...]) -> bool:
    return all(s.start == 0 and s.stop == n and s.step == 1 for s, n in zip(slices, shape))


def check_mask(op: str, t: Any, mask: Any) -> None:
    """``mask`` is a Bool tensor on ``t``'s device whose shape broadcasts to ``t``'s shape."""
    if type(mask) is not _core.Tensor or mask.kind is not Bool:
        got = f"a {mask.kind} tensor" if type(mask) is _core.Tensor else type(mask).__name__
        raise KindError(f"{op}: the mask must be a Bool tensor, got {got}; build one with a comparison or .bool().")
    if mask.device is not t.device:
        require_device(op, t, mask, "mask")
    _check_broadcasts_to(op, mask.shape, t.shape, "mask")


def _check_broadcasts_to(op: str, src: tuple[int, ...], dst: tuple[int, ...], what: str) -> None:
    if src != dst and broadcast_shapes(op, dst, src) != dst:
        raise ShapeError(
            f"{op}: the {what} of shape {list(src)} does not broadcast to the tensor's shape {list(dst)}; "
            "it may not add dims or grow a dim."
        )


def plan_kind(it: Any) -> bool:
    """True for an index tensor, numpy array or list inside a ``t[...]`` key."""
    return type(it) is _core.Tensor or isinstance(it, (list, np.ndarray))


def seq_of_ints(op: str, what: str, xs: Any) -> list[int]:
    """``xs`` (an int or a sequence of ints) as a list of Python ints."""
    if _is_int(xs):
        return [int(xs)]
    if not isinstance(xs, Sequence) or not all(_is_int(x) for x in xs):
        raise TypeError(f"{op}: {what} must be an int or a sequence of ints, got {xs!r}.")
    return [int(x) for x in xs]


def call_wrap(op: str, like: Any, fn: Any, *operands: Any, kind: Kind | None = None) -> Any:
    """``fn()`` (the backend calls, returning a primitive) as a tensor of ``kind`` (default: ``like``'s) on
    ``like``'s device; a failure becomes the ``ember`` error of :func:`fail` naming ``op`` and the operands
    (``like`` first). The one try/fail/wrap of every indexing op."""
    try:
        p = fn()
    except Exception as exc:
        raise fail(op, exc, like, *operands) from exc
    return wrap(p, like, like.kind if kind is None else kind)
