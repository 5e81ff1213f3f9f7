"""Sequences and optionals: ``SequenceConstruct``, ``SequenceEmpty``, ``SequenceAt``, ``SequenceInsert``,
``SequenceErase``, ``SequenceLength``, ``SplitToSequence``, ``ConcatFromSequence`` (opset 11+),
``SequenceMap`` (17+), ``Optional``, ``OptionalHasElement``, ``OptionalGetElement`` (15+; 18 accepts plain
tensors and sequences and an omitted input).

A sequence is a Python ``list`` of Ember tensors, an empty optional is ``None`` (as the interpreter passes
them); positions are host reads. Semantics follow the ONNX operator specification
(onnx/docs/Operators.md) and ``onnx.reference.ops``.
"""

from __future__ import annotations

from typing import Any

from ember import DType, Tensor

from .. import rules
from .._context import Context
from .._errors import OnnxImportError
from .._ir import Node
from .._registry import converter
from ._control import run_body


def _seq(node: Node, s: Any) -> list[Any]:
    if not isinstance(s, list):
        raise OnnxImportError(f"{node.where()}: expected a sequence input, got {type(s).__name__}.")
    return s


def _position(ctx: Context, node: Node, pos: Tensor | None, n: int, default: int, insert: bool = False) -> int:
    """The position input, negative counted from the end, checked against ``[-n, n-1]`` (``[-n, n]`` to
    insert)."""
    p = default if pos is None else int(ctx.scalar(pos))
    hi = n if insert else n - 1
    if not -n <= p <= hi:
        raise OnnxImportError(
            f"{node.where()}: position {p} is outside [{-n}, {hi}] for a sequence of {n} tensors; the model "
            "indexes past the sequence."
        )
    return p + n if p < 0 else p


@converter("SequenceConstruct", since=11)
def sequence_construct(ctx: Context, node: Node, *tensors: Tensor) -> list[Tensor]:
    """``SequenceConstruct``: the inputs as a sequence."""
    return list(tensors)


@converter("SequenceEmpty", since=11)
def sequence_empty(ctx: Context, node: Node) -> list[Tensor]:
    """``SequenceEmpty``: an empty sequence (its ``dtype`` attribute has no run-time role here)."""
    return []


@converter("SequenceAt", since=11, static=(1,))
def sequence_at(ctx: Context, node: Node, seq: list[Tensor], pos: Tensor) -> Tensor:
    """``SequenceAt``: the tensor at ``position``."""
    s = _seq(node, seq)
    return s[_position(ctx, node, pos, len(s), 0)]


@converter("SequenceInsert", since=11, static=(2,))
def sequence_insert(ctx: Context, node: Node, seq: list[Tensor], t: Tensor, pos: Tensor | None = None) -> list:
    """``SequenceInsert``: a new sequence with ``tensor`` at ``position`` (default: appended)."""
    s = list(_seq(node, seq))
    s.insert(_position(ctx, node, pos, len(s), len(s), insert=True), t)
    return s


@converter("SequenceErase", since=11, static=(1,))
def sequence_erase(ctx: Context, node: Node, seq: list[Tensor], pos: Tensor | None = None) -> list[Tensor]:
    """``SequenceErase``: a new sequence without the tensor at ``position`` (default: the last)."""
    s = list(_seq(node, seq))
    del s[_position(ctx, node, pos, len(s), len(s) - 1)]
    return s


@converter("SequenceLength", since=11)
def sequence_length(ctx: Context, node: Node, seq: list[Tensor]) -> Tensor:
    """``SequenceLength``: the number of tensors, an int64 scalar."""
    return ctx.tensor(len(_seq(node, seq)), DType.INT64)


@converter("SplitToSequence", since=11, static=(1,))
def split_to_sequence(ctx: Context, node: Node, x: Tensor, split: Tensor | None = None) -> list[Tensor]:
    """``SplitToSequence``: pieces along ``axis``: of ``split`` sizes (a list), of ``split`` elements each (a
    scalar; the last smaller), or of 1 element each without ``split`` (squeezed when ``keepdims`` is 0)."""
    axis = int(node.attr("axis", 0))
    axis = axis + x.rank if axis < 0 else axis
    if split is None:
        pieces = x.split(1, dim=axis) if x.shape[axis] else []
        return pieces if int(node.attr("keepdims", 1)) else [p.squeeze_dim(axis) for p in pieces]
    sizes = ctx.ints(split) or []
    if split.rank == 0:
        return x.split(sizes[0], dim=axis)
    try:  # the sizes checked by a host rule (sizes read from the data stay code)
        sizes = rules.split_sizes(x.shape[axis], len(sizes), sizes, None)
    except OnnxImportError as exc:
        raise OnnxImportError(f"{node.where()}: split sizes along axis {axis}: {exc}") from exc
    return x.split_with_sizes(sizes, dim=axis)


@converter("ConcatFromSequence", since=11)
def concat_from_sequence(ctx: Context, node: Node, seq: list[Tensor]) -> Tensor:
    """``ConcatFromSequence``: the tensors joined along ``axis`` (stacked on a new one when ``new_axis``)."""
    s = _seq(node, seq)
    if not s:
        raise OnnxImportError(f"{node.where()}: cannot concatenate an empty sequence (no element type or shape).")
    axis = int(node.attr("axis"))
    if int(node.attr("new_axis", 0)):
        return Tensor.stack(s, axis + s[0].rank + 1 if axis < 0 else axis)
    return Tensor.cat(s, axis + s[0].rank if axis < 0 else axis)


@converter("SequenceMap", since=17)
def sequence_map(ctx: Context, node: Node, seq: list[Tensor], *extra: Any) -> tuple[list[Any], ...]:
    """``SequenceMap``: the ``body`` run on each position of the input sequence (sequence inputs give their
    element, tensor inputs themselves); one output sequence per body output."""
    body = node.attr("body")
    s = _seq(node, seq)
    for e in extra:
        if isinstance(e, list) and len(e) != len(s):
            raise OnnxImportError(
                f"{node.where()}: the additional sequence has {len(e)} tensors, the input sequence {len(s)}; "
                "they must be equally long."
            )
    outs: list[list[Any]] = [[] for _ in body.outputs]
    for i, item in enumerate(s):
        args = [item] + [e[i] if isinstance(e, list) else e for e in extra]
        for k, v in enumerate(run_body(ctx, body, args)):
            outs[k].append(v)
    return tuple(outs)


@converter("Optional", since=15)
def optional(ctx: Context, node: Node, x: Any = None) -> Any:
    """``Optional``: the input as an optional (``None`` when the input is omitted)."""
    return x


@converter("OptionalHasElement", since=15)
def optional_has_element(ctx: Context, node: Node, x: Any = None) -> Tensor:
    """``OptionalHasElement``: a bool scalar, true unless the optional is empty (or, from 18, omitted)."""
    return ctx.tensor(x is not None, DType.BOOL, ctx.host if x is None else None)


@converter("OptionalGetElement", since=15)
def optional_get_element(ctx: Context, node: Node, x: Any) -> Any:
    """``OptionalGetElement``: the optional's value (from 18 a plain tensor or sequence passes through)."""
    if x is None:
        raise OnnxImportError(f"{node.where()}: the optional input is empty; OptionalGetElement needs a value.")
    return x
