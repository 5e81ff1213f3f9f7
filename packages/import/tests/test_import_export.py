"""Export: Ember modules written as PyTorch state_dicts (safetensors and .pt, without torch) that
``torch.nn.Module.load_state_dict`` accepts; round trips both ways."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from _import_models_support import BACKENDS, assert_close, device, load, safetensors_torch, tensor, torch
from ember import DType, Tensor, TensorData, nn
from ember.module import Module
from ember.nn import MhaInput
from ember.record import DoublePrecisionSettings
from ember_import import (
    LoadArgs,
    ModelImportError,
    SafetensorsFileRecorder,
    read_pytorch,
    save_pytorch,
    save_safetensors,
    to_pytorch_state_dict,
)
from ember_import._pt_writer import write_pytorch

RNG = np.random.default_rng(7)


@pytest.fixture(params=BACKENDS)
def dev(request: Any) -> Any:
    return device(request.param)


class TorchAll(torch.nn.Module):
    """One of each layer the adapters serve."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(10, 8)
        self.lstm = torch.nn.LSTM(8, 8, batch_first=True)
        self.gru = torch.nn.GRU(8, 8, batch_first=True)
        self.attn = torch.nn.MultiheadAttention(8, 2, batch_first=True, dropout=0.0)
        self.norm = torch.nn.LayerNorm(8)
        self.conv = torch.nn.Conv1d(8, 6, 3, padding=1)
        self.bn = torch.nn.BatchNorm1d(6)
        self.gn = torch.nn.GroupNorm(2, 6)
        self.up = torch.nn.ConvTranspose1d(6, 6, 2, stride=2)
        self.head = torch.nn.Linear(6, 3)

    def forward(self, idx: Any) -> Any:
        x = self.embed(idx)
        x, _ = self.lstm(x)
        x, _ = self.gru(x)
        x = self.attn(x, x, x)[0] + x
        x = self.norm(x)
        x = self.gn(self.bn(self.conv(x.transpose(1, 2))))
        return self.head(self.up(x).mean(2))


class EmberAll(Module):
    embed: nn.Embedding
    lstm: nn.Lstm
    gru: nn.Gru
    attn: nn.MultiHeadAttention
    norm: nn.LayerNorm
    conv: nn.Conv1d
    bn: nn.BatchNorm
    gn: nn.GroupNorm
    up: nn.ConvTranspose1d
    head: nn.Linear

    def forward(self, idx: Tensor) -> Tensor:
        x = self.embed(idx)
        x, _ = self.lstm(x)
        x = self.gru(x)
        x = self.attn(MhaInput.self_attn(x)).context + x
        x = self.norm(x)
        x = self.gn(self.bn(self.conv(x.swap_dims(1, 2))))
        x = self.up(x)
        return self.head(x.mean_dim(2).reshape([x.shape[0], x.shape[1]]))


def ember_all(dev: Any) -> EmberAll:
    return EmberAll(
        embed=nn.EmbeddingConfig(10, 8).init(dev), lstm=nn.LstmConfig(8, 8).init(dev),
        gru=nn.GruConfig(8, 8).init(dev), attn=nn.MultiHeadAttentionConfig(8, 2, dropout=0.0).init(dev),
        norm=nn.LayerNormConfig(8).init(dev),
        conv=nn.Conv1dConfig((8, 6), (3,), padding=nn.PaddingConfig1d.Explicit(1)).init(dev),
        bn=nn.BatchNormConfig(6).init(dev), gn=nn.GroupNormConfig(2, 6).init(dev),
        up=nn.ConvTranspose1dConfig((6, 6), (2,), stride=(2,)).init(dev), head=nn.LinearConfig(6, 3).init(dev),
    )


def _randomized_ember(dev: Any) -> EmberAll:
    """Non-trivial values everywhere (norm gammas are ones otherwise), running statistics included."""
    model = ember_all(dev)

    def bump(p: Any) -> Any:
        return p.with_val(p.val() + Tensor.from_data(RNG.standard_normal(p.shape).astype(np.float32) * 0.3, dev))

    model = model.map(bump)
    bn = model.bn.replace(running_mean=model.bn.running_mean.with_value(Tensor.from_data(
        RNG.standard_normal(6).astype(np.float32), dev)), running_var=model.bn.running_var.with_value(
        Tensor.from_data(RNG.uniform(0.5, 2.0, 6).astype(np.float32), dev)))
    return model.replace(bn=bn)


