"""Comparisons, logic, selection and bit operations (ONNX operator specification, onnx/docs/Operators.md).

``Equal`` (1, 7, 11, 13, 19), ``Greater``/``Less`` (1, 7, 9, 13), ``GreaterOrEqual``/``LessOrEqual`` (12, 16),
``And``/``Or``/``Xor`` (1, 7), ``Not`` (1), ``Where`` (9, 16), ``BitShift`` (11), ``BitwiseAnd``/``Or``/``Xor``/
``Not`` (18). Comparisons and logic give bool; numpy broadcasting from opset 7 (legacy ``broadcast``/``axis``
before). String tensors have no Ember type (``Equal`` on strings is not supported).
"""

from __future__ import annotations

from collections.abc import Callable

from ember import Tensor

from .._context import Context
from .._ir import Node
from .._registry import converter
from ._elementwise_util import bits, broadcast_shape, is_unsigned, register_binary
from ._late import late

__all__: list[str] = []


_BINARY: tuple[tuple[str, Callable[[Tensor, Tensor], Tensor], str, int], ...] = (
    ("Equal", late(Tensor, "equal"), "1, 7, 11, 13, 19", 1),
    ("Greater", late(Tensor, "greater"), "1, 7, 9, 13", 1),
    ("Less", late(Tensor, "lower"), "1, 7, 9, 13", 1),
    ("GreaterOrEqual", late(Tensor, "greater_equal"), "12, 16", 12),
    ("LessOrEqual", late(Tensor, "lower_equal"), "12, 16", 12),
    ("And", late(Tensor, "bool_and"), "1, 7", 1),
    ("Or", late(Tensor, "bool_or"), "1, 7", 1),
    ("Xor", late(Tensor, "bool_xor"), "1, 7", 1),
    ("BitwiseAnd", late(Tensor, "bitwise_and"), "18", 18),
    ("BitwiseOr", late(Tensor, "bitwise_or"), "18", 18),
    ("BitwiseXor", late(Tensor, "bitwise_xor"), "18", 18),
)
for _op, _fn, _opsets, _since in _BINARY:
    register_binary(_op, _fn, _opsets, _since)


@converter("Not", since=1)
def not_(ctx: Context, node: Node, x: Tensor) -> Tensor:
    """ONNX ``Not`` (1): logical negation of a bool tensor."""
    return x.bool_not()


@converter("BitwiseNot", since=18)
def bitwise_not(ctx: Context, node: Node, x: Tensor) -> Tensor:
    """ONNX ``BitwiseNot`` (18): ``~x`` on integers."""
    return x.bitwise_not()


@converter("Where", since=9)
def where(ctx: Context, node: Node, cond: Tensor, x: Tensor, y: Tensor) -> Tensor:
    """ONNX ``Where`` (9, 16): ``x`` where ``cond`` else ``y``, the three broadcasting together."""
    shape = broadcast_shape(node, [cond.shape, x.shape, y.shape])
    base = y if list(y.shape) == shape else y.expand(shape)
    return base.mask_where(cond, x)


@converter("BitShift", since=11)
def bit_shift(ctx: Context, node: Node, x: Tensor, y: Tensor) -> Tensor:
    """ONNX ``BitShift`` (11): ``x << y`` (``direction="LEFT"``) or ``x >> y`` (``"RIGHT"``), broadcasting.

    Signed right shifts are arithmetic. A shift by a negative amount or by the width of the type or more gives
    what the sign extension alone gives: -1 for a right shift of a negative value, 0 otherwise (the spec's
    rule; hardware shifts would take the amount modulo the width).
    """
    left = str(node.attr("direction")).upper() == "LEFT"
    width = bits(x)
    out_of_range = y.greater_equal(width)
    if not is_unsigned(y):
        out_of_range = out_of_range.bool_or(y.lower(0))
    if left or is_unsigned(x):
        amount = y.mask_fill(out_of_range, 0)
        out = x.bitwise_left_shift(amount) if left else x.bitwise_right_shift(amount)
        return out.mask_fill(out_of_range, 0)
    # signed right shift: shifting by width - 1 is exactly the sign extension
    return x.bitwise_right_shift(y.mask_fill(out_of_range, width - 1))
