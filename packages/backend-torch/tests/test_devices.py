"""Devices, registration and backend options of the torch backend."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

import ember
from ember import BackendError, DType, DTypeError
from ember_torch import TorchBackend


def _expected_names() -> list[str]:
    names = ["cpu"] + [f"cuda:{i}" for i in range(torch.cuda.device_count())]
    if torch.backends.mps.is_available():
        names.append("mps")
    return names


def test_registered_under_entry_point():
    assert isinstance(ember.backend("torch"), TorchBackend)
    rows = {r.name: r for r in ember.backends()}
    row = rows["torch"]
    assert row.status == "ok", row.error
    assert row.distribution == "ember-backend-torch"
    assert row.devices == _expected_names()
    assert "bfloat16" in row.dtypes and "float16" in row.dtypes


def test_devices_list_what_torch_offers():
    B = ember.backend("torch")
    assert [d.name for d in B.devices()] == _expected_names()
    cpu = B.device()
    assert cpu.name == "cpu" and cpu.handle == torch.device("cpu")
    assert B.device("cpu") is cpu  # cached: one Device object per device
    assert cpu.backend is B


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_unavailable_device_is_a_backend_error():
    B = ember.backend("torch")
    with pytest.raises(BackendError, match="not available.*available: cpu"):
        B.device("cuda:0")


def test_unknown_device_name_is_a_backend_error():
    with pytest.raises(BackendError, match="not a torch device name"):
        ember.backend("torch").device("gpu-please")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"float_dtype": "int32"}, "float_dtype must be a float type"),
        ({"int_dtype": "float32"}, "int_dtype must be a signed int type"),
        ({"int_dtype": "uint8"}, "int_dtype must be a signed int type"),
        ({"float_dtype": "float8"}, "unknown element type"),
    ],
)
def test_bad_dtype_options(options, message):
    with pytest.raises(DTypeError, match=message):
        ember.backend("torch", **options)


@pytest.mark.parametrize("fd", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("idt", ["int64", "int32"])
def test_dtype_options(fd, idt):
    B = ember.backend("torch", float_dtype=fd, int_dtype=idt)
    assert B.float_dtype is DType(fd) and B.int_dtype is DType(idt)
    # every option set is its own cached instance
    assert ember.backend("torch", float_dtype=fd, int_dtype=idt) is B


def test_import_ember_does_not_import_torch():
    # discovering the plugin (entry point module) must not load torch; only using the backend does
    code = "import sys, ember; ember.backend('numpy'); print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_unknown_option_is_named():
    # a misspelt option is an Ember error that names it and lists the accepted ones
    with pytest.raises(ember.BackendError, match="no option 'float_dtyp'.*float_dtype, int_dtype"):
        ember.backend("torch", float_dtyp="float64")
