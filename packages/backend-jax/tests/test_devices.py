"""Devices come from ``jax.devices()``; tensors live on (and ops keep them on) their device."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import ember
from _subproc import run
from ember import BackendError, Tensor


def test_devices_are_jax_devices_default_first():
    B = ember.backend("jax")
    devs = B.devices()
    assert [d.name for d in devs][0] == f"{jax.devices()[0].platform}:{jax.devices()[0].id}"
    assert devs[0].handle is jax.devices()[0]
    assert B.device() is devs[0]
    # the platform name alone means the first device of that platform
    assert B.device("cpu") is B.device("cpu:0")


def test_unknown_device_names_the_available_ones():
    B = ember.backend("jax")
    with pytest.raises(BackendError, match=r"'tpu:7'.*available: cpu:0"):
        B.device("tpu:7")


def test_tensors_live_on_their_device_handle():
    dev = ember.backend("jax").device()
    t = Tensor.from_data([[1.0, 2.0], [3.0, 4.0]], dev)
    assert isinstance(t.primitive, jax.Array)
    assert t.primitive.device == dev.handle
    assert (t @ t).primitive.device == dev.handle


def test_two_cpu_devices_placement_and_moves():
    out = run(
        """
        import ember, numpy as np
        from ember import Tensor, Distribution
        B = ember.backend("jax")
        d0, d1 = B.device("cpu:0"), B.device("cpu:1")
        print([d.name for d in B.devices()])
        a = Tensor.from_data([1.0, 2.0, 3.0], d1)
        b = (a * 2.0 + Tensor.ones([3], d1)).sum()
        z = Tensor.zeros([2], d1)
        r = Tensor.random([2], Distribution.default(), d1)
        print(a.primitive.device, b.primitive.device, z.primitive.device, r.primitive.device)
        m = a.to_device(d0)
        print(m.device.name, m.primitive.device, m.to_data().to_numpy().tolist())
        try:
            a + m
        except ember.DeviceError:
            print("mixing raises")
        """,
        XLA_FLAGS="--xla_force_host_platform_device_count=2",
    )
    lines = out.splitlines()
    assert lines[0] == "['cpu:0', 'cpu:1']"
    assert lines[1] == "cpu:1 cpu:1 cpu:1 cpu:1"
    assert lines[2] == "cpu:0 cpu:0 [1.0, 2.0, 3.0]"
    assert lines[3] == "mixing raises"


def test_to_device_across_backends_keeps_values():
    src = Tensor.from_data(np.arange(6, dtype=np.float32).reshape(2, 3), ember.backend("numpy").device())
    dst = src.to_device(ember.backend("jax").device())
    assert dst.device.backend.name == "jax"
    np.testing.assert_array_equal(dst.to_data().to_numpy(), np.arange(6, dtype=np.float32).reshape(2, 3))
    back = dst.to_device(ember.backend("numpy").device())
    np.testing.assert_array_equal(back.to_data().to_numpy(), src.to_data().to_numpy())


def test_dlpack_from_numpy_and_torch():
    B = ember.backend("jax")
    assert B.supports_dlpack
    a = np.arange(4, dtype=np.float32)
    np.testing.assert_array_equal(np.asarray(B.from_dlpack(a)), a)
    torch = pytest.importorskip("torch")
    t = torch.arange(5, dtype=torch.int32)
    p = B.from_dlpack(t)
    assert p.dtype == np.int32
    np.testing.assert_array_equal(np.asarray(p), np.arange(5))
