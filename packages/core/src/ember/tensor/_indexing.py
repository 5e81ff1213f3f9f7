"""Indexing tensor ops (part of Burn's ``BasicOps``): slicing, ``t[...]``, select, gather,
scatter, take, the N-d gather/scatter, masks and the Bool coordinate helpers.

Conventions shared by every op here:

- Index tensors are ``Int`` tensors on the tensor's device (an ``Autodiff`` device and its inner
  device count as the same); Python lists of ints and integer numpy arrays are accepted too.
- Index *values* must lie in ``[0, size)`` of the indexed dim; negative values are out of range
  (they are not counted from the end). The core checks them before the backend call with one
  min/max reduction (:mod:`ember.tensor._index_check`), so every backend raises the same
  ``ember.IndexError`` naming the op, the value, the dim and its size. Not checked, and the
  library's behaviour applies, for traced values (inside ``ember_jax.jit``) and on devices where
  ``Backend.checks_index_values`` is false (torch on CUDA). Python lists given to ``t[...]`` may
  hold negative indices (numpy semantics).
- Ops that "assign" return a new tensor: tensors are immutable values.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from .._errors import EmberError, IndexError_, KindError, ShapeError
from .._kind import Bool, Int
from . import _core
from ._base import TensorBase
from ._core import op_error, wrap
from ._index_check import check_index_values, index_bounds, out_of_range
from ._util import broadcast_shapes, check_same, norm_dim, numel, require_device

_FULL = slice(None)

#: the builtin ``slice`` (the class below defines a method of that name)
_Slice = slice


# ---------------------------------------------------------------------- helpers
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


class IndexingOps(TensorBase):
    __slots__ = ()

    # ------------------------------------------------------------------ slicing
    def slice(self, ranges: Any) -> Any:
        """A sub-tensor selected by one range per leading dim (Burn's ``slice``); the rank is kept.

        Each range is ``None`` (whole dim), an int ``i`` (``i..i+1``; the dim is kept with size
        1), a Python ``slice`` or ``range`` (Python semantics: negative bounds count from the end,
        any non-zero step, ``slice(None, None, -1)`` reverses), or a tuple ``(start, end)`` /
        ``(start, end, step)`` with Burn's ``Slice`` semantics: the range ``start..end`` (negative
        bounds count from the end, bounds are clamped to the dim), walked backward when ``step``
        is negative (``(0, 5, -2)`` gives indices 4, 2, 0). Dims without a range are kept whole.

        Example: ``x.slice([slice(None), (1, None, 2)])`` on ``[2, 5]`` gives ``[2, 2]``.

        Raises:
            IndexError_: more ranges than dims, an int out of range, or a zero step.
        """
        slices, flips, _ = norm_ranges("slice", ranges, self.shape)
        return self._slice_norm("slice", slices, flips)

    def _slice_norm(self, op: str, slices: tuple[_Slice, ...], flips: tuple[int, ...]) -> Any:
        if _is_full(slices, self.shape) and not flips:
            return self
        ops = self.ops
        try:
            p = self.primitive
            if not _is_full(slices, self.shape):
                p = ops.slice(p, slices)
            if flips:
                p = ops.flip(p, flips)
        except Exception as exc:
            raise fail(op, exc, self) from exc
        return wrap(p, self, self.kind)

    def slice_dim(self, dim: int, range_: Any) -> Any:
        """:meth:`slice` on one dim (Burn's ``slice_dim``); ``range_`` as in :meth:`slice`.

        Raises:
            IndexError_: ``dim`` out of range, an int index out of range, or a zero step.
        """
        shape = self.shape
        d = norm_dim("slice_dim", dim, len(shape))
        s, f = norm_range("slice_dim", range_, shape[d], d)
        slices = tuple(s if i == d else slice(0, n, 1) for i, n in enumerate(shape))
        return self._slice_norm("slice_dim", slices, (d,) if f else ())

    def narrow(self, dim: int, start: int, length: int) -> Any:
        """Elements ``start .. start + length`` of ``dim`` (PyTorch/Burn ``narrow``); ``start`` may be
        negative (counted from the end).

        Raises:
            IndexError_: ``dim`` out of range, or the window does not fit in the dim.
        """
        shape = self.shape
        d = norm_dim("narrow", dim, len(shape))
        n = shape[d]
        s = start + n if start < 0 else start
        if not (0 <= s <= n) or length < 0 or s + length > n:
            raise IndexError_(
                f"narrow: start {start} with length {length} does not fit dim {dim} of size {n} "
                f"(shape {list(shape)}); need 0 <= start and start + length <= {n}."
            )
        slices = tuple(slice(s, s + length, 1) if i == d else slice(0, m, 1) for i, m in enumerate(shape))
        return self._slice_norm("narrow", slices, ())

    def slice_assign(self, ranges: Any, values: Any) -> Any:
        """A copy with the region selected by ``ranges`` (as in :meth:`slice`) replaced by
        ``values``, a tensor of the same kind whose shape is the region's shape (Burn's
        ``slice_assign``). Negative steps are allowed: ``values`` is written in the region's
        order, as ``t.slice(ranges)`` would read it.

        Raises:
            ShapeError: ``values`` is not shaped as the region. IndexError_: as :meth:`slice`.
            KindError/DeviceError: ``values`` of another kind or device.
        """
        slices, flips, shape = norm_ranges("slice_assign", ranges, self.shape)
        if type(values) is not _core.Tensor:
            raise TypeError(
                f"slice_assign: values must be a tensor, got {type(values).__name__}; use slice_fill for a scalar."
            )
        if values.device is not self.device or values.kind is not self.kind:
            check_same("slice_assign", self, values)
        if values.shape != shape:
            raise ShapeError(
                f"slice_assign: values have shape {list(values.shape)} but the region has shape {list(shape)} "
                f"(tensor shape {list(self.shape)}); reshape or expand the values."
            )
        ops = self.ops
        try:
            v = values.primitive
            if flips:
                v = ops.flip(v, flips)
            p = ops.slice_assign(self.primitive, slices, v)
        except Exception as exc:
            raise fail("slice_assign", exc, self, values) from exc
        return wrap(p, self, self.kind)

    def slice_fill(self, ranges: Any, value: Any) -> Any:
        """A copy with the region selected by ``ranges`` filled with the scalar ``value`` (Burn's
        ``slice_fill``).

        Raises:
            IndexError_: as :meth:`slice`. KindError: a value that does not fit the kind.
        """
        slices, _, shape = norm_ranges("slice_fill", ranges, self.shape)
        v = _core.scalar_for("slice_fill", self, value)
        if numel(shape) == 0:
            return self
        ops = self.ops
        try:
            fill = ops.expand(ops.full((1,) * len(shape), v, self.dtype, self.device.handle), shape)
            p = ops.slice_assign(self.primitive, slices, fill)
        except Exception as exc:
            raise fail("slice_fill", exc, self) from exc
        return wrap(p, self, self.kind)

    # ------------------------------------------------------------------ select / take
    def select(self, dim: int, indices: Any) -> Any:
        """Entries at the 1-D Int ``indices`` along ``dim`` (Burn's ``select``,
        ``torch.index_select``): ``[d0, n, d2]`` with ``k`` indices on dim 1 gives ``[d0, k, d2]``.
        Indices may repeat.

        Raises:
            IndexError_: ``dim`` out of range, or an index value outside ``[0, size)``, negative
            ones included (checked on concrete values, see the module docstring). ShapeError:
            indices not 1-D (use :meth:`take`). KindError/DeviceError.
        """
        d = norm_dim("select", dim, self.rank)
        idx = index_arg("select", self, indices)
        if idx.rank != 1:
            raise ShapeError(f"select: indices must be 1-D, got shape {list(idx.shape)}; use take for any rank.")
        check_index_values("select", idx, self.shape[d], d)
        try:
            p = self.ops.select(self.primitive, d, idx.primitive)
        except Exception as exc:
            raise fail("select", exc, self, idx) from exc
        return wrap(p, self, self.kind)

    def select_assign(self, dim: int, indices: Any, values: Any) -> Any:
        """A copy with ``values`` **added** at the 1-D ``indices`` along ``dim`` (Burn's
        ``select_assign``, which accumulates like ``torch.index_add``): repeated indices add up.
        ``values`` has this tensor's shape with ``dim`` replaced by ``len(indices)``.

        Raises:
            ShapeError: indices not 1-D or values of the wrong shape. IndexError_, KindError,
            DeviceError: as :meth:`select`.
        """
        shape = self.shape
        d = norm_dim("select_assign", dim, len(shape))
        idx = index_arg("select_assign", self, indices)
        if idx.rank != 1:
            raise ShapeError(f"select_assign: indices must be 1-D, got shape {list(idx.shape)}.")
        self._check_values("select_assign", values, shape[:d] + idx.shape + shape[d + 1:])
        check_index_values("select_assign", idx, shape[d], d)
        try:
            p = self.ops.select_add(self.primitive, d, idx.primitive, values.primitive)
        except Exception as exc:
            raise fail("select_assign", exc, self, idx, values) from exc
        return wrap(p, self, self.kind)

    def _check_values(self, op: str, values: Any, want: tuple[int, ...]) -> None:
        if type(values) is not _core.Tensor:
            raise TypeError(f"{op}: values must be a tensor, got {type(values).__name__}.")
        if values.device is not self.device or values.kind is not self.kind:
            check_same(op, self, values)
        if values.shape != want:
            raise ShapeError(
                f"{op}: values have shape {list(values.shape)}, expected {list(want)} for a tensor of shape "
                f"{list(self.shape)}."
            )

    def take(self, dim: int, indices: Any) -> Any:
        """Entries at Int ``indices`` of any rank along ``dim`` (Burn's ``take``, ``numpy.take``):
        ``[a, n, b]`` with indices ``[i, j]`` on dim 1 gives ``[a, i, j, b]``; rank-0 indices drop
        the dim.

        Raises:
            IndexError_, KindError, DeviceError: as :meth:`select`.
        """
        return self._take("take", dim, indices)

    def _take(self, op: str, dim: int, indices: Any) -> Any:
        shape = self.shape
        d = norm_dim(op, dim, len(shape))
        idx = index_arg(op, self, indices)
        check_index_values(op, idx, shape[d], d)
        ishape = idx.shape
        ops = self.ops
        try:
            flat = idx.primitive if len(ishape) == 1 else idx.ops.reshape(idx.primitive, (numel(ishape),))
            p = ops.select(self.primitive, d, flat)
            out = shape[:d] + ishape + shape[d + 1:]
            if len(ishape) != 1:
                p = ops.reshape(p, out)
        except Exception as exc:
            raise fail(op, exc, self, idx) from exc
        return wrap(p, self, self.kind)

    # ------------------------------------------------------------------ gather / scatter
    def _gs_check(self, op: str, dim: int, indices: Any) -> tuple[int, Any]:
        shape = self.ops.shape(self.primitive)
        r = len(shape)
        if dim.__class__ is int and -r <= dim < r:
            d = dim + r if dim < 0 else dim
        else:
            d = norm_dim(op, dim, r)
        idx = index_arg(op, self, indices)
        ishape = idx.ops.shape(idx.primitive)
        if len(ishape) != r or ishape[:d] != shape[:d] or ishape[d + 1:] != shape[d + 1:]:
            raise ShapeError(
                f"{op}: indices of shape {list(ishape)} do not fit the tensor of shape {list(shape)} on dim {dim}; "
                "indices need the tensor's rank and its sizes on every other dim."
            )
        check_index_values(op, idx, shape[d], d)
        return d, idx

    def gather(self, dim: int, indices: Any) -> Any:
        """``out[i][j][k] = self[i][indices[i][j][k]][k]`` for ``dim = 1`` (Burn's ``gather``,
        ``torch.gather``). ``indices`` is Int with this tensor's rank and its sizes on every dim
        but ``dim``; the result has the shape of ``indices``.

        Raises:
            ShapeError: indices of another rank or size. IndexError_: ``dim`` out of range, or an
            index value outside ``[0, size)`` of ``dim``, negative ones included (as :meth:`select`).
            KindError/DeviceError: indices not Int or on another device.
        """
        d, idx = self._gs_check("gather", dim, indices)
        return self._gather("gather", d, idx)

    def _gather(self, op: str, d: int, idx: Any) -> Any:
        """:meth:`gather` on a non-negative ``d`` with an Int tensor ``idx`` of the right shape whose values
        the caller has checked (``CrossEntropyLoss`` checks its targets under its own name)."""
        try:
            p = self.ops.gather(self.primitive, d, idx.primitive)
        except Exception as exc:
            raise fail(op, exc, self, idx) from exc
        return wrap(p, self, self.kind)

    def scatter(self, dim: int, indices: Any, values: Any) -> Any:
        """A copy with ``values`` **added** at ``indices`` along ``dim`` (Burn's ``scatter``, which
        sums like ``torch.scatter_add``): ``out[i][indices[i][j][k]][k] += values[i][j][k]`` for
        ``dim = 1``; repeated indices accumulate. ``indices`` and ``values`` share a shape, which
        matches this tensor's on every dim but ``dim``.

        Raises:
            ShapeError, IndexError_, KindError, DeviceError: as :meth:`gather`, plus values of
            another shape, kind or device.
        """
        d, idx = self._gs_check("scatter", dim, indices)
        self._check_values("scatter", values, idx.shape)
        try:
            p = self.ops.scatter_add(self.primitive, d, idx.primitive, values.primitive)
        except Exception as exc:
            raise fail("scatter", exc, self, idx, values) from exc
        return wrap(p, self, self.kind)

    def _nd_flat(self, op: str, indices: Any) -> tuple[Any, int, tuple[int, ...], tuple[int, ...]]:
        """Flat row numbers of ``indices [..., k]`` into the first ``k`` dims, with rows that hold
        any component outside ``[0, size)`` mapped to the out-of-range row ``prod(shape[:k])``
        instead of aliasing another row: one min/max check of the flat rows then finds them (the
        error names the first bad component), and where values are not checked (traced, torch on
        CUDA) the library sees an out-of-range row."""
        shape = self.shape
        idx = index_arg(op, self, indices)
        ishape = idx.shape
        if len(ishape) < 1 or not 1 <= ishape[-1] <= len(shape):
            raise ShapeError(
                f"{op}: indices must have shape [..., k] with 1 <= k <= rank ({len(shape)}), got {list(ishape)}."
            )
        k = ishape[-1]
        lead, rest = shape[:k], shape[k:]
        total = numel(lead)
        strides = [numel(lead[i + 1:]) for i in range(k)]
        dev = self.device
        iops = dev.ops[1]
        idt = dev.backend.int_dtype
        m = numel(ishape[:-1])
        try:
            ip = iops.reshape(idx.primitive, (m, k))
            st = iops.from_numpy(np.asarray(strides, dtype=np.int64), idt, dev.handle)
            sz = iops.from_numpy(np.asarray(lead, dtype=np.int64), idt, dev.handle)
            flat = iops.sum_dim(iops.mul(ip, st), 1)  # [m, 1]
            # |2 i + 1 - n| >= n  <=>  i < 0 or i >= n (exact for integers)
            bad = iops.greater_equal(iops.abs(iops.sub(iops.add(iops.mul(ip, 2), 1), sz)), sz)
            flat = iops.mask_fill(flat, iops.any_dim(bad, 1), total)
            flat = iops.reshape(flat, (m,))
        except Exception as exc:
            raise fail(op, exc, self, idx) from exc
        b = index_bounds(iops, flat, dev)
        if b is not None and b[1] >= total:  # a row with a component out of range: name the first one
            rows = idx.to_numpy().reshape(m, k)
            r, c = np.argwhere((rows < 0) | (rows >= np.asarray(lead)))[0]
            raise out_of_range(op, int(rows[r, c]), lead[c], int(c), "coordinate")
        return flat, total, ishape[:-1], rest

    def gather_nd(self, indices: Any) -> Any:
        """Slices at N-d coordinates (``tf.gather_nd``): ``indices`` is Int ``[..., k]``, each row a
        coordinate into the first ``k`` dims; the result has shape
        ``indices.shape[:-1] + self.shape[k:]``. Example: ``x [3, 4, 5]`` with indices ``[n, 2]``
        gives ``[n, 5]`` rows ``x[i, j, :]``.

        Raises:
            ShapeError: ``k`` is 0 or larger than the rank. IndexError_: a coordinate outside
            ``[0, size)`` of its dim, negative ones included. KindError/DeviceError: indices not
            Int or on another device.
        """
        flat, total, lead_out, rest = self._nd_flat("gather_nd", indices)
        ops = self.ops
        try:
            src = ops.reshape(self.primitive, (total,) + rest)
            p = ops.reshape(ops.select(src, 0, flat), lead_out + rest)
        except Exception as exc:
            raise fail("gather_nd", exc, self) from exc
        return wrap(p, self, self.kind)

    def scatter_nd(self, indices: Any, values: Any) -> Any:
        """A copy with ``values`` **added** at N-d coordinates (``tf.tensor_scatter_nd_add``; like
        :meth:`scatter`, repeated coordinates accumulate). ``indices`` is Int ``[..., k]``;
        ``values`` has shape ``indices.shape[:-1] + self.shape[k:]``.

        Raises:
            ShapeError: bad ``k`` or values shape. IndexError_: a coordinate outside ``[0, size)``
            of its dim, negative ones included.
            KindError/DeviceError: indices or values of the wrong kind or device.
        """
        shape = self.shape
        flat, total, lead_out, rest = self._nd_flat("scatter_nd", indices)
        self._check_values("scatter_nd", values, lead_out + rest)
        ops = self.ops
        try:
            src = ops.reshape(self.primitive, (total,) + rest)
            v = ops.reshape(values.primitive, (numel(lead_out),) + rest)
            p = ops.reshape(ops.select_add(src, 0, flat, v), shape)
        except Exception as exc:
            raise fail("scatter_nd", exc, self, values) from exc
        return wrap(p, self, self.kind)

    # ------------------------------------------------------------------ masks
    def mask_where(self, mask: Any, value: Any) -> Any:
        """``value`` where the Bool ``mask`` is true, else this tensor (Burn's ``mask_where``).
        ``mask`` and the tensor ``value`` (same kind and device) broadcast to this tensor's shape.

        Raises:
            KindError: mask not Bool, or value of another kind. ShapeError: an operand that does
            not broadcast to this shape. DeviceError: operands on another device.
        """
        check_mask("mask_where", self, mask)
        if type(value) is not _core.Tensor:
            raise TypeError(
                f"mask_where: value must be a tensor, got {type(value).__name__}; use mask_fill for a scalar."
            )
        if value.device is not self.device or value.kind is not self.kind:
            check_same("mask_where", self, value)
        _check_broadcasts_to("mask_where", value.shape, self.shape, "value")
        try:
            p = self.ops.mask_where(self.primitive, mask.primitive, value.primitive)
        except Exception as exc:
            raise fail("mask_where", exc, self, mask, value) from exc
        return wrap(p, self, self.kind)

    def mask_fill(self, mask: Any, value: Any) -> Any:
        """The scalar ``value`` where the Bool ``mask`` (broadcast to this shape) is true, else this
        tensor (Burn's ``mask_fill``, ``torch.masked_fill``).

        Raises:
            KindError: mask not Bool, or a value that does not fit the kind. ShapeError: a mask
            that does not broadcast to this shape. DeviceError: mask on another device.
        """
        check_mask("mask_fill", self, mask)
        v = _core.scalar_for("mask_fill", self, value)
        try:
            p = self.ops.mask_fill(self.primitive, mask.primitive, v)
        except Exception as exc:
            raise fail("mask_fill", exc, self, mask) from exc
        return wrap(p, self, self.kind)

    # ------------------------------------------------------------------ Bool coordinates
    def _coords_check(self, op: str) -> None:
        if self.kind is not Bool:
            raise KindError(f"{op} is defined on Bool tensors, got {self.kind}; use .bool() (true where non-zero).")
        if self.rank == 0:
            raise ShapeError(f"{op}: a rank-0 tensor has no coordinates; reshape it to [1] first.")

    def nonzero(self) -> list[Any]:
        """Coordinates of the true elements, one 1-D Int tensor per dim (Burn's ``nonzero``), in
        C order. The result size depends on the data, so this reads it (a device sync).

        Raises:
            KindError: not a Bool tensor. ShapeError: rank 0.
        """
        self._coords_check("nonzero")
        dev = self.device
        try:
            cols = self.ops.nonzero(self.primitive)
        except Exception as exc:
            raise fail("nonzero", exc, self) from exc
        iops = dev.ops[1]
        return [_core.new(c, dev, Int, iops) for c in cols]

    def argwhere(self) -> Any:
        """Coordinates of the true elements as an Int ``[count, rank]`` tensor, in C order (Burn's
        ``argwhere``); data-dependent size (a device sync).

        Raises:
            KindError: not a Bool tensor. ShapeError: rank 0.
        """
        self._coords_check("argwhere")
        try:
            p = self.ops.argwhere(self.primitive)
        except Exception as exc:
            raise fail("argwhere", exc, self) from exc
        return wrap(p, self, Int)

    # ------------------------------------------------------------------ Python protocol
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
        items = list(key) if type(key) is tuple else [key]
        shape = self.shape
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
        slices: list[slice] = []
        flips: list[int] = []
        plan: list[Any] = []  # per item: "new", "drop", "keep" or (take index tensor)
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
            elif type(it) is _core.Tensor or isinstance(it, (list, np.ndarray)):
                if take_idx is not None:
                    raise TypeError(
                        "indexing: an index tensor or list is allowed on one dim only; for coordinates over "
                        "several dims use gather_nd."
                    )
                if type(it) is _core.Tensor and it.kind is Bool:
                    raise TypeError(
                        "indexing: Bool masks are not supported as indices; use mask_where/mask_fill or nonzero()."
                    )
                if type(it) is not _core.Tensor:
                    arr = np.asarray(it)
                    if arr.dtype.kind in "iu" and arr.size:
                        n = shape[d]
                        if (arr < -n).any() or (arr >= n).any():
                            raise IndexError_(
                                f"indexing: index list {it!r} has values out of range for dim {d} of size {n}."
                            )
                        it = np.where(arr < 0, arr + n, arr)
                take_idx = index_arg("indexing", self, it)
                take_dim = d
                slices.append(slice(0, shape[d], 1))
                plan.append(("take", take_idx))
            else:
                raise TypeError(
                    f"indexing: unsupported index {it!r} of type {type(it).__name__}; use ints, slices, None, "
                    "..., or an Int tensor / list of ints."
                )
        t = self._slice_norm("indexing", tuple(slices), tuple(flips))
        if take_idx is not None:
            t = t._take("indexing", take_dim, take_idx)
        cur = t.shape
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
        out_t = tuple(out)
        if out_t != cur:
            try:
                t = wrap(t.ops.reshape(t.primitive, out_t), t, t.kind)
            except Exception as exc:
                raise fail("indexing", exc, t) from exc
        # numpy/PyTorch rule: ints and the index list are all "advanced" indices; when they are
        # not adjacent in the key, the index list's dims go first.
        adv = [j for j, it in enumerate(items) if _is_int(it) or (it is not None and plan_kind(it))]
        if take_pos > 0 and adv and adv[-1] - adv[0] + 1 != len(adv):
            rest = [i for i in range(len(out_t)) if not take_pos <= i < take_pos + take_rank]
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
        return _core.new(r, self.device, self.kind, ops)

    def __setitem__(self, key: Any, value: Any) -> None:
        raise TypeError(
            "ember tensors are immutable values and do not support item assignment; use "
            "t = t.slice_assign(ranges, values) (or slice_fill / mask_fill / select_assign), which returns a "
            "new tensor."
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
