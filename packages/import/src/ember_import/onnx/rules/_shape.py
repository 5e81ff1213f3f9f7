"""Host rules of the shape operators (onnx/docs/Operators.md, the version named in each docstring)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, cast

from .._errors import OnnxImportError
from ._hostrule import host_rule

__all__ = [
    "broadcast_shapes",
    "pad_pairs",
    "range_count",
    "reshape_target",
    "split_sizes",
    "unpool_ends",
    "wrap_pad_plan",
]


@host_rule(var="shape")
def reshape_target(have: Sequence[int], spec: Sequence[int], allowzero: bool) -> list[int]:
    """The concrete shape of ``Reshape(x, spec)`` for an ``x`` of shape ``have`` (Reshape 5, 13, 14, 19, 21).

    ``0`` copies the input's dim at that position (unless ``allowzero``: then it is an empty dim); one ``-1`` is
    inferred from the element count. When that count is symbolic (ModelGen's dynamic sizes, an ``int`` subclass)
    the ``-1`` stays ``-1``: generated code writes it as a person would and Ember infers it as ONNX does.

    Args:
        have: the input's shape.
        spec: the ``shape`` input's values (length = the output's rank).
        allowzero: the node's ``allowzero`` attribute.

    Returns:
        The output shape, ``len(spec)`` sizes.

    Raises:
        OnnxImportError: more than one ``-1``, a ``-1`` with an empty dim (its size is undefined), a ``0`` copied
            beyond the input's rank, a size below ``-1``, or an element count that does not match.
    """
    out = []
    for i, s in enumerate(spec):
        if s == 0 and not allowzero:
            if i >= len(have):
                raise OnnxImportError(f"shape {list(spec)} copies dim {i} (a 0), but the input has rank {len(have)}.")
            s = have[i]
        out.append(s)
    total = math.prod(have)
    if out.count(-1) > 1:
        raise OnnxImportError(f"shape {list(spec)} has more than one -1; at most one is inferred.")
    if -1 in out:
        known = math.prod(s for s in out if s != -1)
        if known == 0 or total % known:
            raise OnnxImportError(
                f"cannot infer the -1 of shape {list(spec)} for an input of shape {list(have)} ({total} elements)."
            )
        out[out.index(-1)] = total // known
    if math.prod(out) != total or any(s < 0 for s in out):
        raise OnnxImportError(
            f"cannot reshape an input of shape {list(have)} ({total} elements) to {list(spec)} (resolved {out})."
        )
    if -1 in spec and type(out[list(spec).index(-1)]) is not int:
        out[list(spec).index(-1)] = -1  # a symbolic size (ModelGen's trace): Ember infers it as ONNX does
    return out


@host_rule(var="shape")
def broadcast_shapes(shapes: Sequence[Sequence[int]]) -> list[int]:
    """The numpy broadcast of ``shapes`` (ONNX's multidirectional broadcasting: ``Expand`` 8, 13 and the
    elementwise operators from opset 7): right-aligned, a dim of 1 takes the other's size (also 0).

    Returns:
        ``max(len(s) for s in shapes)`` sizes.

    Raises:
        OnnxImportError: two sizes of one position differ and neither is 1.
    """
    rank = max((len(s) for s in shapes), default=0)
    out = [1] * rank
    for s in shapes:
        for i, d in enumerate(s, start=rank - len(s)):
            if d != out[i] and d != 1 and out[i] != 1:
                raise OnnxImportError(
                    f"input shapes {[list(x) for x in shapes]} do not broadcast (numpy rules); fix the model's shapes."
                )
            if out[i] == 1:
                out[i] = d
    return out


def _even_split(
    n: int, count: int, split: Sequence[int] | None, num_outputs: int | None
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """:func:`split_sizes`'s stand-in: ``split`` replaced by ``count`` sizes summing to ``n``."""
    if split is None or count < 1:
        return (n, count, split, num_outputs), {}
    size = n // count
    return (n, count, [size] * (count - 1) + [n - size * (count - 1)], num_outputs), {}


