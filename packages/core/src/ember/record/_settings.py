"""Precision settings: the element types a recorder writes floats and ints as (Burn's ``PrecisionSettings``).

Settings only affect what is *written*. Any file loads into any backend and dtype: the loader converts
the stored values to the element type of the destination tensor.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from .._dtype import DType
from .._errors import RecordError
from .._tensor_data import TensorData

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

        Floats are rounded to nearest (IEEE 754, as numpy's ``astype`` and PyTorch's ``half()``). A finite value
        too large for the stored type (``|x| > 65504`` for float16, beyond rounding to it) is an error, never a
        silent ``inf``. A value too small for it underflows to a subnormal or to (signed) zero, as in IEEE 754 and
        PyTorch's ``half()``: float16 keeps magnitudes down to about ``6e-8`` (absolute error at most ``2.98e-8``);
        that loss is accepted silently (it is bounded in absolute terms). Infinities and NaNs stay as they are.

        Raises:
            RecordError: an Int tensor holds values outside the stored int type's range (e.g. token
                ids above 32767 with half precision); a Float tensor holds finite values beyond the stored float
                type's range (names the key and the largest magnitude); use a wider precision setting.
        """
        dt = data.dtype
        if dt is DType.BOOL:
            return data
        if dt.is_float:
            out = data.convert(self.float_dtype)
            if out is not data and self.float_dtype.itemsize <= dt.itemsize:
                _check_float_range(data, out, path, self.name)
            return out
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


def _check_float_range(src: TensorData, out: TensorData, path: str, name: str) -> None:
    """Raise when a finite value of ``src`` became infinite in ``out`` (overflow of a narrowing conversion)."""
    a = out.to_numpy()
    if not a.size or not np.isinf(a).any():
        return
    s = src.to_numpy()
    bad = np.isinf(a) & np.isfinite(s)
    if not bad.any():
        return
    largest = float(np.abs(s[bad]).max())
    limit = 3.3895313892515355e38 if out.dtype is DType.BFLOAT16 else float(np.finfo(a.dtype).max)
    raise RecordError(
        f"record: the Float tensor at {path or '<root>'!r} holds {int(bad.sum())} finite value(s) beyond the range "
        f"of {out.dtype} used by {name} (largest magnitude {largest:.6g}, the type's maximum {limit:.6g}); they would "
        "be stored as inf. Save with FullPrecisionSettings or DoublePrecisionSettings (e.g. "
        "NamedMpkFileRecorder() instead of CompactRecorder()), or rescale the values."
    )


class FullPrecisionSettings(PrecisionSettings):
    """Floats as ``float32``, ints as ``int32`` (Burn's default)."""

    float_dtype = DType.FLOAT32
    int_dtype = DType.INT32


class HalfPrecisionSettings(PrecisionSettings):
    """Floats as ``float16``, ints as ``int16`` (half the size; float16 keeps ~3 significant digits).

    Finite floats beyond float16's range (``|x| > 65504``) are a :class:`~ember.RecordError`; magnitudes below
    about ``6e-8`` underflow to zero, as with PyTorch's ``half()`` (see :meth:`PrecisionSettings.convert`).
    """

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
