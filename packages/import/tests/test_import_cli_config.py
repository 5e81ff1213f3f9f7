"""``ember-import inspect`` and ``config_from_file``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ember import ConfigError, config
from ember_import import ModelImportError, config_from_file
from ember_import._cli import main

torch = pytest.importorskip("torch")


@pytest.fixture
def checkpoint(tmp_path: Path) -> Path:
    path = tmp_path / "ckpt.pt"
    torch.save({"epoch": 4, "config": {"d_model": 16, "n_layers": 2, "dropout": 0.1},
                "model": {"fc.weight": torch.zeros(3, 5), "fc.bias": torch.zeros(3, dtype=torch.bfloat16)}}, path)
    return path


def test_inspect_table(checkpoint: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", str(checkpoint)]) == 0
    out = capsys.readouterr().out
    assert "model.fc.weight" in out and "[3, 5]" in out and "float32" in out and "bfloat16" in out
    assert "2 tensors, 18 parameters, 66 bytes" in out  # 15*4 + 3*2
    assert "epoch" in out and "config.d_model" in out


def test_inspect_json_and_top_level_key(checkpoint: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", str(checkpoint), "--json", "--top-level-key", "model"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["tensors"] == [{"key": "fc.weight", "shape": [3, 5], "dtype": "float32"},
                              {"key": "fc.bias", "shape": [3], "dtype": "bfloat16"}]
    assert (out["num_params"], out["num_bytes"], out["format"]) == (18, 66, "pytorch-zip")


def test_inspect_safetensors_and_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from safetensors.torch import save_file

    path = tmp_path / "m.safetensors"
    save_file({"a.b": torch.ones(2, 2, dtype=torch.float16)}, str(path))
    assert main(["inspect", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["tensors"] == [{"key": "a.b", "shape": [2, 2], "dtype": "float16"}]
    assert main(["inspect", str(tmp_path / "missing.pt")]) == 1
    assert "error" in capsys.readouterr().err


def test_console_script(checkpoint: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "ember_import", "inspect", str(checkpoint), "--json"],
                         check=True, capture_output=True, text=True).stdout
    assert json.loads(out)["num_tensors"] == 2


def test_config_from_file(checkpoint: Path) -> None:
    assert config_from_file(checkpoint, "config") == {"d_model": 16, "n_layers": 2, "dropout": 0.1}
    assert config_from_file(checkpoint)["epoch"] == 4
    with pytest.raises(ModelImportError, match=r"no top-level key 'cfg'.*'config', 'epoch', 'model'"):
        config_from_file(checkpoint, "cfg")
    with pytest.raises(ModelImportError, match="expected a dict"):
        config_from_file(checkpoint, "epoch")


@config
class TinyConfig:
    d_model: int
    n_layers: int
    dropout: float = 0.0


@config
class OtherConfig:
    width: int


def test_config_from_file_into_ember_config(checkpoint: Path) -> None:
    cfg = config_from_file(checkpoint, "config", into=TinyConfig)
    assert cfg == TinyConfig(16, 2, 0.1)
    with pytest.raises(ConfigError):
        config_from_file(checkpoint, "config", into=OtherConfig)
