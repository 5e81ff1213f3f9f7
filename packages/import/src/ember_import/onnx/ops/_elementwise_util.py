"""Helpers shared by the element-wise converters (F1): kind tests, numpy broadcasting of several operands, the
legacy broadcasting of opsets < 7, and exact element-type conversion across kinds."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ember import DType, Float, Int, Tensor

from .. import rules
from .._context import Context
from .._errors import OnnxImportError
from .._ir import Node
from .._registry import converter

__all__ = [
    "is_float", "is_int", "is_unsigned", "bits", "legacy_broadcast", "broadcast_shape", "to_dtype",
    "register_binary", "register_unary",
]


def is_float(t: Tensor) -> bool:
    """Whether ``t`` holds floats."""
    return t.kind is Float


def is_int(t: Tensor) -> bool:
    """Whether ``t`` holds integers."""
    return t.kind is Int


def is_unsigned(t: Tensor) -> bool:
    """Whether ``t`` holds unsigned integers."""
    return t.dtype.name.startswith("UINT")


def bits(t: Tensor) -> int:
    """The width in bits of ``t``'s integer element type (``INT16`` -> 16)."""
    return int(t.dtype.name.lstrip("UINT"))


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


def broadcast_shape(node: Node, shapes: Sequence[Sequence[int]]) -> list[int]:
    """:func:`ember_import.onnx.rules.broadcast_shapes` (numpy broadcasting), its error naming ``node``.

    Raises:
        OnnxImportError: two shapes do not broadcast.
    """
    try:
        return rules.broadcast_shapes([list(s) for s in shapes])
    except OnnxImportError as exc:
        raise OnnxImportError(f"{node.where()}: {exc}") from exc


def register_binary(op: str, fn: Callable[[Tensor, Tensor], Tensor], opsets: str, since: int = 1) -> None:
    """Register the converter of a binary op computing ``fn(a, b)`` after :func:`legacy_broadcast`;
    ``opsets`` lists the op's versions for the docstring."""

    def convert(ctx: Context, node: Node, a: Tensor, b: Tensor) -> Tensor:
        a, b = legacy_broadcast(ctx, node, a, b)
        return fn(a, b)

    convert.__name__ = op.lower()
    convert.__doc__ = f"ONNX ``{op}`` ({opsets}); numpy broadcasting (legacy ``broadcast``/``axis`` before 7)."
    converter(op, since=since)(convert)


def register_unary(op: str, fn: Callable[[Tensor], Tensor], opsets: str, since: int = 1) -> None:
    """Register the converter of a unary op computing ``fn(x)``; ``opsets`` is for the docstring."""

    def convert(ctx: Context, node: Node, x: Tensor) -> Tensor:
        return fn(x)

    convert.__name__ = op.lower()
    convert.__doc__ = f"ONNX ``{op}`` ({opsets})."
    converter(op, since=since)(convert)


def _int_to_float(t: Tensor, dtype: DType) -> Tensor:
    """An Int tensor as floats of ``dtype``, exactly rounded even when the backend's default float type is
    narrower than ``dtype`` (int64 -> float64 through float32 would lose digits): the integer is split into
    22-bit pieces, each exact in float32, recombined in ``dtype``."""
    f = t.float()
    if f.dtype is dtype or dtype is not DType.FLOAT64 or bits(t) <= 16:
        return f.cast(dtype)
    wide = t.cast(DType.INT64) if t.dtype is not DType.UINT64 else t
    piece = 1 << 22
    lo = wide.remainder(piece)
    mid = (wide.div(piece)).remainder(piece)
    hi = wide.div(piece * piece)
    out = hi.float().cast(dtype) * float(piece * piece) + mid.float().cast(dtype) * float(piece)
    return out + lo.float().cast(dtype)


def to_dtype(t: Tensor, dtype: DType) -> Tensor:
    """``t`` with element type ``dtype``, across kinds too: floats to integers truncate toward zero, anything
    to bool is ``!= 0``, bools become 0/1 (numpy's ``astype``, which the ONNX reference ``Cast`` uses)."""
    if t.dtype is dtype:
        return t
    if dtype is DType.BOOL:
        return t.bool()
    if dtype.is_float:
        if t.kind is Int:
            return _int_to_float(t, dtype)
        return t.float().cast(dtype)
    return t.int().cast(dtype)
