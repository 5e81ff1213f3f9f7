"""ONNX element types (``TensorProto.DataType``) and Ember's :class:`~ember.DType`."""

from __future__ import annotations

from ember import DType

from ._errors import OnnxImportError

__all__ = ["ONNX_TO_DTYPE", "DTYPE_TO_ONNX", "dtype_of", "onnx_type_name"]

#: TensorProto.DataType numbers (onnx/onnx.proto3) -> Ember element type; the numbers are the wire format
ONNX_TO_DTYPE: dict[int, DType] = {
    1: DType.FLOAT32,
    2: DType.UINT8,
    3: DType.INT8,
    5: DType.INT16,
    6: DType.INT32,
    7: DType.INT64,
    9: DType.BOOL,
    10: DType.FLOAT16,
    11: DType.FLOAT64,
    16: DType.BFLOAT16,
}
for _num, _name in ((4, "UINT16"), (12, "UINT32"), (13, "UINT64")):
    if hasattr(DType, _name):  # the unsigned types Ember gained for ONNX
        ONNX_TO_DTYPE[_num] = getattr(DType, _name)

DTYPE_TO_ONNX: dict[DType, int] = {v: k for k, v in ONNX_TO_DTYPE.items()}

_NAMES = {
    0: "UNDEFINED", 1: "FLOAT", 2: "UINT8", 3: "INT8", 4: "UINT16", 5: "INT16", 6: "INT32", 7: "INT64",
    8: "STRING", 9: "BOOL", 10: "FLOAT16", 11: "DOUBLE", 12: "UINT32", 13: "UINT64", 14: "COMPLEX64",
    15: "COMPLEX128", 16: "BFLOAT16", 17: "FLOAT8E4M3FN", 18: "FLOAT8E4M3FNUZ", 19: "FLOAT8E5M2",
    20: "FLOAT8E5M2FNUZ", 21: "UINT4", 22: "INT4", 23: "FLOAT4E2M1", 24: "FLOAT8E8M0", 25: "UINT2", 26: "INT2",
}


def onnx_type_name(elem_type: int) -> str:
    """The ONNX name of an element type number (``1`` -> ``"FLOAT"``)."""
    return _NAMES.get(elem_type, f"type {elem_type}")


def dtype_of(elem_type: int, what: str) -> DType:
    """The Ember element type of an ONNX element type number.

    Raises:
        OnnxImportError: the type has no Ember equivalent (strings, complex, float8, 4-bit and 2-bit types);
            ``what`` names the value or attribute in the message.
    """
    try:
        return ONNX_TO_DTYPE[elem_type]
    except KeyError:
        supported = ", ".join(onnx_type_name(k) for k in sorted(ONNX_TO_DTYPE))
        raise OnnxImportError(
            f"{what}: ONNX element type {onnx_type_name(elem_type)} has no Ember equivalent; supported are "
            f"{supported}. Convert the model's tensors of that type (e.g. with onnx's version converter or by "
            "re-exporting with another dtype)."
        ) from None
