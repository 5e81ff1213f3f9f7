"""Joining, splitting and cutting: ``Concat``, ``Split``, ``Slice``, ``Gather`` and ``Pad``.

Counts and bounds (``Split``'s sizes, ``Slice``'s starts/ends/axes/steps, ``Pad``'s pads, constant value and
axes) are static inputs read on the host (``Slice``'s clamping is the host rule
:func:`ember_import.onnx.rules.slice_ranges`); ``Gather``'s indices are data (they may come from the model's
input), wrapped when negative. Semantics: onnx/docs/Operators.md and Changelog.md, versions named below.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ember import Bool, Int, Tensor

from .. import rules
from .._context import Context
from .._errors import OnnxImportError
from .._ir import Node
from .._registry import converter
from ..rules import slice_ranges
from ._axes import norm_axis
from ._indexing import wrap_index

__all__ = ["pad_tensor"]


@converter("Concat", since=1)
def concat(ctx: Context, node: Node, *xs: Tensor) -> Tensor:
    """``Concat`` (1, 4, 11: negative ``axis``, 13): the inputs joined along ``axis``."""
    parts = [x for x in xs if x is not None]
    if not parts:
        raise OnnxImportError(f"{node.where()}: Concat needs at least one input.")
    axis = norm_axis(node, int(node.attr("axis", 1)), parts[0].rank)
    if len(parts) == 1:
        return parts[0]
    return Tensor.cat(parts, axis)


def _split_sizes(node: Node, n: int, count: int, split: Sequence[int] | None, num_outputs: int | None) -> list[int]:
    try:
        return rules.split_sizes(n, count, split, num_outputs)
    except OnnxImportError as exc:
        raise OnnxImportError(f"{node.where()}: {exc}") from exc


def _split(node: Node, x: Tensor, split: Sequence[int] | None, num_outputs: int | None) -> tuple[Tensor, ...]:
    axis = norm_axis(node, int(node.attr("axis", 0)), x.rank)
    sizes = _split_sizes(node, x.shape[axis], len(node.outputs), split, num_outputs)
    if len(sizes) == 1:
        return (x,)
    return tuple(x.split_with_sizes(sizes, axis))


@converter("Split", since=1, static=(1,))
def split_v1(ctx: Context, node: Node, x: Tensor, split: Tensor | None = None) -> tuple[Tensor, ...]:
    """``Split`` 1, 2, 11: sizes from the ``split`` attribute (or opset 1's optional second input)."""
    sizes = ctx.ints(split) if split is not None else node.attr("split", None)
    return _split(node, x, sizes, None)


@converter("Split", since=13, static=(1,))
def split(ctx: Context, node: Node, x: Tensor, split: Tensor | None = None) -> tuple[Tensor, ...]:
    """``Split`` 13 (sizes as an input) and 18 (``num_outputs``: equal chunks, the last one smaller)."""
    num = node.attr("num_outputs", None)
    return _split(node, x, ctx.ints(split), int(num) if num is not None and ctx.opset >= 18 else None)


def _int(v: Any) -> int:
    """``v`` as an int, keeping an ``int`` subclass as is (ModelGen's symbolic sizes stay symbolic); a bool becomes
    a plain int."""
    return v if isinstance(v, int) and not isinstance(v, bool) else int(v)


def _slice(node: Node, x: Tensor, starts: Sequence[int], ends: Sequence[int], axes: Sequence[int] | None,
           steps: Sequence[int] | None) -> Tensor:
    """``x`` cut by ONNX's ``Slice`` bounds: the host rule :func:`~ember_import.onnx.rules.slice_ranges` plans one
    range per dim (generated code runs it when the bounds are read from the data), ``Tensor.slice`` cuts."""
    try:
        ranges = slice_ranges(list(x.shape), list(starts), list(ends), None if axes is None else list(axes),
                              None if steps is None else list(steps))
    except OnnxImportError as exc:
        raise OnnxImportError(f"{node.where()}: {exc}") from None
    return x.slice(ranges)


@converter("Slice", since=1)
def slice_v1(ctx: Context, node: Node, x: Tensor) -> Tensor:
    """``Slice`` 1: ``starts``/``ends``/``axes`` attributes, step 1."""
    return _slice(node, x, node.attr("starts", []), node.attr("ends", []), node.attr("axes", None), None)


@converter("Slice", since=10, static=(1, 2, 3, 4))
def slice_(ctx: Context, node: Node, x: Tensor, starts: Tensor, ends: Tensor, axes: Tensor | None = None,
           steps: Tensor | None = None) -> Tensor:
    """``Slice`` 10, 11, 13: ``starts``, ``ends`` and optional ``axes``/``steps`` inputs (negative steps
    walk backward)."""
    return _slice(node, x, ctx.ints(starts) or [], ctx.ints(ends) or [], ctx.ints(axes), ctx.ints(steps))


@converter("Gather", since=1)
def gather(ctx: Context, node: Node, data: Tensor, indices: Tensor) -> Tensor:
    """``Gather`` (1, 11: negative indices, 13): ``numpy.take(data, indices, axis)``; the output has rank
    ``rank(data) - 1 + rank(indices)``."""
    axis = norm_axis(node, int(node.attr("axis", 0)), data.rank)
    if ctx.is_host(indices) and indices.num_elements() <= 64 and min(ctx.ints(indices) or [0]) >= 0:
        return data.take(axis, indices)  # constant indices, none negative: nothing to wrap
    return data.take(axis, wrap_index(indices, data.shape[axis]))  # -n..-1 count from the end


def pad_tensor(node: Node, x: Tensor, pads: Sequence[int], mode: str, value: float | int | bool,
               axes: Sequence[int] | None = None) -> Tensor:
    """``x`` padded by ONNX ``pads`` (``[begin_0, ..., begin_k, end_0, ..., end_k]`` for ``axes``, all dims by
    default); negative amounts crop. ``mode``: constant, reflect, edge or wrap.

    Raises:
        OnnxImportError: a pads list of the wrong length, an unknown mode, reflect padding beyond the dim.
    """
    try:  # ONNX's axes and pads as one (begin, end) pair per dim: a host rule (axes read from the data stay code)
        pairs: Any = rules.pad_pairs(x.rank, [_int(p) for p in pads], None if axes is None else [_int(a) for a in axes])
    except OnnxImportError as exc:
        raise OnnxImportError(f"{node.where()}: {exc}") from exc
    if mode == "constant":  # Tensor.pad crops the negative amounts first, and returns x for zero ones
        v: float | int | bool = bool(value) if x.kind is Bool else int(value) if x.kind is Int else \
            value if isinstance(value, float) else float(value)
        return x.pad(pairs, v)
    if mode == "wrap":  # crop, tile, cut: a host rule plans the three (pads read from the data stay code)
        try:
            plan = rules.wrap_pad_plan(list(x.shape), pairs)
        except OnnxImportError as exc:
            raise OnnxImportError(f"{node.where()}: {exc}") from exc
        if not rules.from_data(pairs) and all(a == 0 and b == 0 for a, b in pairs):
            return x
        x = x.slice([(p[0], p[1], 1) for p in plan])
        x = x.repeat([p[2] for p in plan])
        return x.slice([(p[3], p[4], 1) for p in plan])
    if mode not in ("reflect", "edge"):
        raise OnnxImportError(f"{node.where()}: unknown pad mode {mode!r}; ONNX has constant, reflect, edge, wrap.")
    try:
        return x.pad(pairs, mode=mode)
    except Exception as exc:
        raise OnnxImportError(f"{node.where()}: {mode} padding {pairs} of shape {list(x.shape)}: {exc}") from None


@converter("Pad", since=1)
def pad_v2(ctx: Context, node: Node, x: Tensor) -> Tensor:
    """``Pad`` 1, 2: ``pads`` (``paddings`` in opset 1), ``mode`` and ``value`` attributes."""
    pads = node.attr("pads", None) or node.attr("paddings", [])
    mode = node.attr("mode", "constant")
    return pad_tensor(node, x, pads, mode.decode() if isinstance(mode, bytes) else mode, node.attr("value", 0.0))


@converter("Pad", since=11, static=(1, 2, 3))
def pad(ctx: Context, node: Node, x: Tensor, pads: Tensor, value: Tensor | None = None,
        axes: Tensor | None = None) -> Tensor:
    """``Pad`` 11, 13 (any type), 18 (``axes`` input), 19 (``wrap`` mode), 21, 23, 24, 25: ``pads`` and the
    optional constant ``value`` as inputs."""
    mode = node.attr("mode", "constant")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    given = value is not None and value.num_elements() and mode == "constant"  # other modes do not read it
    fill = ctx.scalar(value, 0) if given else 0
    return pad_tensor(node, x, ctx.ints(pads) or [], mode, fill, ctx.ints(axes))

