"""``TensorData``: a backend-independent, host-side copy of a tensor's elements.

A ``TensorData`` owns a C-contiguous numpy array. ``bfloat16`` values, which numpy lacks, are
kept as their raw 16-bit patterns in a ``uint16`` array and widened to ``float32`` by
:meth:`TensorData.to_numpy` (lossless). It is what ``Tensor.to_data`` returns, what
``Tensor.from_data`` accepts and what records store.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ._dtype import DType
from ._errors import DTypeError, EmberError, ShapeError

__all__ = ["TensorData", "Tolerance", "bf16_to_f32", "f32_to_bf16"]


def f32_to_bf16(array: np.ndarray) -> np.ndarray:
    """Round float values to bfloat16 (nearest, ties to even) and return the ``uint16`` bits.

    Source: the rounding of ``torch.Tensor.to(torch.bfloat16)`` / Google's bfloat16 definition.
    NaN stays NaN (quiet).
    """
    f = np.asarray(array, dtype=np.float32, order="C")  # ascontiguousarray would make rank 0 rank 1
    bits = f.view(np.uint32)
    rounding = ((bits >> 16) & 1) + np.uint32(0x7FFF)
    out = ((bits + rounding) >> 16).astype(np.uint16)
    nan = np.isnan(f)
    if nan.any():
        out[nan] = np.uint16(0x7FC0)
    return out


def bf16_to_f32(bits: np.ndarray) -> np.ndarray:
    """Widen bfloat16 bit patterns (``uint16``) to exact ``float32`` values."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


class Tolerance:
    """Absolute and relative tolerance for approximate comparisons: ``|a-b| <= atol + rtol*|b|``.

    ``Tolerance.default()`` / ``Tolerance.for_dtype(dtype)`` give the tolerances Ember's tests use:
    float64 1e-10/1e-10, float32 1e-5/1e-4, float16 1e-2/1e-2, bfloat16 5e-2/5e-2.
    """

    __slots__ = ("atol", "rtol")

    def __init__(self, atol: float = 1e-5, rtol: float = 1e-4) -> None:
        self.atol = float(atol)
        self.rtol = float(rtol)

    @classmethod
    def default(cls) -> Tolerance:
        return cls()

    @classmethod
    def for_dtype(cls, dtype: DType | str) -> Tolerance:
        d = DType.parse(dtype)
        return {
            DType.FLOAT64: cls(1e-10, 1e-10),
            DType.FLOAT16: cls(1e-2, 1e-2),
            DType.BFLOAT16: cls(5e-2, 5e-2),
        }.get(d, cls())

    def __repr__(self) -> str:
        return f"Tolerance(atol={self.atol:g}, rtol={self.rtol:g})"


