"""``DType``: parsing of names, Burn's short names and numpy dtypes; sizes and kinds."""

from __future__ import annotations

import numpy as np
import pytest

from ember import DType, DTypeError, EmberError

# (DType, numpy name, Burn's short name, kind) written out by hand, not read from the implementation
TABLE = [
    (DType.FLOAT64, "float64", "f64", "float"),
    (DType.FLOAT32, "float32", "f32", "float"),
    (DType.FLOAT16, "float16", "f16", "float"),
    (DType.BFLOAT16, "bfloat16", "bf16", "float"),
    (DType.INT64, "int64", "i64", "int"),
    (DType.INT32, "int32", "i32", "int"),
    (DType.INT16, "int16", "i16", "int"),
    (DType.INT8, "int8", "i8", "int"),
    (DType.UINT8, "uint8", "u8", "uint"),
    (DType.UINT16, "uint16", "u16", "uint"),
    (DType.UINT32, "uint32", "u32", "uint"),
    (DType.UINT64, "uint64", "u64", "uint"),
    (DType.BOOL, "bool", "bool", "bool"),
]


@pytest.mark.parametrize(("dtype", "name", "short", "kind"), TABLE, ids=[t[1] for t in TABLE])
def test_parse_names_and_properties(dtype: DType, name: str, short: str, kind: str) -> None:
    assert DType.parse(name) is dtype
    assert DType.parse(name.upper()) is dtype
    assert DType.parse(short) is dtype
    assert DType.parse(dtype) is dtype
    assert str(dtype) == name and dtype.short == short and dtype.kind == kind
    assert dtype.is_float == (kind == "float")
    assert dtype.is_int == (kind in ("int", "uint"))
    assert repr(dtype) == f"DType.{name.upper()}"


@pytest.mark.parametrize(
    ("dtype", "itemsize"),
    [(DType.FLOAT64, 8), (DType.FLOAT32, 4), (DType.FLOAT16, 2), (DType.BFLOAT16, 2), (DType.INT64, 8),
     (DType.INT32, 4), (DType.INT16, 2), (DType.INT8, 1), (DType.UINT8, 1), (DType.UINT16, 2),
     (DType.UINT32, 4), (DType.UINT64, 8), (DType.BOOL, 1)],
)
def test_itemsize(dtype: DType, itemsize: int) -> None:
    assert dtype.itemsize == itemsize


@pytest.mark.parametrize("name", ["float64", "float32", "float16", "int64", "int32", "int16", "int8", "uint8", "uint16",
                                  "uint32", "uint64", "bool"])
def test_numpy_round_trip(name: str) -> None:
    nd = np.dtype(name)
    assert DType.parse(nd) is DType.parse(name)
    assert DType.parse(nd.type) is DType.parse(name)  # np.float32, the scalar type
    assert DType.from_numpy(nd).to_numpy() == nd


def test_bfloat16_is_stored_as_uint16_bits_but_uint16_is_not_bfloat16() -> None:
    assert DType.BFLOAT16.to_numpy() == np.dtype(np.uint16)
    assert DType.parse(np.uint16) is DType.UINT16   # a uint16 array holds integers, not bfloat16 bits
    assert DType.from_numpy(np.uint16) is DType.UINT16


@pytest.mark.parametrize("bad", ["float128", "", "complex64", np.complex64, np.dtype("U3"), object(), None, 32])
def test_parse_rejects_unknown_types_listing_the_valid_ones(bad: object) -> None:
    with pytest.raises(DTypeError) as exc:
        DType.parse(bad)
    msg = str(exc.value)
    assert "float32" in msg and "int64" in msg and "bool" in msg
    assert isinstance(exc.value, EmberError) and isinstance(exc.value, TypeError)


def test_numpy_dtype_strings_are_accepted() -> None:
    assert DType.parse("f8") is DType.FLOAT64  # numpy's spelling, not Burn's
    assert DType.parse(np.dtype("<i4")) is DType.INT32


def test_from_numpy_complex_tells_what_to_do() -> None:
    with pytest.raises(DTypeError, match=r"complex64.*astype"):
        DType.from_numpy(np.complex64)
