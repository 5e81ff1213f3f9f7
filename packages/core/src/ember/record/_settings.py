"""Precision settings: the element types a recorder writes floats and ints as (Burn's ``PrecisionSettings``).

Settings only affect what is *written*. Any file loads into any backend and dtype: the loader converts
the stored values to the element type of the destination tensor.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from .._data import TensorData
from .._dtype import DType
from .._errors import RecordError

__all__ = [
    "PrecisionSettings",
    "FullPrecisionSettings",
    "HalfPrecisionSettings",
    "DoublePrecisionSettings",
    "settings_by_name",
]


class PrecisionSettings:
    """Element types used when writing a record.

    Attributes:
        float_dtype: the type Float tensors are stored as.
        int_dtype: the type Int tensors are stored as. Bool tensors are always stored as ``bool``.

    Source: Burn's ``FullPrecisionSettings`` / ``HalfPrecisionSettings`` / ``DoublePrecisionSettings``.
    """

    float_dtype: ClassVar[DType] = DType.FLOAT32
    int_dtype: ClassVar[DType] = DType.INT32

    @property
    def name(self) -> str:
        return type(self).__name__

    def convert(self, data: TensorData, path: str = "") -> TensorData:
        """``data`` converted to the stored element type (no copy when it already has it).

        Raises:
            RecordError: an Int tensor holds values outside the stored int type's range (e.g. token
                ids above 32767 with half precision); use a wider precision setting.
        """
        dt = data.dtype
        if dt is DType.BOOL:
            return data
        if dt.is_float:
            return data.convert(self.float_dtype)
        want = self.int_dtype
        if dt is want:
            return data
        arr = data.as_bits()
        if arr.size and dt.itemsize > want.itemsize:
            info = np.iinfo(want.to_numpy())
            lo, hi = int(arr.min()), int(arr.max())
            if lo < info.min or hi > info.max:
                raise RecordError(
                    f"record: the Int tensor at {path or '<root>'!r} holds values in [{lo}, {hi}], outside "
                    f"the range of {want} used by {self.name}; save with DoublePrecisionSettings or "
                    "FullPrecisionSettings instead."
                )
        return TensorData.from_bits(arr.astype(want.to_numpy()), want)

    def __repr__(self) -> str:
        return f"{self.name}()"

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self)

    def __hash__(self) -> int:
        return hash(type(self))


class FullPrecisionSettings(PrecisionSettings):
    """Floats as ``float32``, ints as ``int32`` (Burn's default)."""

    float_dtype = DType.FLOAT32
    int_dtype = DType.INT32


class HalfPrecisionSettings(PrecisionSettings):
    """Floats as ``float16``, ints as ``int16`` (half the size; float16 keeps ~3 significant digits)."""

    float_dtype = DType.FLOAT16
    int_dtype = DType.INT16


class DoublePrecisionSettings(PrecisionSettings):
    """Floats as ``float64``, ints as ``int64`` (lossless for every Ember element type)."""

    float_dtype = DType.FLOAT64
    int_dtype = DType.INT64


_BY_NAME: dict[str, type[PrecisionSettings]] = {
    c.__name__: c for c in (FullPrecisionSettings, HalfPrecisionSettings, DoublePrecisionSettings)
}


def settings_by_name(name: str) -> PrecisionSettings | None:
    """The settings class named in a file's metadata, or ``None`` if unknown."""
    cls = _BY_NAME.get(name)
    return cls() if cls is not None else None