class TensorData:
    """Elements, shape and element type of a tensor, on the host.

    Args:
        value: nested lists/tuples of numbers or bools, a Python scalar, a numpy array, or another
            ``TensorData``.
        dtype: the element type to store; by default inferred (bool → ``bool``, integers →
            ``int64``, floats → ``float32`` for Python values, the array's own dtype for numpy).

    Raises:
        ShapeError: ragged nested lists.
        DTypeError: elements that are not numbers or bools, or an unknown dtype.
    """

    __slots__ = ("_array", "_dtype")
    _array: np.ndarray
    _dtype: DType

    def __init__(self, value: Any, dtype: DType | str | None = None) -> None:
        if isinstance(value, TensorData):
            array, src = value._array, value._dtype
            if dtype is None or DType.parse(dtype) is src:
                self._array, self._dtype = array, src
                return
            value = value.to_numpy()
        want = None if dtype is None else DType.parse(dtype)
        if isinstance(value, np.ndarray):
            arr = value
            if want is None:
                want = DType.from_numpy(arr.dtype)
        else:
            arr = _from_python(value)
            if want is None:
                want = _infer(arr)
        self._dtype = want
        self._array = _store(arr, want)

    @classmethod
    def from_bits(cls, array: np.ndarray, dtype: DType) -> TensorData:
        """Wrap an array already in storage form (``uint16`` bits for bfloat16); no copy."""
        out = cls.__new__(cls)
        out._array = np.asarray(array, order="C")
        out._dtype = dtype
        return out

    @classmethod
    def from_bytes(cls, data: bytes | bytearray | memoryview, shape: Sequence[int], dtype: DType | str) -> TensorData:
        """Build from little-endian raw bytes, as stored in records.

        Raises:
            RecordError-compatible ShapeError: the byte count does not match shape x itemsize.
        """
        d = DType.parse(dtype)
        shape = tuple(int(s) for s in shape)
        count = int(np.prod(shape, dtype=np.int64)) if shape else 1
        expected = count * d.itemsize
        if len(data) != expected:
            raise ShapeError(
                f"TensorData.from_bytes: {len(data)} bytes for shape {list(shape)} of {d} "
                f"(expected {expected} bytes). The data is truncated or the shape/dtype is wrong."
            )
        arr = np.frombuffer(data, dtype=d.to_numpy().newbyteorder("<")).reshape(shape)
        return cls.from_bits(arr.astype(d.to_numpy(), copy=False), d)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self._array.shape)

    @property
    def dtype(self) -> DType:
        return self._dtype

    @property
    def num_elements(self) -> int:
        return int(self._array.size)

    @property
    def bytes(self) -> bytes:
        """Elements as little-endian raw bytes in C order (bfloat16 as its 16-bit patterns)."""
        arr = self._array
        if arr.dtype.byteorder == ">":
            arr = arr.astype(arr.dtype.newbyteorder("<"))
        return arr.tobytes()

    def as_bits(self) -> np.ndarray:
        """The storage array (``uint16`` bits for bfloat16, the values otherwise); no copy."""
        return self._array

    def to_numpy(self) -> np.ndarray:
        """The values as a numpy array (bfloat16 widened exactly to float32). Shares memory when possible."""
        if self._dtype is DType.BFLOAT16:
            return bf16_to_f32(self._array)
        return self._array

    def to_list(self) -> Any:
        """The values as nested Python lists (a scalar for rank 0)."""
        return self.to_numpy().tolist()

    def convert(self, dtype: DType | str) -> TensorData:
        """A copy with another element type (floats rounded to nearest, bools as 0/1).

        Raises:
            DTypeError: unknown dtype.
        """
        d = DType.parse(dtype)
        if d is self._dtype:
            return self
        return TensorData(self.to_numpy(), d)

    def assert_approx_eq(
        self, other: TensorData | Any, tolerance: Tolerance | None = None
    ) -> None:
        """Assert the shapes match and every element is within ``tolerance``.

        NaNs must sit at the same positions; infinities must be equal. The default tolerance is
        :meth:`Tolerance.for_dtype` of this data's dtype.

        Raises:
            AssertionError: names the shapes, or the count of mismatches, the worst index and the
                two values there.
        """
        if not isinstance(other, TensorData):
            other = TensorData(other)
        tol = tolerance or Tolerance.for_dtype(self._dtype)
        a = self.to_numpy().astype(np.float64)
        b = other.to_numpy().astype(np.float64)
        if a.shape != b.shape:
            raise AssertionError(f"shapes differ: {list(a.shape)} vs {list(b.shape)}")
        ok = np.isclose(a, b, atol=tol.atol, rtol=tol.rtol, equal_nan=True)
        if not ok.all():
            bad = np.argwhere(~ok)
            idx = tuple(int(i) for i in bad[0])
            with np.errstate(invalid="ignore"):  # inf - inf
                err = np.abs(a - b)
            worst = np.fmax.reduce(np.where(ok, 0.0, err), axis=None)  # NaN only if every error is NaN
            raise AssertionError(
                f"{len(bad)} of {a.size} elements differ beyond {tol}; first at {list(idx)}: "
                f"{a[idx]!r} vs {b[idx]!r} (max abs error {worst:g})"
            )

    def assert_eq(self, other: TensorData | Any, strict_dtype: bool = False) -> None:
        """Assert exact equality of shape and values (and dtype if ``strict_dtype``)."""
        if not isinstance(other, TensorData):
            other = TensorData(other)
        if strict_dtype and other.dtype is not self.dtype:
            raise AssertionError(f"dtypes differ: {self.dtype} vs {other.dtype}")
        a, b = self.to_numpy(), other.to_numpy()
        if a.shape != b.shape:
            raise AssertionError(f"shapes differ: {list(a.shape)} vs {list(b.shape)}")
        if not np.array_equal(a, b, equal_nan=a.dtype.kind == "f" and b.dtype.kind == "f"):
            bad = np.argwhere(a != b)
            idx = tuple(int(i) for i in bad[0]) if len(bad) else ()
            raise AssertionError(
                f"{len(bad)} of {a.size} elements differ; first at {list(idx)}: {a[idx]!r} vs {b[idx]!r}"
            )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TensorData):
            return NotImplemented
        return (
            self._dtype is other._dtype
            and self._array.shape == other._array.shape
            and bool(np.array_equal(self._array, other._array))
        )

    __hash__ = None  # type: ignore[assignment]

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        arr = self.to_numpy()
        return arr if dtype is None else arr.astype(dtype)

    def __repr__(self) -> str:
        return f"TensorData(shape={list(self.shape)}, dtype={self._dtype}, values={self.to_numpy().tolist()!r})"


def _from_python(value: Any) -> np.ndarray:
    if isinstance(value, (bool, int, float, np.generic)):
        return np.asarray(value)
    try:
        arr = np.asarray(value)
    except ValueError as exc:
        raise ShapeError(
            f"TensorData: nested sequences have inconsistent lengths ({exc}); every row must have "
            "the same length."
        ) from None
    if arr.dtype == object:
        raise ShapeError(
            "TensorData: nested sequences have inconsistent lengths or hold non-numbers; expected a "
            "rectangular nesting of numbers or bools."
        )
    return arr


def _infer(arr: np.ndarray) -> DType:
    k = arr.dtype.kind
    if k == "b":
        return DType.BOOL
    if k in "iu":
        return DType.INT64
    if k == "f":
        return DType.FLOAT32 if arr.dtype.itemsize <= 8 else DType.FLOAT64
    if arr.size == 0:
        return DType.FLOAT32
    raise DTypeError(
        f"TensorData: elements of numpy kind {arr.dtype} are not numbers or bools; expected floats, "
        "integers or bools."
    )


def _store(arr: np.ndarray, dtype: DType) -> np.ndarray:
    if dtype is DType.BFLOAT16:
        return f32_to_bf16(arr)
    try:
        with np.errstate(over="ignore"):  # out-of-range floats become inf, as IEEE rounding says
            return np.asarray(arr, dtype=dtype.to_numpy(), order="C")
    except (TypeError, ValueError) as exc:  # pragma: no cover - numpy message kept
        raise EmberError(f"TensorData: cannot store values as {dtype}: {exc}") from None
