"""Quantized tensors in records: the integers and scales stored as they are (``docs/record-format.md``).

A parameter or running state holding a :class:`QuantizedTensor` records as ``{"id": ParamId, "param":
{"quantized": node}}`` where ``node`` is::

    {"scheme": {"value": "q8s", "level": "axis", "axis": 1, "size": None, "param": "float32"},
     "shape": [d0, d1, ...],          # the float tensor's shape
     "values": int8 [shape] | uint8 [ceil(numel / 2)] (int4, two per byte, low nibble first),
     "scale": float32/float16/bfloat16 [scale shape],
     "zero_point": int8 [scale shape] | None}

The three tensors are :class:`~ember.record.ExactTensorData`: every recorder writes them with their own element
type whatever its precision settings.
"""

from __future__ import annotations

from typing import Any

from .._errors import RecordError
from .._kind import Float, Int
from .._tensor_data import TensorData
from ..backend._device import Device
from ..tensor._tensor import Tensor
from ._errors import QuantizationError
from ._qtensor import QuantizedTensor
from ._scheme import QParams, QuantScheme

__all__ = ["QUANTIZED_KEY", "quantized_record", "is_quantized_record", "quantized_from_record"]

QUANTIZED_KEY = "quantized"
_KEYS = {"scheme", "shape", "values", "scale", "zero_point"}


def quantized_record(qt: QuantizedTensor, data: bool = True) -> dict[str, Any]:
    """The record node ``{"quantized": {...}}`` of ``qt`` (``data=False``: a template whose tensors are
    ``TENSOR``)."""
    from ..record._codec import TENSOR, ExactTensorData

    def part(t: Tensor | None) -> Any:
        if t is None:
            return None
        return ExactTensorData.of(t.into_data()) if data else TENSOR

    qp = qt.qparams
    return {
        QUANTIZED_KEY: {
            "scheme": qt.scheme.to_dict(),
            "shape": list(qt.shape),
            "values": part(qt.values),
            "scale": part(qp.scale),
            "zero_point": part(qp.zero_point),
        }
    }


def is_quantized_record(node: Any) -> bool:
    """Whether a record node is :func:`quantized_record`'s."""
    return isinstance(node, dict) and len(node) == 1 and isinstance(node.get(QUANTIZED_KEY), dict)


def quantized_from_record(node: Any, device: Device, path: str) -> QuantizedTensor:
    """The quantized tensor of a record node, on ``device``.

    Raises:
        RecordError: the node is malformed (keys, scheme, shapes, dtypes), naming ``path``; nothing from the file
            is executed or echoed at length.
    """
    body = node[QUANTIZED_KEY]
    where = path or "<root>"
    if set(body) != _KEYS:
        raise RecordError(
            f"record: the quantized tensor at {where!r} has keys {sorted(map(str, body))[:8]}, "
            f"expected {sorted(_KEYS)}."
        )
    shape = body["shape"]
    if (
        not isinstance(shape, list)
        or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in shape)
        or len(shape) > 64
    ):
        raise RecordError(f"record: the quantized tensor at {where!r} has an invalid shape.")
    try:
        scheme = QuantScheme.from_dict(body["scheme"])
        parts: list[Tensor | None] = []
        for key, kind in (("values", Int), ("scale", Float), ("zero_point", Int)):
            d = body[key]
            if d is None:
                parts.append(None)
                continue
            if not isinstance(d, TensorData):
                raise QuantizationError(f"{key} must be a tensor, found {type(d).__name__}")
            parts.append(Tensor.from_data(d, device, kind, dtype=d.dtype))
        values, scale, zero_point = parts
        if values is None or scale is None:
            raise QuantizationError("values and scale must be tensors")
        return QuantizedTensor(values, tuple(shape), scheme, QParams(scale, zero_point))
    except QuantizationError as exc:
        raise RecordError(f"record: the quantized tensor at {where!r} is invalid: {exc}") from None
