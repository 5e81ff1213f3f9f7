"""Zero-copy exchange: DLPack between the numpy and torch backends, zero-copy ``to_numpy``."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import Tensor

pytest.importorskip("ember_numpy", reason="the DLPack partner here is ember-backend-numpy")


def _ptr_np(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


@pytest.fixture
def devs():
    return ember.backend("numpy").device(), ember.backend("torch").device()


def test_backend_declares_dlpack():
    assert ember.backend("torch").supports_dlpack


@pytest.mark.parametrize("data", [np.arange(12.0).reshape(3, 4), np.arange(5), np.array([True, False])],
                         ids=["float", "int", "bool"])
def test_numpy_to_torch_shares_memory(devs, data):
    npd, thd = devs
    a = Tensor.from_data(data, npd)
    b = a.to_device(thd)
    assert b.device is thd and b.kind is a.kind
    assert b.primitive.data_ptr() == _ptr_np(a.primitive)
    np.testing.assert_array_equal(b.to_numpy(), a.to_numpy())


def test_torch_to_numpy_shares_memory(devs):
    npd, thd = devs
    a = Tensor.from_data([[1.0, 2.0], [3.0, 4.0]], thd)
    b = a.to_device(npd)
    assert b.device is npd
    assert np.shares_memory(b.primitive, a.primitive.numpy())
    np.testing.assert_array_equal(b.to_numpy(), [[1.0, 2.0], [3.0, 4.0]])


def test_round_trip_of_a_strided_view(devs):
    npd, thd = devs
    a = Tensor.from_data(np.arange(6.0).reshape(2, 3), thd)
    t = a.swap_dims(0, 1)  # a view with strides (1, 3)
    back = t.to_device(npd)
    np.testing.assert_array_equal(back.to_numpy(), np.arange(6.0).reshape(2, 3).T)


def test_different_element_types_are_copied(devs):
    _, thd = devs
    n64 = ember.backend("numpy", float_dtype="float64").device()
    a = Tensor.from_data([1.5, 2.5], thd)  # float32
    b = a.to_device(n64)
    assert b.dtype.value == "float64" and b.to_numpy().tolist() == [1.5, 2.5]
    bf = Tensor.from_data([1.5, 2.5], ember.backend("torch", float_dtype="bfloat16").device())
    c = bf.to_device(ember.backend("numpy").device())  # numpy has no bfloat16: through the host
    assert c.dtype.value == "float32" and c.to_numpy().tolist() == [1.5, 2.5]


def test_to_numpy_is_zero_copy_on_cpu(devs):
    _, thd = devs
    t = Tensor.from_data([[1.0, 2.0]], thd)
    assert _ptr_np(t.to_numpy()) == t.primitive.data_ptr()


def test_from_dlpack_primitive():
    B = ember.backend("torch")
    arr = np.arange(3, dtype=np.int64)
    p = B.from_dlpack(arr)
    assert p.data_ptr() == _ptr_np(arr) and B.dtype(p).value == "int64"
