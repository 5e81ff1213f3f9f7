"""``TensorData``: construction, dtype inference, bytes round trip, conversions and assertions.

Expected values are written by hand, packed with :mod:`struct`, or computed by PyTorch
(bfloat16 rounding) when it is installed.
"""

from __future__ import annotations

import struct

import numpy as np
import pytest

from ember import DType, DTypeError, ShapeError, TensorData, Tolerance

ALL_DTYPES = list(DType)


# ---------------------------------------------------------------- construction and inference
@pytest.mark.parametrize(
    ("value", "shape", "dtype"),
    [
        ([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], (2, 3), DType.FLOAT32),
        ([1, 2, 3], (3,), DType.INT64),
        ([[True], [False]], (2, 1), DType.BOOL),
        (2.5, (), DType.FLOAT32),
        (7, (), DType.INT64),
        (True, (), DType.BOOL),
        ([], (0,), DType.FLOAT32),
        ([[], []], (2, 0), DType.FLOAT32),
        ([1, 2.5], (2,), DType.FLOAT32),  # mixed ints and floats are floats
    ],
)
def test_python_values_infer_shape_and_dtype(value: object, shape: tuple[int, ...], dtype: DType) -> None:
    d = TensorData(value)
    assert d.shape == shape and d.dtype is dtype
    assert d.num_elements == int(np.prod(shape))
    assert d.to_list() == value


@pytest.mark.parametrize("name", ["float64", "float32", "float16", "int32", "int8", "uint8", "bool"])
def test_numpy_arrays_keep_their_dtype(name: str) -> None:
    arr = np.arange(6).reshape(2, 3).astype(name)
    d = TensorData(arr)
    assert d.dtype is DType.parse(name) and d.shape == (2, 3)
    np.testing.assert_array_equal(d.to_numpy(), arr)


def test_explicit_dtype_converts() -> None:
    d = TensorData([1, 2, 3], dtype="float64")
    assert d.dtype is DType.FLOAT64 and d.to_numpy().dtype == np.float64
    assert TensorData([1.5, -2.5], "bf16").to_list() == [1.5, -2.5]


def test_non_contiguous_input_is_stored_c_contiguous() -> None:
    arr = np.arange(12, dtype=np.float32).reshape(3, 4).T
    d = TensorData(arr)
    assert d.to_numpy().flags.c_contiguous
    assert d.to_list() == arr.tolist()
    assert d.bytes == struct.pack("<12f", *arr.ravel(order="C"))


def test_from_tensordata_is_the_same_values() -> None:
    a = TensorData([[1.0, 2.0]])
    assert TensorData(a) == a
    b = TensorData(a, "float64")
    assert b.dtype is DType.FLOAT64 and b.to_list() == [[1.0, 2.0]]


def test_ragged_lists_raise_shape_error() -> None:
    with pytest.raises(ShapeError, match="length"):
        TensorData([[1.0, 2.0], [3.0]])


def test_strings_raise_dtype_error() -> None:
    with pytest.raises(DTypeError, match="numbers or bools"):
        TensorData(["a", "b"])


def test_unknown_dtype_raises_dtype_error() -> None:
    with pytest.raises(DTypeError, match="float128"):
        TensorData([1.0], "float128")


# ---------------------------------------------------------------- bytes
@pytest.mark.parametrize(
    ("value", "dtype", "expected"),
    [
        ([1.5, -2.0], "float32", struct.pack("<2f", 1.5, -2.0)),
        ([1.5, -2.0], "float64", struct.pack("<2d", 1.5, -2.0)),
        ([1.5, -2.0], "float16", struct.pack("<2e", 1.5, -2.0)),
        ([1.0, -2.0], "bfloat16", bytes([0x80, 0x3F, 0x00, 0xC0])),  # bf16 bits 0x3F80, 0xC000
        ([1, -2], "int64", struct.pack("<2q", 1, -2)),
        ([1, -2], "int32", struct.pack("<2i", 1, -2)),
        ([1, -2], "int16", struct.pack("<2h", 1, -2)),
        ([1, -2], "int8", struct.pack("<2b", 1, -2)),
        ([1, 255], "uint8", bytes([1, 255])),
        ([True, False], "bool", bytes([1, 0])),
    ],
)
def test_bytes_are_little_endian_c_order(value: list[object], dtype: str, expected: bytes) -> None:
    d = TensorData(value, dtype)
    assert d.bytes == expected
    back = TensorData.from_bytes(expected, [2], dtype)
    assert back.dtype is DType.parse(dtype)
    back.assert_eq(d, strict_dtype=True)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(2, 3), (), (0, 4), (1, 1, 5)], ids=str)