@host_rule(var="sizes", stand_in=_even_split)
def split_sizes(n: int, count: int, split: Sequence[int] | None, num_outputs: int | None) -> list[int]:
    """The sizes of the pieces of ``Split`` (1, 2, 11, 13, 18) and ``SplitToSequence`` (11) along a dim of size
    ``n``: ``split`` when given; else ``num_outputs`` chunks of ``ceil(n / num_outputs)``, the last one smaller
    (opset 18); else ``count`` equal pieces.

    Args:
        n: the size of the split dim.
        count: the number of pieces (the node's outputs; ``len(split)`` for ``SplitToSequence``).
        split: the sizes given by the node (attribute or input), or ``None``/empty.
        num_outputs: opset 18's attribute, or ``None``.

    Returns:
        ``count`` sizes (``num_outputs`` when given without ``split``).

    Raises:
        OnnxImportError: sizes that are negative, do not sum to ``n`` or are not ``count``; a dim too small for
            ``num_outputs`` chunks; or one that does not split evenly into ``count``.
    """
    if split:
        if len(split) != count or sum(split) != n or any(s < 0 for s in split):
            raise OnnxImportError(
                f"split {list(split)} must give {count} non-negative sizes summing to the dim's size {n}."
            )
        return list(split)
    parts = num_outputs or count
    if num_outputs is not None:  # opset 18: the last chunk may be smaller
        size = -(-n // parts)  # ceil in ints: a run-time size (ModelGen's) stays one
        sizes = [size] * (parts - 1) + [n - size * (parts - 1)]
        if sizes[-1] < 0:
            raise OnnxImportError(f"cannot split a dim of size {n} into {parts} chunks.")
        return sizes
    if n % parts:
        raise OnnxImportError(f"a dim of size {n} does not split evenly into {parts} outputs; give the split sizes.")
    return [n // parts] * parts


@host_rule(var="count")
def range_count(start: float, limit: float, delta: float) -> int:
    """The number of elements of ``Range`` (11): ``max(ceil((limit - start) / delta), 0)``, in integer arithmetic
    when the three are ints.

    Raises:
        OnnxImportError: ``delta`` is 0.
    """
    if delta == 0:
        raise OnnxImportError("delta is 0; a Range needs a non-zero step.")
    if all(isinstance(v, int) for v in (start, limit, delta)):
        # int-only arithmetic (no int() call: a run-time size, ModelGen's int subclass, stays one)
        return cast(int, max(-((start - limit) // delta), 0))
    return max(math.ceil((limit - start) / delta), 0)


@host_rule(var="pads")
def pad_pairs(rank: int, pads: Sequence[int], axes: Sequence[int] | None) -> list[tuple[int, int]]:
    """``Pad``'s (11, 18: ``axes``) ``pads`` (``[begin_0, ..., begin_k, end_0, ..., end_k]`` for ``axes``, every
    dim by default; negative axes count from the end) as one ``(begin, end)`` pair per dim of a rank-``rank``
    input (0 where an axis is not padded).

    Raises:
        OnnxImportError: an axis out of range or repeated, or ``pads`` not twice as long as ``axes``.
    """
    dims = list(range(rank)) if axes is None else list(axes)
    if any(not -rank <= a < rank for a in dims):
        raise OnnxImportError(f"axes {dims} must be in [{-rank}, {rank - 1}] for an input of rank {rank}.")
    dims = [a + rank if a < 0 else a for a in dims]
    if len(set(dims)) != len(dims):
        raise OnnxImportError(f"axes {list(axes or [])} repeat an axis; list each once.")
    if len(pads) != 2 * len(dims):
        raise OnnxImportError(f"pads {list(pads)} must hold 2 entries per padded axis ({len(dims)} axes).")
    k = len(dims)
    pairs = [(0, 0)] * rank
    for i, d in enumerate(dims):
        pairs[d] = (pads[i], pads[i + k])
    return pairs


def _inferred(inferred: Sequence[int], shape: Sequence[int]) -> tuple[tuple[Any, ...], dict[str, Any]]:
    return (inferred, list(inferred)), {}


@host_rule(var="ends", stand_in=_inferred)
def unpool_ends(inferred: Sequence[int], shape: Sequence[int]) -> list[int]:
    """``MaxUnpool``'s (9, 11, 22) ``output_shape`` input as the zeros appended at the end of each dim of the
    unpooled ``inferred`` shape (the ONNX reference implementation, ``op_max_unpool.py``).

    Raises:
        OnnxImportError: ``shape`` is not as long as ``inferred`` or smaller in a dim.
    """
    if len(shape) != len(inferred) or any(o < i for o, i in zip(shape, inferred)):
        raise OnnxImportError(
            f"output_shape must have {len(inferred)} values, each at least the inferred "
            f"{list(inferred)}; got {list(shape)}."
        )
    return [o - i for o, i in zip(shape, inferred)]


@host_rule(var="plan")
def wrap_pad_plan(shape: Sequence[int], pairs: Sequence[Sequence[int]]) -> list[list[int]]:
    """``Pad`` 19's ``wrap`` mode as three slicing steps per dim: ``[crop_start, crop_stop, reps, start, stop]``.

    The input is cropped to ``crop_start:crop_stop`` (negative amounts), tiled ``reps`` times, and the
    result is ``start:stop`` of that: the dim of cropped size ``m`` padded by ``a`` elements before and ``b``
    after, circularly (``numpy.pad(mode="wrap")``, the ONNX reference).

    Args:
        shape: the input's shape.
        pairs: one ``(before, after)`` pair per dim (:func:`pad_pairs`).

    Returns:
        ``len(shape)`` plans of 5 ints.

    Raises:
        OnnxImportError: a dim cropped to nothing (or empty) that is to be padded: it has nothing to wrap.
    """
    plans = []
    for n, (a, b) in zip(shape, pairs, strict=True):
        start, stop = max(-a, 0), n - max(-b, 0)
        m, a, b = stop - start, max(a, 0), max(b, 0)
        if m <= 0 and (a or b):
            raise OnnxImportError(
                f"wrap padding ({a}, {b}) of a dim of size {n} cropped to {max(m, 0)}: nothing to wrap around."
            )
        before, after = (-(-a // m), -(-b // m)) if m > 0 else (0, 0)  # ceil in ints
        first = before * m - a
        plans.append([start, max(stop, start), 1 + before + after, first, first + max(m, 0) + a + b])
    return plans
