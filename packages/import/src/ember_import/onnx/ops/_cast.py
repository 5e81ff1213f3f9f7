"""Element-type conversion: ONNX ``Cast`` (1, 6, 9, 13, 19, 21, 23, 24, 25, 28) and ``CastLike`` (15, 19, 21, 23,
24, 25, 28), following the ONNX reference (``numpy.astype``): floats to integers truncate toward zero, anything to
bool is ``!= 0``, bool to numbers is 0/1.

``to`` is a type name string in opset 1 and a ``TensorProto.DataType`` number from 6. ``saturate`` and
``round_mode`` only concern float8/float8e8m0 targets, which (like strings, 4-bit and 2-bit types) have no Ember
element type: such casts raise :class:`OnnxImportError` when the model is run.

``BitCast`` (26) keeps the bits instead of the value (``Tensor.bitcast``).
"""

from __future__ import annotations

from ember import Tensor

from .._context import Context
from .._dtypes import dtype_of, onnx_type_name
from .._errors import OnnxImportError
from .._ir import Node
from .._registry import converter
from ._elementwise_util import to_dtype

__all__: list[str] = []

#: ``TensorProto.DataType`` names -> numbers (``"FLOAT"`` -> 1), for ``Cast``-1's string ``to``
_BY_NAME = {onnx_type_name(n): n for n in range(1, 27)}


def _target(node: Node) -> int:
    """The ``to`` attribute as a ``TensorProto.DataType`` number (opset 1 spells it as a name, ``"FLOAT"``)."""
    to = node.attr("to")
    if isinstance(to, bytes):
        to = to.decode()
    if isinstance(to, str):
        if to.upper() not in _BY_NAME:
            raise OnnxImportError(
                f"{node.where()}: 'to' names no ONNX element type ({to!r}); use a TensorProto.DataType name "
                "such as 'FLOAT' or 'INT64'."
            )
        return _BY_NAME[to.upper()]
    return int(to)


@converter("Cast", since=1)
def cast(ctx: Context, node: Node, x: Tensor) -> Tensor:
    """ONNX ``Cast``: ``x`` converted to the element type ``to``."""
    return to_dtype(x, dtype_of(_target(node), f"{node.where()} attribute 'to'"))


@converter("CastLike", since=15)
def cast_like(ctx: Context, node: Node, x: Tensor, like: Tensor) -> Tensor:
    """ONNX ``CastLike``: ``x`` converted to the element type of ``like``."""
    return to_dtype(x, like.dtype)


@converter("BitCast", since=26)
def bit_cast(ctx: Context, node: Node, x: Tensor) -> Tensor:
    """ONNX ``BitCast``: ``x``'s bits read as the element type ``to`` of the same size (little-endian)."""
    return x.bitcast(dtype_of(_target(node), f"{node.where()} attribute 'to'"))
