"""``Tensor.unique``: the distinct elements (or slices along a dim) of a tensor, with the index of each one's
first occurrence, the inverse indices and the counts (``numpy.unique`` with ``return_index``,
``return_inverse`` and ``return_counts``; ONNX ``Unique``).

A composite of existing ops, so every backend and ``Autodiff`` run it: the slices are sorted lexicographically
by stable ``argsort``\\ s, one per element of a slice, last element first (a radix sort, so equal slices keep
their order and the first of each run is its first occurrence); a slice starts a new group where it differs
from the one before; the group starts are the one data-dependent step (``argwhere``, a device sync, refused
under ``ember_jax.jit`` as ``nonzero`` is). The values are ``select``\\ ed from the input, so gradients flow to
the first occurrences. Floats compare with ``!=``: each NaN is distinct.
"""

from __future__ import annotations

import math
from typing import Any

from .._kind import Bool, Int


def unique(t: Any, dim: int | None, sorted_: bool) -> tuple[Any, Any, Any, Any]:
    """See :meth:`ember.Tensor.unique` (``dim`` already normalised, ``None`` for the flattened tensor)."""
    x = t.reshape([-1]) if dim is None else t
    d = 0 if dim is None else dim
    moved = x.movedim(d, 0) if d else x
    n = moved.shape[0]
    dev = t.device
    if n == 0:
        empty = t.zeros([0], dev, Int)
        return x.narrow(d, 0, 0), empty, empty, empty
    rows = moved.detach().reshape([n, math.prod(moved.shape[1:])])
    keys = rows.int() if rows.kind is Bool else rows
    perm = t.arange(0, n, dev)
    for j in reversed(range(keys.shape[1])):  # radix: the last element first, stable sorts
        col = keys.narrow(1, j, 1).reshape([n]).select(0, perm)
        perm = perm.select(0, col.argsort(0))
    ordered = keys.select(0, perm)
    differs = ordered.not_equal(ordered.roll_dim(1, 0)).any_dim(1).reshape([n])
    new = differs | t.arange(0, n, dev).equal_elem(0)  # the first sorted slice always starts a group
    starts = new.argwhere().squeeze_dim(1)  # [U], data-dependent
    first = perm.select(0, starts)
    ends = t.cat([starts, t.full([1], n, dev, Int).cast(starts.dtype)], 0).narrow(0, 1, starts.shape[0])
    counts = ends - starts
    group = new.int().cast(perm.dtype).cumsum(0) - 1  # the group of each sorted slice
    inverse = group.select(0, perm.argsort(0))
    if not sorted_:  # groups in order of first occurrence
        order = first.argsort(0)
        first, counts = first.select(0, order), counts.select(0, order)
        inverse = order.argsort(0).select(0, inverse)
    return x.select(d, first), first, inverse, counts
