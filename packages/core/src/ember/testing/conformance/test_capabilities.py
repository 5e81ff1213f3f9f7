"""``Backend.capabilities`` says what the backend does: each flag is checked against the behaviour it promises.

``compiles_steps``: ``compile(step)`` returns another callable (a compiled one) exactly when it is set, and the result
computes what the step computes. ``spmd_devices`` / ``spmd_processes``: ``device_mesh`` / ``process_mesh`` give a
:class:`~ember.backend.DeviceMesh` exactly when set (else a ``BackendError`` naming the capability), whose
``replicate`` / ``shard`` / ``local`` keep the values (one device, one process here). ``collectives``, ``dlpack``,
``native_autodiff`` and ``dtypes`` mirror the backend's older flags, and ``Autodiff(B)`` answers as ``B``.
``donates_args``: ``compile(step, donate_argnums=(0,), copy_donated=True)`` leaves the caller's argument readable and
unchanged, and takes its own result back.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

from ember import BackendError, Tensor
from ember.autodiff import Autodiff
from ember.backend import BackendCapabilities, DeviceMesh


def test_capabilities_mirror_the_flags(B: Any) -> None:  # noqa: N803
    caps = B.capabilities
    assert isinstance(caps, BackendCapabilities)
    assert (caps.compiles_steps, caps.donates_args, caps.spmd_devices, caps.spmd_processes) == (
        B.compiles_steps, B.donates_args, B.spmd_devices, B.spmd_processes)
    assert caps.collectives == B.supports_collectives
    assert caps.dlpack == B.supports_dlpack
    assert caps.native_autodiff == B.supports_native_autodiff
    assert caps.dtypes == frozenset(B.supported_dtypes) and caps.dtypes
    assert not caps.spmd_devices or caps.compiles_steps, "one program over several devices needs compiled steps"
    assert not caps.donates_args or caps.compiles_steps, "donating arguments needs compiled steps"
    with pytest.raises(dataclasses.FrozenInstanceError):
        caps.compiles_steps = not caps.compiles_steps  # type: ignore[misc]
    assert Autodiff(B).capabilities == caps


def test_compiles_steps_says_whether_compile_compiles(B: Any, device: Any) -> None:  # noqa: N803
    def step(x: Tensor) -> Tensor:
        return (x * 2.0 + 1.0).sum()

    compiled = B.compile(step)
    assert (compiled is not step) == B.capabilities.compiles_steps
    x = Tensor.from_data(np.asarray([1.0, 2.0, 3.5]), device)
    np.testing.assert_allclose(compiled(x).to_numpy().reshape(-1), [2 * 6.5 + 3], rtol=1e-6)


def test_donates_args_gives_the_program_a_copy_of_the_callers_argument(B: Any, device: Any) -> None:  # noqa: N803
    if not B.capabilities.donates_args:
        pytest.skip("the backend does not donate arguments (capabilities.donates_args is false)")

    def step(x: Tensor) -> Tensor:
        return x * 2.0 + 1.0

    compiled = B.compile(step, donate_argnums=(0,), copy_donated=True)
    x = Tensor.from_data(np.asarray([1.0, 2.0, 3.5]), device)
    y = compiled(x)
    z = compiled(y)  # the step's own result: donated as it is
    np.testing.assert_allclose(x.to_numpy(), [1.0, 2.0, 3.5])  # the caller's: readable and unchanged
    np.testing.assert_allclose(z.to_numpy(), [7.0, 11.0, 17.0], rtol=1e-6)


def _check_mesh(mesh: Any, device: Any) -> None:
    assert isinstance(mesh, DeviceMesh)
    assert mesh.local_parts == 1 and not mesh.multi_process  # one device of one process
    data = np.arange(6.0).reshape(3, 2)
    t = Tensor.from_data(data, device)
    np.testing.assert_array_equal(mesh.shard(t).to_numpy(), data)
    np.testing.assert_array_equal(mesh.replicate(t).to_numpy(), data)
    got = mesh.local({"t": t, "n": 3})
    assert got["n"] == 3
    np.testing.assert_array_equal(got["t"].to_numpy(), data)
    mesh.release()


def test_a_mesh_exactly_where_the_capability_says(B: Any, device: Any) -> None:  # noqa: N803
    caps = B.capabilities
    if caps.spmd_devices:
        _check_mesh(B.device_mesh([device]), device)
    else:
        with pytest.raises(BackendError, match="spmd_devices"):
            B.device_mesh([device])
    if caps.spmd_processes:
        _check_mesh(B.process_mesh(device), device)
    else:
        with pytest.raises(BackendError, match="spmd_processes"):
            B.process_mesh(device)
