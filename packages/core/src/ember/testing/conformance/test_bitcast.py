"""``Tensor.bitcast``: the bits of one element type read as another of the same size (ONNX ``BitCast``,
XLA ``bitcast_convert_type``).

References are IEEE-754 bit patterns written by hand (1.0f is ``0x3F800000``) and numpy's ``view`` of
little-endian arrays; a backend that cannot hold a type skips it.
"""

from __future__ import annotations

import numpy as np
import pytest

from ember import Bool, DType, DTypeError, Float, Int, Tensor
from ember.autodiff import Autodiff

pytestmark = pytest.mark.filterwarnings("error")

#: (float value, its IEEE-754 bits as a signed int of the same size)
F32_BITS = [(1.0, 0x3F800000), (-2.0, -0x40000000), (0.0, 0), (-0.0, -(2**31)), (float("inf"), 0x7F800000)]
F64_BITS = [(1.0, 0x3FF0000000000000), (-2.0, -0x4000000000000000), (0.5, 0x3FE0000000000000)]
F16_BITS = [(1.0, 0x3C00), (-2.0, -0x4000), (65504.0, 0x7BFF)]
BF16_BITS = [(1.0, 0x3F80), (-2.0, -0x4000), (0.5, 0x3F00)]


def _need(device, *dtypes: DType) -> None:
    for d in dtypes:
        if d not in device.backend.supported_dtypes:
            pytest.skip(f"{device.backend.name} cannot hold {d.value}")


def _t(values, dt: DType, device) -> Tensor:
    return Tensor.from_data(np.array(values, dtype=dt.to_numpy()), device, dtype=dt)


def _floats(values, dt: DType, device) -> Tensor:
    """A Float tensor of ``dt`` cast by the backend from float32 (every value in the tables is exact in both)."""
    return Tensor.from_data(np.array(values, dtype=np.float32), device, dtype=DType.FLOAT32).cast(dt)


CASES = [
    (DType.FLOAT32, DType.INT32, F32_BITS),
    (DType.FLOAT64, DType.INT64, F64_BITS),
    (DType.FLOAT16, DType.INT16, F16_BITS),
    (DType.BFLOAT16, DType.INT16, BF16_BITS),
]


@pytest.mark.parametrize("fdt,idt,table", CASES, ids=[c[0].value for c in CASES])
def test_float_bits_read_as_int_and_back(device, fdt, idt, table):
    _need(device, fdt, idt)
    values = [v for v, _ in table]
    bits = [b for _, b in table]
    x = _floats(values, fdt, device)
    as_int = x.bitcast(idt)
    assert as_int.kind is Int and as_int.dtype is idt and as_int.shape == x.shape
    assert [int(v) for v in as_int.to_numpy().tolist()] == bits
    back = _t(bits, idt, device).bitcast(fdt)
    assert back.kind is Float and back.dtype is fdt
    got = back.cast(DType.FLOAT32).to_numpy().astype(np.float64)
    np.testing.assert_array_equal(got, np.array(values))
    assert np.signbit(got).tolist() == np.signbit(np.array(values)).tolist()


def test_nan_bits_survive_a_round_trip(device):
    quiet_nan_with_payload = 0x7FC00001
    x = _t([quiet_nan_with_payload, 0x7F800000], DType.INT32, device).bitcast(DType.FLOAT32)
    assert np.isnan(x.to_numpy()[0]) and np.isinf(x.to_numpy()[1])
    assert x.bitcast(DType.INT32).to_numpy().tolist() == [quiet_nan_with_payload, 0x7F800000]


SAME_SIZE_INTS = [
    (DType.INT8, DType.UINT8),
    (DType.INT16, DType.UINT16),
    (DType.INT32, DType.UINT32),
    (DType.INT64, DType.UINT64),
]


@pytest.mark.parametrize("sdt,udt", SAME_SIZE_INTS, ids=[a.value for a, _ in SAME_SIZE_INTS])
def test_signed_and_unsigned_share_twos_complement_bits(device, sdt, udt):
    _need(device, sdt, udt)
    n = 8 * sdt.itemsize
    signed = [-1, -(2 ** (n - 1)), 0, 1, 2 ** (n - 1) - 1]
    unsigned = [v % 2**n for v in signed]
    u = _t(signed, sdt, device).bitcast(udt)
    assert u.dtype is udt and [int(v) for v in u.to_numpy().tolist()] == unsigned
    s = _t(unsigned, udt, device).bitcast(sdt)
    assert s.dtype is sdt and [int(v) for v in s.to_numpy().tolist()] == signed


def test_bool_is_one_byte_of_zero_or_one(device):
    b = Tensor.from_data(np.array([[True, False], [False, True]]), device)
    u = b.bitcast(DType.UINT8)
    assert u.dtype is DType.UINT8 and u.to_numpy().tolist() == [[1, 0], [0, 1]]
    back = _t([0, 1, 7, 255], DType.UINT8, device).bitcast(DType.BOOL)
    assert back.kind is Bool and back.to_numpy().tolist() == [False, True, True, True]
    assert _t([-1, 0], DType.INT8, device).bitcast("bool").to_numpy().tolist() == [True, False]


def test_layout_views_keep_their_element_order(device):
    """A transposed (non-contiguous) tensor reinterprets element by element, not as raw memory."""
    a = np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5
    x = Tensor.from_data(a, device, dtype=DType.FLOAT32).transpose()
    assert x.bitcast(DType.INT32).to_numpy().tolist() == a.T.copy().view(np.int32).tolist()
    s = Tensor.from_data(np.float32(-0.75), device, dtype=DType.FLOAT32).bitcast(DType.INT32)
    assert s.shape == () and int(s.into_scalar()) == int(np.float32(-0.75).view(np.int32))


def test_same_type_is_the_tensor_itself(device):
    x = _t([1, 2], DType.INT32, device)
    assert x.bitcast(DType.INT32) is x


@pytest.mark.parametrize("src,dst", [(DType.FLOAT32, DType.INT64), (DType.INT8, DType.INT16),
                                     (DType.BOOL, DType.INT32)], ids=["f32-i64", "i8-i16", "bool-i32"])
def test_a_different_item_size_is_refused_with_the_sizes(device, src, dst):
    x = Tensor.from_data(np.zeros(3, dtype=src.to_numpy()), device, dtype=src)
    with pytest.raises(DTypeError, match=rf"{src.value} has {src.itemsize} bytes.*{dst.value} has {dst.itemsize}"):
        x.bitcast(dst)


def test_under_autodiff_the_result_carries_no_gradient(device):
    d = Autodiff(device.backend).device(device.name) if not device.backend.is_autodiff else device
    w = Tensor.from_data(np.array([1.0, -2.0], dtype=np.float32), d, dtype=DType.FLOAT32).require_grad()
    bits = w.bitcast(DType.INT32)
    assert bits.to_numpy().tolist() == [0x3F800000, -0x40000000]
    f = bits.bitcast(DType.FLOAT32)
    assert not f.is_require_grad()
    loss = (w * f).sum()
    grads = loss.backward()
    np.testing.assert_array_equal(w.grad(grads).to_numpy(), [1.0, -2.0])
