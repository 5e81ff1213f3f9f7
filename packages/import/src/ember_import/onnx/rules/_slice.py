"""Host rule of ``Slice`` (onnx/docs/Operators.md, ``Slice`` 1, 10, 11, 13): ONNX's clamping of the bounds."""

from __future__ import annotations

from collections.abc import Sequence

from .._errors import OnnxImportError
from ._hostrule import host_rule

__all__ = ["slice_ranges"]


def _range(n: int, start: int, end: int, step: int) -> tuple[int, int, int]:
    """One axis of size ``n`` as an Ember ``(start, end, step)`` range (Burn's ``Slice``: the indices
    ``start .. end``, walked from the end when ``step`` is negative).

    ONNX counts negative bounds from the end, then clamps them into ``[0, n]`` for a positive step and, for a
    negative one, the start into ``[0, n - 1]`` and the end into ``[-1, n - 1]`` (``-1``: before the first);
    a negative step takes ``start, start + step, ...`` down to just above ``end``, the range ``end + 1 ..
    start + 1`` walked backward.
    """
    start = start + n if start < 0 else start
    end = end + n if end < 0 else end
    if step > 0:
        lo = min(max(start, 0), n)
        return lo, max(min(max(end, 0), n), lo), step
    first = min(max(start, 0), n - 1)
    lo = min(max(end, -1), n - 1) + 1
    return lo, max(first + 1, lo), step


@host_rule(var="ranges")
def slice_ranges(
    dims: Sequence[int],
    starts: Sequence[int],
    ends: Sequence[int],
    axes: Sequence[int] | None,
    steps: Sequence[int] | None,
) -> list[tuple[int, int, int]]:
    """The ranges ``Slice`` cuts from a tensor of shape ``dims``, one per dim, for ``Tensor.slice``.

    Args:
        dims: the input's shape.
        starts: the first index of each sliced axis (negative: from the end; any int64, clamped).
        ends: the index each sliced axis stops before (clamped as ``starts``; ``INT64_MAX``/``INT64_MIN`` mean
            "to the end" / "to the beginning").
        axes: the sliced axes (negative: from the end), ``None`` for ``0 .. len(starts) - 1``.
        steps: the step of each sliced axis (negative: walk backward), ``None`` for ones.

    Returns:
        ``len(dims)`` ranges ``(start, end, step)`` with ``0 <= start <= end <= dims[i]`` (Burn's ``Slice``,
        which ``Tensor.slice`` takes: a negative step walks ``start .. end`` from its end); a dim no axis names
        is ``(0, dims[i], 1)``, whole.

    Raises:
        OnnxImportError: lists of different lengths, an axis out of range or repeated, or a step of 0.
    """
    rank = len(dims)
    axes = list(range(len(starts))) if axes is None else list(axes)
    steps = [1] * len(starts) if steps is None else list(steps)
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise OnnxImportError(
            f"Slice: starts {list(starts)}, ends {list(ends)}, axes {axes} and steps {steps} must have the same length."
        )
    out = [(0, n, 1) for n in dims]
    seen: set[int] = set()
    for a, s, e, st in zip(axes, starts, ends, steps):
        if not -rank <= a < rank:
            raise OnnxImportError(
                f"Slice: axes entry {a} is out of range for an input of rank {rank} (expected {-rank} .. "
                f"{rank - 1}); fix the model's axes."
            )
        a = a + rank if a < 0 else a
        if a in seen:
            raise OnnxImportError(f"Slice: axes {axes} repeat axis {a}; list each axis once.")
        seen.add(a)
        if st == 0:
            raise OnnxImportError(f"Slice: a step of 0 on axis {a}; steps must be non-zero.")
        out[a] = _range(dims[a], s, e, st)
    return out
