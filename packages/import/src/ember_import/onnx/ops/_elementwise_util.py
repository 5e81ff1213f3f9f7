"""Helpers shared by the element-wise converters (F1): kind tests and the legacy broadcasting of opsets < 7."""

from __future__ import annotations

from ember import Float, Int, Tensor

from .._context import Context
from .._errors import OnnxImportError
from .._ir import Node

__all__ = ["is_float", "is_int", "legacy_broadcast"]


def is_float(t: Tensor) -> bool:
    """Whether ``t`` holds floats."""
    return t.kind is Float


def is_int(t: Tensor) -> bool:
    """Whether ``t`` holds integers."""
    return t.kind is Int


def legacy_broadcast(ctx: Context, node: Node, a: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
    """The operands of a binary op aligned the way its opset asks.

    From opset 7 both broadcast like numpy (Ember's binary ops do that). Before 7, ``b`` broadcasts to ``a``
    only with ``broadcast=1``, aligned at the trailing dims or, with ``axis``, starting at dim ``axis`` of
    ``a`` (ONNX Operators-changelog, Add-1/Add-6): ``b`` is reshaped so numpy rules give that alignment.

    Raises:
        OnnxImportError: shapes differ without ``broadcast=1``.
    """
    if ctx.opset >= 7 or a.shape == b.shape:
        return a, b
    if not node.attr("broadcast", 0):
        raise OnnxImportError(
            f"{node.where()}: inputs of shapes {list(a.shape)} and {list(b.shape)} differ, which opset "
            f"{ctx.opset} allows only with broadcast=1; set the attribute or convert the model to opset 7+."
        )
    axis = node.attr("axis", None)
    if axis is None:
        return a, b
    if axis < 0:
        axis += a.rank
    trailing = a.rank - axis - b.rank
    if trailing > 0:
        b = b.reshape(list(b.shape) + [1] * trailing)
    return a, b
