"""Stand-ins for the few PyTorch objects a ``state_dict`` pickle names: storage classes and dtypes.

A ``.pt`` pickle refers to ``torch.FloatStorage``, ``torch.storage.UntypedStorage``, ``torch.float32`` ...
by module and name. The safe unpickler never imports torch: it maps each allowed name to one of the inert
markers defined here, which only carry the element type (an Ember :class:`~ember.DType`, or the PyTorch
name of a type Ember cannot hold, reported when a tensor uses it).

Source of the names: ``torch/storage.py`` (``_LegacyStorage`` subclasses), ``torch/_utils.py``
(``_element_size``) and ``torch/serialization.py`` (``_save`` / ``_legacy_save``).
"""

from __future__ import annotations

from ember import DType

from ._frozen import Frozen

__all__ = ["StorageType", "TorchDType", "STORAGE_TYPES", "TORCH_DTYPES"]


class StorageType(Frozen):
    """Marker for ``torch.<X>Storage``: a storage class whose elements are ``dtype``.

    ``dtype`` is None for ``torch.UntypedStorage`` (bytes; the tensor's dtype comes from
    ``_rebuild_tensor_v3``); ``unsupported`` names a PyTorch type Ember has no element type for.
    """

    __slots__ = ("name", "dtype", "unsupported")
    name: str
    dtype: DType | None
    unsupported: str | None

    def __init__(self, name: str, dtype: DType | None, unsupported: str | None = None) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "dtype", dtype)
        object.__setattr__(self, "unsupported", unsupported)

    def __repr__(self) -> str:
        return f"torch.{self.name}"


class TorchDType(Frozen):
    """Marker for a ``torch.<dtype>`` object (``torch.float32``) found in a pickle."""

    __slots__ = ("name", "dtype")
    name: str
    dtype: DType | None

    def __init__(self, name: str, dtype: DType | None) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "dtype", dtype)

    def __repr__(self) -> str:
        return f"torch.{self.name}"

    def __str__(self) -> str:
        return f"torch.{self.name}"


_SUPPORTED_STORAGES = {
    "DoubleStorage": DType.FLOAT64,
    "FloatStorage": DType.FLOAT32,
    "HalfStorage": DType.FLOAT16,
    "BFloat16Storage": DType.BFLOAT16,
    "LongStorage": DType.INT64,
    "IntStorage": DType.INT32,
    "ShortStorage": DType.INT16,
    "CharStorage": DType.INT8,
    "ByteStorage": DType.UINT8,
    "BoolStorage": DType.BOOL,
    # the integers of a quantized tensor: only ``_rebuild_qtensor`` (``_pt_quantized.py``) gives them a scale
    "QInt8Storage": DType.INT8,
    "QUInt8Storage": DType.UINT8,
}
_UNSUPPORTED_STORAGES = {
    "ComplexFloatStorage": "complex64",
    "ComplexDoubleStorage": "complex128",
    "QInt32Storage": "qint32",
    "QUInt4x2Storage": "quint4x2",
    "QUInt2x4Storage": "quint2x4",
}

#: ``(module, name)`` of every storage class a state_dict may name, mapped to its marker.
STORAGE_TYPES: dict[tuple[str, str], StorageType] = {}
for _name, _dt in _SUPPORTED_STORAGES.items():
    _marker = StorageType(_name, _dt)
    STORAGE_TYPES[("torch", _name)] = _marker
    STORAGE_TYPES[("torch.cuda", _name)] = _marker  # very old files saved from CUDA tensors
for _name, _what in _UNSUPPORTED_STORAGES.items():
    STORAGE_TYPES[("torch", _name)] = StorageType(_name, None, _what)
_UNTYPED = StorageType("UntypedStorage", None)
STORAGE_TYPES[("torch", "UntypedStorage")] = _UNTYPED
STORAGE_TYPES[("torch.storage", "UntypedStorage")] = _UNTYPED

_DTYPE_NAMES = {
    DType.FLOAT64: ("float64", "double"),
    DType.FLOAT32: ("float32", "float"),
    DType.FLOAT16: ("float16", "half"),
    DType.BFLOAT16: ("bfloat16",),
    DType.INT64: ("int64", "long"),
    DType.INT32: ("int32", "int"),
    DType.INT16: ("int16", "short"),
    DType.INT8: ("int8",),
    DType.UINT8: ("uint8",),
    DType.BOOL: ("bool",),
}
_UNSUPPORTED_DTYPES = (
    "uint16", "uint32", "uint64", "complex32", "complex64", "complex128", "cfloat", "cdouble", "chalf",
    "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu",
    "qint8", "quint8", "qint32", "quint4x2", "quint2x4",
)

#: ``(module, name)`` of every ``torch.<dtype>`` object, mapped to its marker.
TORCH_DTYPES: dict[tuple[str, str], TorchDType] = {}
for _dt, _names in _DTYPE_NAMES.items():
    _m = TorchDType(_names[0], _dt)
    for _n in _names:
        TORCH_DTYPES[("torch", _n)] = _m
for _n in _UNSUPPORTED_DTYPES:
    TORCH_DTYPES[("torch", _n)] = TorchDType(_n, None)
