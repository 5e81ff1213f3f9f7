"""Narrow integer element types (Burn's ``i8 i16 u8 u16 u32 u64``) held by Int tensors next to the
backend's default int type: creation keeps the type, element-wise arithmetic wraps modulo ``2**bits``
like C and numpy, comparisons give Bool, casts convert exactly, indexing and layout ops keep the type.

References are Python ints reduced modulo ``2**bits``; a backend that cannot hold a type skips it
(torch: uint16/32/64 are storage-only types in PyTorch).
"""

from __future__ import annotations

import numpy as np
import pytest

from ember import Bool, DType, DTypeError, Int, Tensor

pytestmark = pytest.mark.filterwarnings("error")

SMALL = [DType.INT8, DType.INT16, DType.UINT8, DType.UINT16, DType.UINT32, DType.UINT64]


def _bits(dt: DType) -> int:
    return 8 * dt.itemsize


def _range(dt: DType) -> tuple[int, int]:
    n = _bits(dt)
    return (0, 2**n - 1) if dt.kind == "uint" else (-(2 ** (n - 1)), 2 ** (n - 1) - 1)


def _wrap(v: int, dt: DType) -> int:
    lo, _ = _range(dt)
    return (v - lo) % 2 ** _bits(dt) + lo


@pytest.fixture(params=SMALL, ids=lambda d: d.value)
def dt(request, device):
    if request.param not in device.backend.supported_dtypes:
        pytest.skip(f"{device.backend.name} cannot hold {request.param.value}")
    return request.param


def _t(values, dt, device):
    return Tensor.from_data(np.array(values, dtype=dt.to_numpy()), device, dtype=dt)


def _values(dt):
    lo, hi = _range(dt)
    return [lo, lo + 1, 0, 1, 7, hi - 1, hi]


def test_creation_keeps_the_type_and_the_extreme_values(dt, device):
    x = _t(_values(dt), dt, device)
    assert x.kind is Int and x.dtype is dt
    data = x.into_data()
    assert data.dtype is dt
    assert [int(v) for v in data.to_numpy().tolist()] == _values(dt)


@pytest.mark.parametrize("op", ["add", "sub", "mul"])
def test_arithmetic_keeps_the_type_and_wraps(dt, device, op):
    lo, hi = _range(dt)
    a = [hi, lo, 3, 100 % (hi + 1), 0]
    b = [1, 1, 5, 3, 0]
    if dt.kind == "uint":
        b[1] = 2  # 0 - 2 wraps to hi - 1
    fn = {"add": lambda x, y: x + y, "sub": lambda x, y: x - y, "mul": lambda x, y: x * y}[op]
    out = getattr(_t(a, dt, device), op)(_t(b, dt, device))
    assert out.dtype is dt
    assert [int(v) for v in out.to_numpy().tolist()] == [_wrap(fn(x, y), dt) for x, y in zip(a, b, strict=True)]


def test_division_and_remainder_of_unsigned_and_signed(dt, device):
    _, hi = _range(dt)
    a = [hi, 17, 6, 0]
    b = [2, 5, 3, 7]
    x, y = _t(a, dt, device), _t(b, dt, device)
    q, r = x.div(y), x.remainder(y)
    assert q.dtype is dt and r.dtype is dt
    assert [int(v) for v in q.to_numpy().tolist()] == [u // v for u, v in zip(a, b, strict=True)]
    assert [int(v) for v in r.to_numpy().tolist()] == [u % v for u, v in zip(a, b, strict=True)]


def test_comparisons_and_order(dt, device):
    vals = _values(dt)
    x = _t(vals, dt, device)
    y = _t(list(reversed(vals)), dt, device)
    lower = x.lower(y)
    assert lower.kind is Bool
    assert lower.to_numpy().tolist() == [u < v for u, v in zip(vals, reversed(vals), strict=True)]
    assert int(x.max().into_scalar()) == max(vals) and int(x.min().into_scalar()) == min(vals)
    assert x.argmax(0).to_numpy().tolist() == [vals.index(max(vals))]
    srt = x.sort(0)
    assert srt.dtype is dt and [int(v) for v in srt.to_numpy().tolist()] == sorted(vals)


def test_casts_convert_exactly(dt, device):
    lo, hi = _range(dt)
    small = [0, 1, 100, min(hi, 1000)]
    x = _t(small, dt, device)
    assert x.float().to_numpy().tolist() == [float(v) for v in small]
    assert x.cast(DType.INT32).dtype is DType.INT32
    back = Tensor.from_data(np.array(small, dtype=np.int64), device).cast(dt)
    assert back.dtype is dt and [int(v) for v in back.to_numpy().tolist()] == small
    f = Tensor.from_data(np.array([0.0, 3.75, 100.0]), device).int().cast(dt)
    assert f.dtype is dt and [int(v) for v in f.to_numpy().tolist()] == [0, 3, 100]


def test_layout_and_indexing_keep_the_type(dt, device):
    vals = _values(dt)
    x = _t([vals, list(reversed(vals))], dt, device)
    idx = Tensor.from_data(np.array([[6, 0], [1, 5]]), device)
    picked = x.gather(1, idx)
    want = [[vals[6], vals[0]], [vals[5], vals[1]]]
    assert picked.dtype is dt and [[int(v) for v in r] for r in picked.to_numpy().tolist()] == want
    both = Tensor.cat([x, x], 0).reshape([4, 7]).transpose()
    assert both.dtype is dt and both.shape == (7, 4)
    assert [int(v) for v in both.to_numpy()[:, 0].tolist()] == vals
    mask = Tensor.from_data(np.array([[True] * 7, [False] * 7]), device)
    filled = x.mask_fill(mask, 1)
    assert filled.dtype is dt and [int(v) for v in filled.to_numpy()[0].tolist()] == [1] * 7


def test_unsupported_type_is_a_clear_error(device):
    missing = [d for d in SMALL if d not in device.backend.supported_dtypes]
    if not missing:
        pytest.skip(f"{device.backend.name} holds every narrow int type")
    with pytest.raises(DTypeError, match=missing[0].value):
        Tensor.from_data(np.zeros(2, dtype=missing[0].to_numpy()), device, dtype=missing[0])