def _torch_forward(tm: Any, idx: np.ndarray) -> np.ndarray:
    tm.eval()
    with torch.no_grad():
        return tm(torch.from_numpy(idx)).double().numpy()  # type: ignore[no-any-return]


@pytest.mark.parametrize("fmt", ["pt", "safetensors"])
def test_export_loads_into_torch_with_the_same_outputs(tmp_path: Path, dev: Any, fmt: str) -> None:
    model = _randomized_ember(dev)
    path = tmp_path / f"ember.{fmt}"
    if fmt == "pt":
        save_pytorch(model, path)
        state = torch.load(path, weights_only=True)
    else:
        save_safetensors(model, path)
        state = safetensors_torch.load_file(str(path))
    tm = TorchAll()
    tm.load_state_dict(state)  # strict: exactly PyTorch's keys and shapes
    idx = RNG.integers(0, 10, size=(2, 5)).astype(np.int64)
    assert_close(model.forward(tensor(idx, dev)), _torch_forward(tm, idx))
    np.testing.assert_array_equal(tm.bn.running_var.numpy(), model.bn.running_var.value().to_data().to_numpy())


def test_torch_to_ember_to_torch_is_lossless(tmp_path: Path, dev: Any) -> None:
    torch.manual_seed(0)
    tm = TorchAll()
    tm.train()
    with torch.no_grad():
        tm(torch.randint(0, 10, (4, 5)))
    torch.save(tm.state_dict(), tmp_path / "orig.pt")
    model = ember_all(dev).load_record(load(tmp_path / "orig.pt", dev=dev))
    save_pytorch(model, tmp_path / "back.pt")
    back = torch.load(tmp_path / "back.pt", weights_only=True)
    for k, v in tm.state_dict().items():
        if k.endswith("num_batches_tracked"):
            assert back[k].item() == 0  # Ember keeps no counter
            continue
        assert back[k].dtype == v.dtype and back[k].shape == v.shape, k
        assert torch.equal(back[k], v), k


def test_ember_to_file_to_ember_is_lossless(tmp_path: Path, dev: Any) -> None:
    model = _randomized_ember(dev)
    save_safetensors(model, tmp_path / "m.safetensors")
    again = ember_all(dev).load_record(load(tmp_path / "m.safetensors", dev=dev))
    for (path, a), (_, b) in zip(model.named_params(), again.named_params()):
        np.testing.assert_array_equal(a.val().to_data().to_numpy(), b.val().to_data().to_numpy(), err_msg=path)


def test_pt_file_layout(tmp_path: Path) -> None:
    sd = {"a.weight": TensorData(np.arange(6, dtype=np.float32).reshape(2, 3)),
          "b": TensorData(np.array([1, 2], dtype=np.int64)), "flag": TensorData(np.array([True, False]))}
    write_pytorch(sd, tmp_path / "x.pt")
    with zipfile.ZipFile(tmp_path / "x.pt") as zf:
        names = zf.namelist()
        assert {"archive/data.pkl", "archive/version", "archive/byteorder", "archive/data/0"} <= set(names)
        pkl = zf.read("archive/data.pkl")
        assert pkl[:2] == b"\x80\x02"  # protocol 2
        assert b"ctorch._utils\n_rebuild_tensor_v2\n" in pkl and b"ccollections\nOrderedDict\n" in pkl
        for info in zf.infolist():
            if info.filename.startswith("archive/data/"):
                with open(tmp_path / "x.pt", "rb") as f:
                    f.seek(info.header_offset + 26)
                    n, m = np.frombuffer(f.read(4), dtype="<u2")
                assert (info.header_offset + 30 + n + m) % 64 == 0, info.filename
    back = torch.load(tmp_path / "x.pt", weights_only=True)
    assert back["a.weight"].tolist() == [[0, 1, 2], [3, 4, 5]] and back["b"].dtype == torch.int64
    assert back["flag"].tolist() == [True, False]
    ours = read_pytorch(tmp_path / "x.pt")
    np.testing.assert_array_equal(ours.tensors["a.weight"].to_numpy(), sd["a.weight"].to_numpy())


