"""Graph plumbing: ``Constant`` and ``Identity``."""

from __future__ import annotations

from typing import Any

from ember import DType, Tensor, TensorData

from .._context import Context
from .._errors import OnnxImportError
from .._ir import Node
from .._registry import converter


@converter("Constant", since=1)
def constant(ctx: Context, node: Node) -> Tensor:
    """``Constant``: ``value`` (a tensor) or, from opset 12, ``value_float(s)``/``value_int(s)``."""
    a = node.attrs
    if "value" in a:
        data = a["value"]
    elif "value_float" in a:
        data = TensorData(a["value_float"], DType.FLOAT32)
    elif "value_floats" in a:
        data = TensorData(list(a["value_floats"]), DType.FLOAT32)
    elif "value_int" in a:
        data = TensorData(a["value_int"], DType.INT64)
    elif "value_ints" in a:
        data = TensorData(list(a["value_ints"]), DType.INT64)
    else:
        raise OnnxImportError(
            f"{node.where()}: only tensor, float(s) and int(s) constants are supported (found "
            f"{', '.join(a) or 'no value'}); string and sparse constants have no Ember type."
        )
    return Tensor.from_data(data, ctx.device, dtype=data.dtype)


@converter("Identity", since=1)
def identity(ctx: Context, node: Node, x: Any) -> Any:
    """``Identity``: the input itself (tensors, sequences and optionals alike)."""
    return x
