"""Shape and indexing primitives: reshape, permute, slicing, gather/scatter, cat, ...

Indices are Int primitives; masks are Bool primitives. Every op returns a new primitive, which
may be a view of its input (``reshape``, ``permute``, ``slice`` ...) since nothing ever writes
into a primitive it did not create; ops that write (``slice_assign``, ``scatter_add``,
``select_add``) copy first.

The core (``ember.tensor._basic`` / ``._indexing``) does all validation: dims are in range,
slices have a positive step and clipped bounds (negative steps arrive as a slice plus a
``flip``), shapes fit, and concrete index *values* lie in ``[0, size)`` (one ``index_bounds``
reduction, :mod:`ember.tensor._index_check`; skipped for traced values and where
``Backend.checks_index_values`` is false, where a backend may still raise its own ``IndexError``,
which the core maps to ``ember.IndexError``). Negative index values are outside the contract. Composite tensor ops
(``flatten``, ``squeeze``, ``transpose``, ``narrow``, ``chunk``, ``split``, ``roll``, ``take``,
``gather_nd``, ``scatter_nd``, ``triu``/``tril``, reflect/edge ``pad`` ...) are built in the core from
these primitives, so a backend only implements this list.
"""

from __future__ import annotations

from typing import Any

#: the builtin ``slice`` (the class below defines a method of that name)
_Slice = slice


def _req(name: str) -> Any:
    raise NotImplementedError(
        f"this backend does not implement the required primitive {name!r}; see ember.backend.Backend"
    )


class ShapeOps:
    """Shape, slicing, indexing and joining primitives."""

    def reshape(self, a: Any, shape: tuple[int, ...]) -> Any:
        """Same elements in C order with ``shape`` (already resolved: no -1 or 0 entries)."""
        return _req("reshape")

    def permute(self, a: Any, axes: tuple[int, ...]) -> Any:
        """Dims reordered: result dim ``i`` is input dim ``axes[i]`` (a full permutation)."""
        return _req("permute")

    def expand(self, a: Any, shape: tuple[int, ...]) -> Any:
        """Broadcast to ``shape`` (numpy.broadcast_to; rank may grow on the left)."""
        return _req("expand")

    def flip(self, a: Any, axes: tuple[int, ...]) -> Any:
        """Elements reversed along ``axes`` (sorted, distinct, non-empty)."""
        return _req("flip")

    def slice(self, a: Any, slices: tuple[_Slice, ...]) -> Any:
        """``a[slices]``: one ``slice(start, stop, step)`` per dim (all dims given); ints with
        ``0 <= start <= stop <= size``, ``step >= 1``."""
        return _req("slice")

    def slice_assign(self, a: Any, slices: tuple[_Slice, ...], value: Any) -> Any:
        """A copy of ``a`` with ``a[slices]`` replaced by ``value`` (shaped as the slice, or a
        broadcasting view of that shape); ``slices`` as in :meth:`slice`."""
        return _req("slice_assign")

    def cat(self, ps: list[Any], dim: int) -> Any:
        """Concatenation along ``dim``; other dims equal."""
        return _req("cat")

    def stack(self, ps: list[Any], dim: int) -> Any:
        """Stack along a new ``dim``."""
        return self.cat([self.reshape(p, _unsq(self.shape(p), dim)) for p in ps], dim)  # type: ignore[attr-defined]

    def gather(self, a: Any, dim: int, indices: Any) -> Any:
        """``out[i][j] = a[i][indices[i][j]]`` along ``dim`` (torch.gather); indices has a's rank and
        a's sizes on every other dim."""
        return _req("gather")

    def scatter_add(self, a: Any, dim: int, indices: Any, values: Any) -> Any:
        """A copy of ``a`` with ``values`` added at ``indices`` along ``dim`` (torch.scatter_add);
        repeated indices accumulate. ``indices`` and ``values`` share a shape, equal to a's on every
        other dim."""
        return _req("scatter_add")

    def select(self, a: Any, dim: int, indices: Any) -> Any:
        """Entries of ``a`` at 1-D ``indices`` along ``dim`` (torch.index_select)."""
        return _req("select")

    def select_add(self, a: Any, dim: int, indices: Any, values: Any) -> Any:
        """A copy of ``a`` with ``values`` added at 1-D ``indices`` along ``dim`` (torch.index_add);
        Burn's ``select_assign``. Repeated indices accumulate."""
        return _req("select_add")

    def zeros_scatter_add(self, shape: tuple[int, ...], dim: int, indices: Any, values: Any) -> Any:
        """Zeros of ``shape`` (``values``' dtype and device) with ``values`` added at ``indices`` along ``dim``:
        :meth:`scatter_add` into a new zero array, the backward of :meth:`gather` (and of max/min along a dim,
        max pooling). ``indices`` and ``values`` as for :meth:`scatter_add`. Default: :meth:`scatter_add` of
        :meth:`zeros`; a backend that can fill its own new buffer in place overrides it (one buffer instead of
        two: the out-of-place form copies the zeros)."""
        B: Any = self
        return B.scatter_add(B.zeros(shape, B.dtype(values), B.device_handle(values)), dim, indices, values)

    def zeros_select_add(self, shape: tuple[int, ...], dim: int, indices: Any, values: Any) -> Any:
        """Zeros of ``shape`` (``values``' dtype and device) with ``values`` added at 1-D ``indices`` along
        ``dim`` (repeats accumulate): :meth:`select_add` into a new zero array, the backward of :meth:`select`.
        Default: :meth:`select_add` of :meth:`zeros` (see :meth:`zeros_scatter_add`)."""
        B: Any = self
        return B.select_add(B.zeros(shape, B.dtype(values), B.device_handle(values)), dim, indices, values)

    def mask_where(self, a: Any, mask: Any, value: Any) -> Any:
        """``value`` where ``mask`` is true, else ``a`` (all three broadcast to ``a``'s shape)."""
        return _req("mask_where")

    def mask_fill(self, a: Any, mask: Any, value: float | int | bool) -> Any:
        """Scalar ``value`` where ``mask`` is true, else ``a``."""
        return _req("mask_fill")

    def repeat_dim(self, a: Any, dim: int, times: int) -> Any:
        """``a`` tiled ``times`` along ``dim`` (size becomes size * times)."""
        return self.cat([a] * times, dim)

    def unfold(self, a: Any, dim: int, size: int, step: int) -> Any:
        """Windows of ``size`` every ``step`` along ``dim``; ``dim`` becomes the window count and a
        trailing dim of ``size`` is added (torch.Tensor.unfold)."""
        return _req("unfold")

    def pad(self, a: Any, pads: tuple[tuple[int, int], ...], value: float | int | bool) -> Any:
        """Constant padding: ``pads[i] = (before, after)`` for every dim (non-negative); ``value``
        is a Python scalar of the tensor's kind."""
        return _req("pad")

    def nonzero(self, a: Any) -> list[Any]:
        """Coordinates of non-zero/true elements: one 1-D Int primitive per dim (data-dependent)."""
        return _req("nonzero")

    def argwhere(self, a: Any) -> Any:
        """``[count, rank]`` Int coordinates of true elements (data-dependent)."""
        cols = self.nonzero(a)
        return self.stack(cols, 1)


def _unsq(shape: tuple[int, ...], dim: int) -> tuple[int, ...]:
    return shape[:dim] + (1,) + shape[dim:]