def test_pt_writer_does_not_import_torch(tmp_path: Path) -> None:
    code = (
        "import sys; sys.modules['torch'] = None\n"  # any import of torch now fails
        "import numpy as np, ember\n"
        "from ember import nn\n"
        "from ember_import import save_pytorch, save_safetensors\n"
        "m = nn.LinearConfig(3, 2).init(ember.backend('numpy').device())\n"
        f"save_pytorch(m, {str(tmp_path / 'w.pt')!r}); save_safetensors(m, {str(tmp_path / 'w.safetensors')!r})\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    tm = torch.nn.Linear(3, 2)
    tm.load_state_dict(torch.load(tmp_path / "w.pt", weights_only=True))
    tm.load_state_dict(safetensors_torch.load_file(str(tmp_path / "w.safetensors")))


def test_bfloat16_both_ways(tmp_path: Path, dev: Any) -> None:
    tm = torch.nn.Linear(4, 3).to(torch.bfloat16)
    safetensors_torch.save_file(tm.state_dict(), str(tmp_path / "bf.safetensors"))
    layer = nn.LinearConfig(4, 3).init(dev).load_record(load(tmp_path / "bf.safetensors", dev=dev))
    np.testing.assert_array_equal(layer.weight.val().to_data().to_numpy(), tm.weight.detach().float().numpy().T)
    x = RNG.standard_normal((2, 4))
    with torch.no_grad():
        want = torch.nn.functional.linear(torch.from_numpy(x).double(), tm.weight.double(), tm.bias.double()).double()
    assert_close(layer(tensor(x, dev)), want.numpy())
    bits = {"w": TensorData(np.arange(6, dtype=np.float32).reshape(2, 3) / 8).convert(DType.BFLOAT16)}
    write_pytorch(bits, tmp_path / "bf.pt")
    back = torch.load(tmp_path / "bf.pt", weights_only=True)
    assert back["w"].dtype == torch.bfloat16 and back["w"].float().tolist() == [[0, 0.125, 0.25], [0.375, 0.5, 0.625]]


def test_export_settings_and_remap(dev: Any) -> None:
    mlp = [nn.LinearConfig(2, 3).init(dev), nn.LinearConfig(3, 1).init(dev)]

    class Seq(Module):
        layers: list[nn.Linear]

    sd = to_pytorch_state_dict(Seq(layers=mlp), settings=DoublePrecisionSettings(),
                               key_remap=[(r"^layers\.1\.", "layers.2.")])  # re-insert the ReLU's index
    assert list(sd) == ["layers.0.weight", "layers.0.bias", "layers.2.weight", "layers.2.bias"]
    assert sd["layers.2.weight"].shape == (1, 3) and sd["layers.2.weight"].dtype is DType.FLOAT64
    with pytest.raises(ModelImportError, match="map to"):
        to_pytorch_state_dict(Seq(layers=mlp), key_remap=[(r"\.\d\.", ".0.")])


def test_no_adapter_reads_ember_layout(tmp_path: Path, dev: Any) -> None:
    model = _randomized_ember(dev)
    save_safetensors(model, tmp_path / "ember.safetensors", pytorch=False)  # Ember's names and layouts
    rec = SafetensorsFileRecorder().load(LoadArgs(tmp_path / "ember.safetensors").with_adapter_type("none"), dev)
    again = ember_all(dev).load_record(rec)
    idx = RNG.integers(0, 10, size=(1, 4)).astype(np.int64)
    assert_close(again.forward(tensor(idx, dev)), np.asarray(model.forward(tensor(idx, dev)).to_data().to_numpy(),
                                                                  dtype=np.float64))
    with pytest.raises(Exception, match="shape"):  # the PyTorch adapter would transpose Ember's Linear weights
        ember_all(dev).load_record(SafetensorsFileRecorder().load(LoadArgs(tmp_path / "ember.safetensors"), dev))


def test_forward_uses_ember_ops_only(dev: Any) -> None:
    # sanity: the composite model runs on this backend (guards the comparison tests against skipped layers)
    out = _randomized_ember(dev).forward(tensor(np.array([[1, 2, 3]], dtype=np.int64), dev))
    assert out.shape == (1, 3) and np.all(np.isfinite(out.to_data().to_numpy()))
