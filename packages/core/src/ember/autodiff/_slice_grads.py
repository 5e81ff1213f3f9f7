"""Gradients of slices kept sparse until they are needed (issue 22).

The gradient of ``y = x[slices]`` is ``x``-shaped zeros holding ``g`` at ``slices``. Written out at once, a
tensor split into ``k`` pieces (``split``/``chunk``: an LSTM's gates, its time steps) costs ``k`` full-size zero
tensors and ``k - 1`` full-size additions in the backward pass: quadratic in the sequence length for the time
steps. Instead the ``slice`` rule returns a :class:`SliceGrad`, the sweep gathers the pieces a node receives, and
:func:`dense` writes them out once, when the node's own rule (or the leaf's result) needs them: one ``cat`` when
the pieces tile one dim (the split pattern; gaps are zeros), otherwise zeros with each piece added at its place.
"""

from __future__ import annotations

from typing import Any

from ._output_grads import OutputGrads
from ._rules_util import zeros

__all__ = ["SliceGrad", "accumulate", "dense"]


class SliceGrad:
    """A gradient of ``shape`` that is zero except for ``parts``: ``(slices, g)`` pairs (``g`` may overlap)."""

    __slots__ = ("shape", "parts")

    def __init__(self, shape: tuple[int, ...], parts: list[tuple[tuple[slice, ...], Any]]) -> None:
        self.shape = shape
        self.parts = parts


def accumulate(B: Any, prev: Any, new: Any) -> Any:
    """``prev + new`` where either may be a :class:`SliceGrad` (pieces are gathered, not added), or both are
    :class:`~._output_grads.OutputGrads` (gathered slot by slot)."""
    if prev.__class__ is OutputGrads:
        slots = prev.grads
        for k, g in enumerate(new.grads):
            if g is not None:
                slots[k] = g if slots[k] is None else accumulate(B, slots[k], g)
        return prev
    ps, ns = prev.__class__ is SliceGrad, new.__class__ is SliceGrad
    if ps and ns:
        prev.parts.extend(new.parts)
        return prev
    if not ps and not ns:
        return B.add(prev, new)
    sparse, dense_g = (prev, new) if ps else (new, prev)
    return _add_parts(B, dense_g, sparse.parts)


def _add_parts(B: Any, d: Any, parts: list[tuple[tuple[slice, ...], Any]]) -> Any:
    for sl, g in parts:
        d = B.slice_assign(d, sl, B.add(B.slice(d, sl), g))
    return d


def _tiling_dim(shape: tuple[int, ...], parts: list[tuple[tuple[slice, ...], Any]]) -> int | None:
    """The one dim along which every part is a contiguous, non-overlapping range (the others whole), or None."""
    dim = None
    for sl, _ in parts:
        for i, s in enumerate(sl):
            if s.step not in (None, 1):
                return None
            if (s.start or 0, shape[i] if s.stop is None else s.stop) != (0, shape[i]):
                if dim is None:
                    dim = i
                elif dim != i:
                    return None
    if dim is None:
        return None
    spans = sorted(((sl[dim].start or 0), sl[dim].stop) for sl, _ in parts)
    if any(a[1] > b[0] for a, b in zip(spans, spans[1:])):
        return None  # overlapping pieces
    return dim


def dense(B: Any, g: Any) -> Any:
    """``g`` as a primitive (a :class:`SliceGrad` written out; anything else returned as it is)."""
    if g.__class__ is not SliceGrad:
        return g
    parts, shape = g.parts, g.shape
    like = parts[0][1]
    dim = _tiling_dim(shape, parts)
    if dim is None:
        return _add_parts(B, zeros(B, shape, like), parts)
    pieces, at = [], 0
    for sl, p in sorted(parts, key=lambda q: q[0][dim].start or 0):
        start = sl[dim].start or 0
        if start > at:  # a gap: zeros
            pieces.append(zeros(B, shape[:dim] + (start - at,) + shape[dim + 1:], like))
        pieces.append(p)
        at = sl[dim].stop
    if at < shape[dim]:
        pieces.append(zeros(B, shape[:dim] + (shape[dim] - at,) + shape[dim + 1:], like))
    return pieces[0] if len(pieces) == 1 else B.cat(pieces, dim)
