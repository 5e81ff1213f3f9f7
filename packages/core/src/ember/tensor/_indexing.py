"""Indexing tensor ops (part of Burn's ``BasicOps``): slicing, select, gather, scatter, take, the N-d
gather/scatter, masks and the Bool coordinate helpers; ``t[...]`` is :mod:`._getitem`, the argument handling
:mod:`._index_args`.

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

from typing import Any

import numpy as np

from .._errors import IndexError_, KindError, ShapeError
from .._kind import Bool, Int
from . import _core
from ._base import TensorBase
from ._index_args import (
    _check_broadcasts_to,
    _is_full,
    _Slice,
    call_wrap,
    check_mask,
    fail,
    index_arg,
    norm_range,
    norm_ranges,
)
from ._index_check import check_index_values, index_bounds, out_of_range
from ._util import check_same, norm_dim, numel

_new_obj = object.__new__


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

        def run() -> Any:
            p = self.primitive if _is_full(slices, self.shape) else ops.slice(self.primitive, slices)
            return ops.flip(p, flips) if flips else p

        return call_wrap(op, self, run)

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
        return call_wrap("slice_assign", self, lambda: ops.slice_assign(
            self.primitive, slices, ops.flip(values.primitive, flips) if flips else values.primitive), values)

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
        return call_wrap("slice_fill", self, lambda: ops.slice_assign(
            self.primitive, slices, ops.expand(ops.full((1,) * len(shape), v, self.dtype, self.device.handle), shape)))

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
        return call_wrap("select", self, lambda: self.ops.select(self.primitive, d, idx.primitive), idx)

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
        return call_wrap("select_assign", self,
                         lambda: self.ops.select_add(self.primitive, d, idx.primitive, values.primitive), idx, values)

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
        if len(ishape) == 1:
            return call_wrap(op, self, lambda: ops.select(self.primitive, d, idx.primitive), idx)
        out = shape[:d] + ishape + shape[d + 1:]
        return call_wrap(op, self, lambda: ops.reshape(
            ops.select(self.primitive, d, idx.ops.reshape(idx.primitive, (numel(ishape),))), out), idx)

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
        try:  # call_wrap's body without its closure and frames: gathers run on every classifier step
            p = self.ops.gather(self.primitive, d, idx.primitive)
        except Exception as exc:
            raise fail(op, exc, self, idx) from exc
        t = _new_obj(_core.Tensor)  # _core.wrap inlined: the ops of the same kind on the same device
        t.primitive = p
        t.device = self.device
        t.kind = self.kind
        t.ops = self.ops
        return t

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
        return call_wrap("scatter", self,
                         lambda: self.ops.scatter_add(self.primitive, d, idx.primitive, values.primitive), idx, values)

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
        return call_wrap("gather_nd", self, lambda: ops.reshape(
            ops.select(ops.reshape(self.primitive, (total,) + rest), 0, flat), lead_out + rest))

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
        return call_wrap("scatter_nd", self, lambda: ops.reshape(ops.select_add(
            ops.reshape(self.primitive, (total,) + rest), 0, flat,
            ops.reshape(values.primitive, (numel(lead_out),) + rest)), shape), values)

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
        return call_wrap("mask_where", self,
                         lambda: self.ops.mask_where(self.primitive, mask.primitive, value.primitive), mask, value)

    def mask_fill(self, mask: Any, value: Any) -> Any:
        """The scalar ``value`` where the Bool ``mask`` (broadcast to this shape) is true, else this
        tensor (Burn's ``mask_fill``, ``torch.masked_fill``).

        Raises:
            KindError: mask not Bool, or a value that does not fit the kind. ShapeError: a mask
            that does not broadcast to this shape. DeviceError: mask on another device.
        """
        check_mask("mask_fill", self, mask)
        v = _core.scalar_for("mask_fill", self, value)
        return call_wrap("mask_fill", self, lambda: self.ops.mask_fill(self.primitive, mask.primitive, v), mask)

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
        return call_wrap("argwhere", self, lambda: self.ops.argwhere(self.primitive), kind=Int)

    def unique(self, dim: int | None = None, sorted: bool = True) -> tuple[Any, Any, Any, Any]:  # noqa: A002
        """The distinct elements, or the distinct slices along ``dim``, with where they come from
        (``numpy.unique(x, axis=dim, return_index=True, return_inverse=True, return_counts=True)``;
        ONNX ``Unique``). Data-dependent size: this reads the data (a device sync).

        Args:
            dim: ``None`` (default) for the elements of the flattened tensor, else the dim whose
                slices are compared (negative counts from the end).
            sorted: ``True`` (default): in ascending (lexicographic for slices) order, as
                ``torch.unique``; ``False``: in order of first occurrence.

        Returns:
            ``(values, indices, inverse, counts)``: ``values`` of this tensor's kind, ``[U]`` (or
            this shape with ``U`` at ``dim``); Int ``indices [U]`` (the first occurrence of each),
            ``inverse [n]`` (the position in ``values`` of each of the ``n`` elements or slices) and
            ``counts [U]``. Gradients flow to ``values`` through the first occurrences. Each NaN is
            distinct (``!=`` compares).

        Raises:
            IndexError_: ``dim`` out of range.
            ShapeError: a rank-0 tensor with ``dim`` given.
        """
        from ._unique import unique

        if dim is not None and self.rank == 0:
            raise ShapeError(f"unique: a rank-0 tensor has no dim {dim}; call it without dim.")
        d = None if dim is None else norm_dim("unique", dim, self.rank)
        return unique(self, d, bool(sorted))
