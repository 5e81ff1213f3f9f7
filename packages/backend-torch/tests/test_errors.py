"""Mistakes get Ember's errors (naming the op and what to do), never raw torch tracebacks."""

from __future__ import annotations

import pytest
import torch

import ember
from ember import DeviceError, DTypeError, EmberError, Tensor


def test_mixing_torch_and_numpy_tensors_is_a_device_error():
    pytest.importorskip("ember_numpy")
    a = Tensor.from_data([1.0, 2.0], ember.backend("torch").device())
    b = Tensor.from_data([1.0, 2.0], ember.backend("numpy").device())
    with pytest.raises(DeviceError, match="different backends.*to_device"):
        a + b
    with pytest.raises(DeviceError):
        a.matmul(b.reshape([2, 1]))


def test_mixing_float_settings_is_a_device_error():
    # float32 and float64 torch backends are distinct backends: no silent promotion
    a = Tensor.from_data([1.0, 2.0], ember.backend("torch").device())
    b = Tensor.from_data([1.0, 2.0], ember.backend("torch", float_dtype="float64").device())
    with pytest.raises(DeviceError, match="to_device"):
        a * b
    assert (a * b.to_device(a.device)).dtype is a.dtype


def test_out_of_range_index_values_are_ember_index_errors():
    dev = ember.backend("torch").device()
    x = Tensor.from_data([[1.0, 2.0], [3.0, 4.0]], dev)
    with pytest.raises(ember.IndexError):
        x.gather(1, Tensor.from_data([[0, 2], [1, 0]], dev))
    with pytest.raises(ember.IndexError):
        x.select(0, Tensor.from_data([5], dev))


def test_primitive_of_unsupported_dtype_is_a_dtype_error():
    dev = ember.backend("torch").device()
    t = Tensor.from_primitive(torch.ones(2, dtype=torch.complex64), dev)
    with pytest.raises(DTypeError, match="complex64 have no Ember element type"):
        _ = t.dtype


def test_torch_failures_inside_an_op_become_ember_errors():
    # torch rejects ordering complex numbers: the failure surfaces as an EmberError naming the
    # element type, not as a bare RuntimeError
    dev = ember.backend("torch").device()
    t = Tensor.from_primitive(torch.ones(2, 2, dtype=torch.complex64), dev)
    with pytest.raises(EmberError, match="complex64"):
        t.greater(Tensor.from_primitive(torch.ones(2, 2, dtype=torch.complex64), dev))
