"""Element types (``DType``) shared by every backend.

The names follow numpy/PyTorch (``float32``); Burn's short names (``f32``) are accepted by
:meth:`DType.parse`.
"""

from __future__ import annotations

import enum

import numpy as np

__all__ = ["DType"]


class DType(enum.Enum):
    """An element type. ``kind`` is ``"float"``, ``"int"``, ``"uint"`` or ``"bool"``."""

    FLOAT64 = "float64"
    FLOAT32 = "float32"
    FLOAT16 = "float16"
    BFLOAT16 = "bfloat16"
    INT64 = "int64"
    INT32 = "int32"
    INT16 = "int16"
    INT8 = "int8"
    UINT8 = "uint8"
    UINT16 = "uint16"
    UINT32 = "uint32"
    UINT64 = "uint64"
    BOOL = "bool"

    #: identity hash, in C: Enum's ``__hash__`` is a Python function (``hash(self._name_)``), a frame on every
    #: dict look-up keyed by a DType (the backends' dtype tables, on every creation op). Members are singletons
    #: compared by identity, so the identity hash is consistent with equality.
    __hash__ = object.__hash__

    @property
    def kind(self) -> str:
        v = self.value
        if v == "bool":
            return "bool"
        if v.startswith("uint"):
            return "uint"
        if v.startswith("int"):
            return "int"
        return "float"

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_int(self) -> bool:
        return self.kind in ("int", "uint")

    @property
    def itemsize(self) -> int:
        """Size of one element in bytes."""
        return _ITEMSIZE[self]

    @property
    def short(self) -> str:
        """Burn's short name (``f32``, ``i64``, ``bool``)."""
        return _SHORT[self]

    def to_numpy(self) -> np.dtype:
        """The numpy dtype storing this element type (``bfloat16`` is stored as ``uint16`` bits).

        Raises:
            DTypeError: never; every DType has a numpy storage type.
        """
        return _NUMPY[self]

    @staticmethod
    def from_numpy(dtype: object) -> DType:
        """The DType of a numpy dtype.

        Raises:
            DTypeError: the numpy dtype has no Ember equivalent (complex, strings, objects).
        """
        nd = np.dtype(dtype)  # type: ignore[call-overload]
        try:
            return _FROM_NUMPY[nd]
        except KeyError:
            from ._errors import DTypeError

            raise DTypeError(
                f"numpy dtype {nd} has no Ember element type; expected one of "
                f"{', '.join(d.value for d in DType)}. Convert the array first, e.g. "
                "array.astype(np.float32)."
            ) from None

    @staticmethod
    def parse(value: DType | str | object) -> DType:
        """Parse ``"float32"``, ``"f32"``, a numpy dtype, or a DType.

        Raises:
            DTypeError: the value names no element type.
        """
        if isinstance(value, DType):
            return value
        if isinstance(value, str):
            key = value.lower()
            if key in _BY_NAME:
                return _BY_NAME[key]
        if value is not None:  # np.dtype(None) would be float64
            try:
                return DType.from_numpy(value)
            except Exception:
                pass
        from ._errors import DTypeError

        raise DTypeError(
            f"unknown element type {value!r}; expected one of "
            f"{', '.join(d.value for d in DType)} (or Burn's f32, i64, ...)."
        )

    def __repr__(self) -> str:
        return f"DType.{self.name}"

    def __str__(self) -> str:
        return self.value


_ITEMSIZE = {
    DType.FLOAT64: 8, DType.FLOAT32: 4, DType.FLOAT16: 2, DType.BFLOAT16: 2,
    DType.INT64: 8, DType.INT32: 4, DType.INT16: 2, DType.INT8: 1, DType.UINT8: 1,
    DType.UINT16: 2, DType.UINT32: 4, DType.UINT64: 8, DType.BOOL: 1,
}
_SHORT = {
    DType.FLOAT64: "f64", DType.FLOAT32: "f32", DType.FLOAT16: "f16", DType.BFLOAT16: "bf16",
    DType.INT64: "i64", DType.INT32: "i32", DType.INT16: "i16", DType.INT8: "i8", DType.UINT8: "u8",
    DType.UINT16: "u16", DType.UINT32: "u32", DType.UINT64: "u64",
    DType.BOOL: "bool",
}
_NUMPY: dict[DType, np.dtype] = {
    DType.FLOAT64: np.dtype(np.float64), DType.FLOAT32: np.dtype(np.float32),
    DType.FLOAT16: np.dtype(np.float16), DType.BFLOAT16: np.dtype(np.uint16),
    DType.INT64: np.dtype(np.int64), DType.INT32: np.dtype(np.int32), DType.INT16: np.dtype(np.int16),
    DType.INT8: np.dtype(np.int8), DType.UINT8: np.dtype(np.uint8), DType.UINT16: np.dtype(np.uint16),
    DType.UINT32: np.dtype(np.uint32), DType.UINT64: np.dtype(np.uint64), DType.BOOL: np.dtype(np.bool_),
}
_FROM_NUMPY = {v: k for k, v in _NUMPY.items() if k is not DType.BFLOAT16}
_BY_NAME = {d.value: d for d in DType} | {d.short: d for d in DType}
