"""PyTorchFileRecorder / SafetensorsFileRecorder behaviour: the record before and after it meets a module,
precision settings, entry adapters with their container, adapter types and error messages."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from _import_models_support import device, save, torch
from ember import DType, nn
from ember.module import Module
from ember.record import HalfPrecisionSettings
from ember_import import (
    ImportedRecord,
    LoadArgs,
    ModelImportError,
    PyTorchFileRecorder,
    SafetensorsFileRecorder,
    TensorEntry,
)
from ember_import.pytorch import PyTorchFileRecorder as FromPytorchModule
from ember_import.safetensors import SafetensorsFileRecorder as FromSafetensorsModule


@pytest.fixture
def dev() -> Any:
    return device("numpy")


class Small(Module):
    fc: nn.Linear
    bn: nn.BatchNorm


def _small(dev: Any) -> Small:
    return Small(fc=nn.LinearConfig(3, 2).init(dev), bn=nn.BatchNormConfig(2).init(dev))


def _torch_small() -> Any:
    torch.manual_seed(0)
    return torch.nn.ModuleDict({"fc": torch.nn.Linear(3, 2), "bn": torch.nn.BatchNorm1d(2)})


def test_public_names() -> None:
    assert FromPytorchModule is PyTorchFileRecorder and FromSafetensorsModule is SafetensorsFileRecorder
    assert repr(PyTorchFileRecorder()) == "PyTorchFileRecorder(FullPrecisionSettings())"


def test_record_is_the_file_tree_until_it_meets_a_module(tmp_path: Path, dev: Any) -> None:
    tm = _torch_small()
    path = save(tm, tmp_path / "s.pt")
    record = PyTorchFileRecorder().load(path, dev)  # a bare path works as LoadArgs(path)
    assert isinstance(record, ImportedRecord) and isinstance(record, dict)
    assert record["fc"]["weight"].shape == (2, 3)  # PyTorch's [d_output, d_input]
    assert set(record["bn"]) == {"weight", "bias", "running_mean", "running_var", "num_batches_tracked"}
    adapted = record.adapt(_small(dev))
    assert adapted.tensors["fc.weight"].shape == (3, 2)
    assert set(adapted.tensors) == {"fc.weight", "fc.bias", "bn.gamma", "bn.beta", "bn.running_mean",
                                    "bn.running_var"}
    assert adapted.unused == []
    np.testing.assert_array_equal(adapted.tensors["bn.gamma"].to_numpy(), tm["bn"].weight.detach().numpy())
    np.testing.assert_array_equal(adapted.tensors["fc.weight"].to_numpy(), tm["fc"].weight.detach().numpy().T)


def test_settings_set_the_stored_precision(tmp_path: Path, dev: Any) -> None:
    path = save(_torch_small(), tmp_path / "s.pt")
    record = PyTorchFileRecorder(HalfPrecisionSettings()).load(path, dev)
    assert record.tensors["fc.weight"].dtype is DType.FLOAT16
    model = _small(dev).load_record(record)
    assert model.fc.weight.dtype is DType.FLOAT32  # converted to the backend's float type on load


class _Spy:
    """An entry adapter recording the containers it sees and scaling Linear weights."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str | None]] = []

    def adapt(self, entry: TensorEntry) -> TensorEntry | None:
        self.seen.append((entry.key, entry.container))
        if entry.key.endswith("num_batches_tracked"):
            return None
        if entry.container == "Linear" and entry.key.endswith("weight"):
            from ember import TensorData

            return entry.with_(data=TensorData(entry.data.to_numpy() * 2))
        return entry


def test_entry_adapter_sees_the_ember_container(tmp_path: Path, dev: Any) -> None:
    tm = _torch_small()
    path = save(tm, tmp_path / "s.pt")
    spy = _Spy()
    model = _small(dev).load_record(PyTorchFileRecorder().load(LoadArgs(path).with_adapter(spy), dev))
    assert ("fc.weight", "Linear") in spy.seen and ("bn.running_var", "BatchNorm") in spy.seen
    assert len(spy.seen) == 7  # each tensor once
    np.testing.assert_allclose(model.fc.weight.val().to_data().to_numpy(), 2 * tm["fc"].weight.detach().numpy().T)


def test_adapter_type_validation() -> None:
    assert LoadArgs("x.pt").adapter_type == "pytorch"
    assert LoadArgs("x.pt").with_adapter_type("None").adapter_type == "none"
    with pytest.raises(ModelImportError, match="'pytorch' or 'none'"):
        LoadArgs("x.pt").with_adapter_type("tensorflow")


def test_packed_tensor_of_the_wrong_size(tmp_path: Path, dev: Any) -> None:
    state = torch.nn.MultiheadAttention(8, 2, batch_first=True).state_dict()
    state["in_proj_weight"] = torch.zeros(7, 8)
    path = save(state, tmp_path / "bad.pt")
    with pytest.raises(ModelImportError, match="multiple of 3"):
        nn.MultiHeadAttentionConfig(8, 2).init(dev).load_record(PyTorchFileRecorder().load(path, dev))


def test_shape_mismatch_is_named(tmp_path: Path, dev: Any) -> None:
    path = save(torch.nn.Linear(3, 4), tmp_path / "lin.pt")
    with pytest.raises(Exception, match=r"weight.*\[3, 4\].*\[3, 2\]"):
        nn.LinearConfig(3, 2).init(dev).load_record(PyTorchFileRecorder().load(path, dev))


def test_safetensors_bfloat16_with_adapter_none(tmp_path: Path, dev: Any) -> None:
    from safetensors.torch import save_file

    w = torch.arange(6, dtype=torch.float32).reshape(3, 2).to(torch.bfloat16) / 4  # already [d_input, d_output]
    save_file({"weight": w, "bias": torch.ones(2, dtype=torch.bfloat16)}, str(tmp_path / "e.safetensors"))
    rec = SafetensorsFileRecorder().load(LoadArgs(tmp_path / "e.safetensors").with_adapter_type("none"), dev)
    layer = nn.LinearConfig(3, 2).init(dev).load_record(rec)
    np.testing.assert_array_equal(layer.weight.val().to_data().to_numpy(), w.float().numpy())


def test_with_variants_checks_candidates(tmp_path: Path, dev: Any) -> None:
    path = save(torch.nn.Linear(3, 2), tmp_path / "lin.pt")
    record = PyTorchFileRecorder().load(path, dev)
    with pytest.raises(TypeError, match="neither a Module nor a config"):
        record.with_variants({"x": [42]})
    assert record.with_variants({"x": [nn.LinearConfig(3, 2)]}).variants == {"x": [nn.LinearConfig(3, 2)]}