def test_bytes_round_trip(dtype: DType, shape: tuple[int, ...]) -> None:
    rng = np.random.default_rng(0)
    values = rng.integers(-100, 100, size=shape) if dtype.kind != "bool" else rng.random(shape) < 0.5
    if dtype is DType.UINT8:
        values = np.abs(values)
    d = TensorData(np.asarray(values), dtype)
    back = TensorData.from_bytes(d.bytes, shape, dtype)
    assert back == d and back.shape == shape
    assert len(d.bytes) == int(np.prod(shape)) * dtype.itemsize


def test_bytes_of_a_big_endian_array_are_little_endian() -> None:
    d = TensorData.from_bits(np.array([1, 2, 3], dtype=">i4"), DType.INT32)
    assert d.bytes == struct.pack("<3i", 1, 2, 3)
    assert TensorData.from_bytes(d.bytes, [3], "int32").to_list() == [1, 2, 3]


@pytest.mark.parametrize(("n_bytes", "shape"), [(7, [2]), (9, [2]), (0, [1]), (4, [])])
def test_from_bytes_wrong_length_is_a_shape_error_with_counts(n_bytes: int, shape: list[int]) -> None:
    expected = int(np.prod(shape)) * 8
    with pytest.raises(ShapeError) as exc:
        TensorData.from_bytes(b"\0" * n_bytes, shape, "float64")
    msg = str(exc.value)
    assert f"{n_bytes} bytes" in msg and f"expected {expected} bytes" in msg and "float64" in msg


def test_from_bytes_unknown_dtype_is_a_dtype_error() -> None:
    with pytest.raises(DTypeError):
        TensorData.from_bytes(b"\0" * 4, [1], "float24")


# ---------------------------------------------------------------- to_numpy / convert
def test_to_numpy_widens_bfloat16_exactly() -> None:
    d = TensorData.from_bits(np.array([0x3F80, 0xC040, 0x7F80, 0x0001], dtype=np.uint16), DType.BFLOAT16)
    out = d.to_numpy()
    assert out.dtype == np.float32
    # 0x0001 is the smallest bf16 subnormal, 2**-133
    assert out.tolist() == [1.0, -3.0, float("inf"), 2.0**-133]


def test_convert_float_to_int_truncates_toward_zero_like_torch() -> None:
    d = TensorData([1.7, -1.7, 2.5, -0.4]).convert("int32")
    assert d.dtype is DType.INT32
    assert d.to_list() == [int(1.7), int(-1.7), int(2.5), int(-0.4)]  # [1, -1, 2, 0]


def test_convert_bool_and_int_to_float() -> None:
    assert TensorData([True, False]).convert("float32").to_list() == [1.0, 0.0]
    assert TensorData([3, -4]).convert("float64").to_list() == [3.0, -4.0]


def test_convert_float64_to_float16_rounds_to_nearest() -> None:
    # float16 has a 10-bit mantissa: near 1.0 the spacing is 2**-10
    d = TensorData(np.array([1 + 2**-12, 1 + 3 * 2**-12, 65520.0], dtype=np.float64)).convert("float16")
    assert d.to_list() == [1.0, 1 + 2**-10, float("inf")]


def test_convert_to_same_dtype_is_identity() -> None:
    d = TensorData([1.0, 2.0])
    assert d.convert("float32") is d


# bf16 keeps 7 mantissa bits: near 1.0 the spacing is 2**-7; halfway cases round to even
BF16_CASES = [
    (1.0, 0x3F80),
    (1 + 2**-7, 0x3F81),
    (1 + 2**-8, 0x3F80),  # tie, rounds down to the even 0x3F80
    (1 + 3 * 2**-8, 0x3F82),  # tie, rounds up to the even 0x3F82
    (1 + 2**-8 + 2**-20, 0x3F81),  # just above the tie
    (-2.0, 0xC000),
    (0.0, 0x0000),
    (-0.0, 0x8000),
    (float("inf"), 0x7F80),
    (float("-inf"), 0xFF80),
    (3.4028234663852886e38, 0x7F80),  # float32 max rounds up to inf
]


@pytest.mark.parametrize(("value", "bits"), BF16_CASES)
def test_bfloat16_rounding_hand_computed(value: float, bits: int) -> None:
    d = TensorData(np.array([value], dtype=np.float32)).convert("bfloat16")
    assert int(d.as_bits()[0]) == bits


def test_bfloat16_nan_stays_nan() -> None:
    d = TensorData(np.array([np.nan, 1.0], dtype=np.float32)).convert("bfloat16")
    out = d.to_numpy()
    assert np.isnan(out[0]) and out[1] == 1.0


def test_bfloat16_rounding_matches_torch() -> None:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    bits = rng.integers(0, 2**32, size=20_000, dtype=np.uint64).astype(np.uint32)
    # every float32 bit pattern class: normals, subnormals, ties (low 16 bits 0x8000), inf, near max
    bits[:1000] = (bits[:1000] & np.uint32(0xFFFF0000)) | np.uint32(0x8000)
    bits[1000:2000] &= np.uint32(0x807FFFFF)  # subnormals
    bits[2000:2010] = [0x7F7FFFFF, 0xFF7FFFFF, 0x7F800000, 0xFF800000, 0, 0x80000000, 1, 0x807FFFFF,
                       0x7F7F8000, 0x3F808000]
    x = bits.view(np.float32)
    finite = ~np.isnan(x)
    x = x[finite]
    ours = TensorData(x).convert("bfloat16").as_bits()
    theirs = torch.from_numpy(x.copy()).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
    np.testing.assert_array_equal(ours, theirs)


