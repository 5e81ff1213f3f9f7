"""Element types of the torch backend: the float setting (bfloat16 included), int32, data types."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember
from ember import Bool, DType, Float, Int, Tensor
from ember._tensor_data import bf16_to_f32

FLOATS = {"float32": torch.float32, "float64": torch.float64, "float16": torch.float16, "bfloat16": torch.bfloat16}


@pytest.mark.parametrize("fd", list(FLOATS))
def test_float_setting_is_the_primitive_dtype(fd):
    dev = ember.backend("torch", float_dtype=fd).device()
    t = Tensor.from_data([[1.5, -2.0], [0.25, 8.0]], dev)
    assert t.primitive.dtype == FLOATS[fd] and t.dtype is DType(fd)
    r = ((t * 2.0 + 1.0) / 4.0).exp().sum_dim(1)
    assert r.primitive.dtype == FLOATS[fd]  # every op keeps the dtype
    expected = np.exp((np.array([[1.5, -2.0], [0.25, 8.0]]) * 2 + 1) / 4).sum(1, keepdims=True)
    np.testing.assert_allclose(r.to_numpy().astype(np.float64), expected, rtol=2e-2 if "16" in fd else 1e-6)
    assert (t.int().float()).primitive.dtype == FLOATS[fd]


def test_bfloat16_rounds_to_nearest_even_and_round_trips():
    dev = ember.backend("torch", float_dtype="bfloat16").device()
    # bfloat16 has 8 significant bits: spacing 2**-7 on [1, 2); hand-computed roundings
    values = [1.0 + 2**-8, 1.0 + 3 * 2**-8, 1.0 + 2**-9, -3.0, 0.0]
    expected = [1.0, 1.0 + 2**-6, 1.0, -3.0, 0.0]  # ties go to the even mantissa
    t = Tensor.from_data(values, dev)
    assert t.to_numpy().dtype == np.float32  # numpy has no bfloat16: widened
    assert t.to_numpy().tolist() == expected
    data = t.to_data()
    assert data.dtype is DType.BFLOAT16
    assert data.to_numpy().tolist() == expected
    assert bf16_to_f32(np.asarray(data._array)).tolist() == expected  # the stored bits
    assert Tensor.from_data(data, dev).to_numpy().tolist() == expected


def test_int32_setting_for_every_int_result():
    dev = ember.backend("torch", int_dtype="int32").device()
    x = Tensor.from_data([[3.0, 1.0, 2.0]], dev)
    for r in (Tensor.from_data([1, 2], dev), Tensor.arange(0, 4, dev), x.argmax(1), x.argsort(1),
              x.int(), x.greater(1.5).int(), Tensor.from_data([1, 2], dev).sum()):
        assert r.kind is Int and r.primitive.dtype == torch.int32, r


@pytest.mark.parametrize("dtype", ["int16", "int8", "uint8"])
def test_small_int_data_types_by_cast(dtype):
    dev = ember.backend("torch").device()
    t = Tensor.from_data([1, 100, 7], dev).cast(dtype)
    assert t.dtype is DType(dtype) and t.to_numpy().dtype == np.dtype(dtype)
    assert (t + 1).to_numpy().tolist() == [2, 101, 8]
    assert t.sum().to_numpy().tolist() == [108]  # small-int sums keep the dtype (no widening)


def test_bool_kind_and_casts():
    dev = ember.backend("torch").device()
    b = Tensor.from_data([True, False, True], dev)
    assert b.kind is Bool and b.primitive.dtype == torch.bool
    assert b.int().to_numpy().tolist() == [1, 0, 1] and b.float().kind is Float
    # floats to ints truncate toward zero
    f = Tensor.from_data([1.9, -1.9, 0.5], dev)
    assert f.int().to_numpy().tolist() == [1, -1, 0]


def test_from_data_copies_the_callers_array():
    dev = ember.backend("torch").device()
    arr = np.array([1.0, 2.0], dtype=np.float32)
    t = Tensor.from_data(arr, dev)
    arr[0] = 99.0
    assert t.to_numpy().tolist() == [1.0, 2.0]
    # read-only and negative-stride arrays are accepted without warnings
    ro = np.arange(4.0)[::-1]
    ro.flags.writeable = False
    assert Tensor.from_data(ro, dev).to_numpy().tolist() == [3.0, 2.0, 1.0, 0.0]