# ---------------------------------------------------------------- assertions
def test_assert_approx_eq_within_tolerance_passes() -> None:
    TensorData([1.0, 2.0]).assert_approx_eq(TensorData([1.0 + 5e-6, 2.0]))
    TensorData([1.0, 2.0]).assert_approx_eq([1.0, 2.1], Tolerance(atol=0.2, rtol=0.0))


def test_assert_approx_eq_failure_names_count_index_and_values() -> None:
    a = TensorData([[1.0, 2.0], [3.0, 4.0]])
    with pytest.raises(AssertionError) as exc:
        a.assert_approx_eq([[1.0, 2.0], [3.5, 4.0]])
    msg = str(exc.value)
    assert "1 of 4 elements" in msg and "[1, 0]" in msg and "3.0" in msg and "3.5" in msg


def test_assert_approx_eq_shape_mismatch() -> None:
    with pytest.raises(AssertionError, match=r"shapes differ: \[2\] vs \[1, 2\]"):
        TensorData([1.0, 2.0]).assert_approx_eq([[1.0, 2.0]])


def test_assert_approx_eq_default_tolerance_follows_dtype() -> None:
    TensorData([1.0], "float16").assert_approx_eq([1.005])  # float16: 1e-2
    with pytest.raises(AssertionError):
        TensorData([1.0], "float32").assert_approx_eq([1.005])  # float32: 1e-5 + 1e-4 * 1.005


def test_assert_approx_eq_nan_and_inf() -> None:
    nan, inf = float("nan"), float("inf")
    TensorData([nan, inf, -inf]).assert_approx_eq([nan, inf, -inf])
    with pytest.raises(AssertionError, match="1 of 1"):
        TensorData([nan]).assert_approx_eq([1.0])
    with pytest.raises(AssertionError, match="1 of 1"):
        TensorData([inf]).assert_approx_eq([-inf])


def test_assert_approx_eq_failure_next_to_infinities_raises_no_warning() -> None:
    # inf - inf is NaN: the error report must not leak numpy RuntimeWarnings (errors in tests)
    with pytest.raises(AssertionError, match="1 of 2"):
        TensorData([float("inf"), 1.0]).assert_approx_eq([float("inf"), 5.0])


def test_assert_eq_exact_and_dtype() -> None:
    TensorData([1, 2, 3]).assert_eq([1, 2, 3])
    TensorData([1, 2, 3], "int32").assert_eq(TensorData([1, 2, 3]))  # values only by default
    with pytest.raises(AssertionError, match="dtypes differ: int32 vs int64"):
        TensorData([1, 2, 3], "int32").assert_eq(TensorData([1, 2, 3]), strict_dtype=True)
    with pytest.raises(AssertionError) as exc:
        TensorData([1, 2, 3]).assert_eq([1, 2, 4])
    assert "1 of 3 elements" in str(exc.value) and "[2]" in str(exc.value)
    with pytest.raises(AssertionError, match="shapes differ"):
        TensorData([1, 2, 3]).assert_eq([[1, 2, 3]])


def test_assert_eq_nan_equals_nan() -> None:
    TensorData([float("nan"), 1.0]).assert_eq([float("nan"), 1.0])


def test_tolerance_for_dtype() -> None:
    cases = {"float64": (1e-10, 1e-10), "float32": (1e-5, 1e-4), "float16": (1e-2, 1e-2), "bfloat16": (5e-2, 5e-2)}
    for name, (atol, rtol) in cases.items():
        t = Tolerance.for_dtype(name)
        assert (t.atol, t.rtol) == (atol, rtol), name


# ---------------------------------------------------------------- misc
def test_equality_is_dtype_shape_and_values() -> None:
    assert TensorData([1.0, 2.0]) == TensorData([1.0, 2.0])
    assert TensorData([1.0, 2.0]) != TensorData([1.0, 2.0], "float64")
    assert TensorData([1.0, 2.0]) != TensorData([[1.0, 2.0]])
    assert TensorData([1.0, 2.0]) != TensorData([1.0, 3.0])


def test_array_protocol() -> None:
    d = TensorData([[1, 2]], "int32")
    arr = np.asarray(d)
    assert arr.dtype == np.int32 and arr.tolist() == [[1, 2]]
    assert np.asarray(d, dtype=np.float64).dtype == np.float64


def test_repr_names_shape_dtype_values() -> None:
    assert repr(TensorData([1, 2], "int32")) == "TensorData(shape=[2], dtype=int32, values=[1, 2])"
