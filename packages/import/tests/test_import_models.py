"""Whole models from PyTorch files: nested modules with key remapping, checkpoints with a top-level key,
``Sequential`` s with parameter-free gaps, partial models and union ("enum") modules; the Ember model gives
PyTorch's output within 1e-5 on every installed backend."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from _import_models_support import BACKENDS, assert_close, device, load, save, tensor, torch, torch_out
from ember import Tensor, nn
from ember.config import config
from ember.module import Module
from ember.record import FullPrecisionSettings
from ember.tensor import activation as A
from ember_import import ModelImportError
from ember_import.pytorch import LoadArgs, PyTorchFileRecorder

RNG = np.random.default_rng(1)


@pytest.fixture(params=BACKENDS)
def dev(request: Any) -> Any:
    return device(request.param)


# ---------------------------------------------------------------- the issue's example: conv.* remapped away
class TorchNet(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.ModuleDict({"c1": torch.nn.Conv2d(2, 4, 3), "bn": torch.nn.BatchNorm2d(4)})
        self.fc = torch.nn.Linear(4 * 3 * 3, 5)

    def forward(self, x: Any) -> Any:
        x = torch.relu(self.conv["bn"](self.conv["c1"](x)))
        return self.fc(x.flatten(1))


class Net(Module):
    c1: nn.Conv2d
    bn: nn.BatchNorm
    fc: nn.Linear

    def forward(self, x: Tensor) -> Tensor:
        x = A.relu(self.bn(self.c1(x)))
        return self.fc(x.reshape([x.shape[0], -1]))


@config
class NetConfig:
    channels: int = 4

    def init(self, dev: Any) -> Net:
        return Net(c1=nn.Conv2dConfig((2, self.channels), (3, 3)).init(dev),
                   bn=nn.BatchNormConfig(self.channels).init(dev),
                   fc=nn.LinearConfig(self.channels * 9, 5).init(dev))


def _trained_torch_net() -> TorchNet:
    torch.manual_seed(0)
    tm = TorchNet()
    tm.train()
    with torch.no_grad():
        tm(torch.randn(6, 2, 5, 5))  # running statistics move away from 0 / 1
    return tm.eval()


def test_issue_example(tmp_path: Path, dev: Any, capsys: Any) -> None:
    tm = _trained_torch_net()
    torch.save({"model_state_dict": tm.state_dict(), "epoch": 3}, tmp_path / "model.pt")
    device = dev
    args = (LoadArgs(tmp_path / "model.pt")
            .with_key_remap(r"conv\.(.*)", r"\1")
            .with_top_level_key("model_state_dict")
            .with_debug_print())
    record = PyTorchFileRecorder(FullPrecisionSettings()).load(args, device)
    model = NetConfig().init(device).load_record(record)
    printed = capsys.readouterr().out
    assert "conv.c1.weight" in printed and "c1.weight" in printed and "[4, 2, 3, 3]" in printed
    x = RNG.standard_normal((3, 2, 5, 5))
    assert_close(model.forward(tensor(x, dev)), torch_out(tm, x))
    assert not record.last.unused  # num_batches_tracked is dropped by the BatchNorm adapter, not left over


def test_checkpoint_without_top_level_key_names_the_keys(tmp_path: Path) -> None:
    tm = _trained_torch_net()
    torch.save({"model_state_dict": tm.state_dict(), "optimizer": {}}, tmp_path / "ckpt.pt")
    with pytest.raises(ModelImportError, match="model_state_dict"):
        PyTorchFileRecorder().load(LoadArgs(tmp_path / "ckpt.pt").with_top_level_key("model"))


# ---------------------------------------------------------------- nested modules, remapped names
class TorchBlock(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = torch.nn.Linear(6, 6)
        self.norm = torch.nn.LayerNorm(6)

    def forward(self, x: Any) -> Any:
        return self.norm(torch.relu(self.proj(x)))


class TorchEncoder(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(11, 6)
        self.blocks = torch.nn.ModuleList([TorchBlock(), TorchBlock()])
        self.head = torch.nn.Linear(6, 3)

    def forward(self, idx: Any) -> Any:
        x = self.embed(idx)
        for b in self.blocks:
            x = b(x)
        return self.head(x)


class Block(Module):
    linear: nn.Linear
    ln: nn.LayerNorm

    def forward(self, x: Tensor) -> Tensor:
        return self.ln(A.relu(self.linear(x)))


class Encoder(Module):
    tokens: nn.Embedding
    layers: list[Block]
    output: nn.Linear

    def forward(self, idx: Tensor) -> Tensor:
        x = self.tokens(idx)
        for b in self.layers:
            x = b(x)
        return self.output(x)


def _encoder(dev: Any) -> Encoder:
    def block() -> Block:
        return Block(linear=nn.LinearConfig(6, 6).init(dev), ln=nn.LayerNormConfig(6).init(dev))

    return Encoder(tokens=nn.EmbeddingConfig(11, 6).init(dev), layers=[block(), block()],
                   output=nn.LinearConfig(6, 3).init(dev))


@pytest.mark.parametrize("fmt", ["pt", "safetensors"])
def test_nested_model_with_key_remap(tmp_path: Path, fmt: str, dev: Any) -> None:
    torch.manual_seed(2)
    tm = TorchEncoder()
    with torch.no_grad():
        for b in tm.blocks:
            b.norm.weight.uniform_(0.5, 1.5)
            b.norm.bias.normal_()
    path = save(tm, tmp_path / f"enc.{fmt}", fmt)
    args = (LoadArgs(path).with_key_remap(r"^embed\.", "tokens.").with_key_remap(r"^blocks\.", "layers.")
            .with_key_remap(r"\.proj\.", ".linear.").with_key_remap(r"\.norm\.", ".ln.")
            .with_key_remap(r"^head\.", "output."))
    model = _encoder(dev).load_record(load(path, args, dev))
    idx = RNG.integers(0, 11, size=(2, 4)).astype(np.int64)
    assert_close(model.forward(tensor(idx, dev)), torch_out(tm, idx))


# ---------------------------------------------------------------- Sequential with ReLU gaps
class Mlp(Module):
    layers: list[nn.Linear]

    def forward(self, x: Tensor) -> Tensor:
        for i, lin in enumerate(self.layers):
            x = lin(x)
            if i < len(self.layers) - 1:
                x = A.relu(x)
        return x


def test_sequential_with_relu_gaps(tmp_path: Path, dev: Any) -> None:
    torch.manual_seed(3)
    tm = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 8), torch.nn.ReLU(),
                             torch.nn.Dropout(0.5), torch.nn.Linear(8, 2))
    path = save(tm, tmp_path / "seq.pt")  # keys 0.*, 2.*, 5.*
    model = Mlp(layers=[nn.LinearConfig(4, 8).init(dev), nn.LinearConfig(8, 8).init(dev),
                        nn.LinearConfig(8, 2).init(dev)])
    model = model.load_record(load(path, LoadArgs(path).with_key_remap("^", "layers."), dev))
    x = RNG.standard_normal((5, 4))
    assert_close(model.forward(tensor(x, dev)), torch_out(tm, x))


def test_sequential_gaps_kept_without_contiguous_indices(tmp_path: Path, dev: Any) -> None:
    tm = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    path = save(tm, tmp_path / "seq.pt")
    model = Mlp(layers=[nn.LinearConfig(4, 8).init(dev), nn.LinearConfig(8, 2).init(dev)])
    args = LoadArgs(path).with_key_remap("^", "layers.").with_map_indices_contiguous(False)
    _, report = model.load_record(load(path, args, dev), strict=False)
    assert report.missing == ["layers.1.weight", "layers.1.bias"]


# ---------------------------------------------------------------- partial model
class Trunk(Module):
    c1: nn.Conv2d
    bn: nn.BatchNorm


def test_partial_model_unused_keys_reported(tmp_path: Path, dev: Any, caplog: Any) -> None:
    tm = _trained_torch_net()
    path = save(tm, tmp_path / "full.pt")
    trunk = Trunk(c1=nn.Conv2dConfig((2, 4), (3, 3)).init(dev), bn=nn.BatchNormConfig(4).init(dev))
    record = load(path, LoadArgs(path).with_key_remap(r"conv\.", ""), dev)
    with caplog.at_level(logging.WARNING, logger="ember_import"):
        trunk = trunk.load_record(record)  # strict: every Ember parameter found; fc.* left over
    assert sorted(record.last.unused) == ["fc.bias", "fc.weight"]
    assert "fc.weight" in caplog.text
    x = RNG.standard_normal((2, 2, 5, 5))
    with torch.no_grad():
        want = tm.conv["bn"](tm.conv["c1"](torch.from_numpy(x.astype(np.float32)))).double().numpy()
    assert_close(trunk.bn(trunk.c1(tensor(x, dev))), want)


def test_model_larger_than_the_file_reports_missing(tmp_path: Path, dev: Any) -> None:
    path = save(torch.nn.ModuleDict({"c1": torch.nn.Conv2d(2, 4, 3)}), tmp_path / "part.pt")
    net = NetConfig().init(dev)
    with pytest.raises(Exception, match="bn.gamma"):
        net.load_record(load(path, dev=dev))
    loaded, report = net.load_record(load(path, dev=dev), strict=False)
    assert "fc.weight" in report.missing and "bn.running_mean" in report.missing
    assert not report.unused and not report.mismatched


# ---------------------------------------------------------------- union ("enum") modules
class DwsConv(Module):
    """A depthwise-separable convolution: one variant of the union."""

    dconv: nn.Conv2d
    pconv: nn.Conv2d

    def forward(self, x: Tensor) -> Tensor:
        return self.pconv(self.dconv(x))


class EnumNet(Module):
    conv: nn.Conv2d | DwsConv

    def forward(self, x: Tensor) -> Tensor:
        return self.conv(x)


class TorchDws(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.dconv = torch.nn.Conv2d(2, 2, 3, groups=2)
        self.pconv = torch.nn.Conv2d(2, 4, 1)

    def forward(self, x: Any) -> Any:
        return self.pconv(self.dconv(x))


def _dws(dev: Any) -> DwsConv:
    return DwsConv(dconv=nn.Conv2dConfig((2, 2), (3, 3), groups=2).init(dev),
                   pconv=nn.Conv2dConfig((2, 4), (1, 1)).init(dev))


@pytest.mark.parametrize("depthwise", [True, False])
def test_enum_module_variant_chosen_by_keys(tmp_path: Path, dev: Any, depthwise: bool) -> None:
    torch.manual_seed(4)
    inner = TorchDws() if depthwise else torch.nn.Conv2d(2, 4, 3)
    tm = torch.nn.ModuleDict({"conv": inner})
    path = save(tm, tmp_path / "enum.pt")
    plain = nn.Conv2dConfig((2, 4), (3, 3)).init(dev)
    record = load(path, dev=dev).with_variants({"conv": [_dws(dev), plain]})
    model = EnumNet(conv=plain).load_record(record)  # built with the plain variant; the file decides
    assert isinstance(model.conv, DwsConv if depthwise else nn.Conv2d)
    assert record.last.variants == {"conv": "DwsConv" if depthwise else "Conv2d"}
    x = RNG.standard_normal((2, 2, 6, 6))
    with torch.no_grad():
        want = inner(torch.from_numpy(x.astype(np.float32))).double().numpy()
    assert_close(model.forward(tensor(x, dev)), want)


def test_enum_module_variant_chosen_by_shapes(tmp_path: Path, dev: Any) -> None:
    inner = torch.nn.Conv2d(2, 4, 1)  # same keys as a 3x3 Conv2d; only the shapes tell them apart
    path = save(torch.nn.ModuleDict({"conv": inner}), tmp_path / "enum.pt")
    k3 = nn.Conv2dConfig((2, 4), (3, 3)).init(dev)
    record = load(path, dev=dev).with_variants({"conv": [_dws(dev), nn.Conv2dConfig((2, 4), (1, 1))]})
    model = EnumNet(conv=k3).load_record(record)  # a config candidate is initialized on the device
    assert model.conv.weight.shape == (4, 2, 1, 1)
    x = RNG.standard_normal((1, 2, 3, 3))
    with torch.no_grad():
        want = inner(torch.from_numpy(x.astype(np.float32))).double().numpy()
    assert_close(model.forward(tensor(x, dev)), want)


def test_enum_module_no_variant_fits(tmp_path: Path, dev: Any) -> None:
    path = save(torch.nn.ModuleDict({"conv": torch.nn.Conv2d(2, 5, 3)}), tmp_path / "enum.pt")
    record = load(path, dev=dev).with_variants({"conv": [_dws(dev)]})
    with pytest.raises(ModelImportError, match="no variant matches.*Conv2d.*DwsConv"):
        EnumNet(conv=nn.Conv2dConfig((2, 4), (3, 3)).init(dev)).load_record(record)


# ---------------------------------------------------------------- stacked LSTM (num_layers=2)
class Stacked(Module):
    lstms: list[nn.Lstm]

    def forward(self, x: Tensor) -> Tensor:
        for lstm in self.lstms:
            x, _ = lstm(x)
        return x


def test_two_layer_lstm_into_a_list(tmp_path: Path, dev: Any) -> None:
    torch.manual_seed(5)
    tm = torch.nn.LSTM(3, 4, num_layers=2, batch_first=True)
    path = save(tm, tmp_path / "lstm.pt")  # weight_ih_l0, weight_ih_l1, ...
    model = Stacked(lstms=[nn.LstmConfig(3, 4).init(dev), nn.LstmConfig(4, 4).init(dev)])
    model = model.load_record(load(path, LoadArgs(path).with_key_remap("^", "lstms."), dev))
    x = RNG.standard_normal((2, 5, 3))
    assert_close(model.forward(tensor(x, dev)), torch_out(tm, x))


class WithStack(Module):
    rnn: nn.StackedLstm


@pytest.mark.parametrize("bias", [True, False])
def test_multi_layer_lstm_into_a_stacked_lstm(tmp_path: Path, dev: Any, bias: bool) -> None:
    """``nn.LSTM(num_layers=3)``'s ``*_l{k}`` keys load into a ``StackedLstm``'s ``layers.{k}`` (weights transposed),
    at the top level and under a prefix; output and final states equal the raw torch module's."""
    torch.manual_seed(7)
    tm = torch.nn.LSTM(3, 4, num_layers=3, bias=bias, batch_first=True)
    path = save(tm, tmp_path / "lstm3.pt")
    cfg = nn.StackedLstmConfig(3, 4, 3, bias=bias)
    top = cfg.init(dev).load_record(load(path, dev=dev))
    nested = WithStack(rnn=cfg.init(dev)).load_record(load(path, LoadArgs(path).with_key_remap("^", "rnn."), dev))
    np.testing.assert_array_equal(top.layers[2].weight_ih.val().to_numpy(), tm.weight_ih_l2.detach().numpy().T)
    x = RNG.standard_normal((2, 5, 3))
    with torch.no_grad():
        y_t, (h_t, c_t) = tm(torch.from_numpy(x.astype(np.float32)))
    for model in (top, nested.rnn):
        y, state = model(tensor(x, dev))
        assert_close(y, y_t.double().numpy())
        assert_close(state.hidden, h_t.double().numpy())
        assert_close(state.cell, c_t.double().numpy())


def test_stacked_lstm_exports_nn_lstm_keys(dev: Any) -> None:
    """The reverse: a ``StackedLstm``'s state dict is ``nn.LSTM(num_layers=2)``'s (strict load), same output."""
    from ember_import import to_pytorch_state_dict

    model = nn.StackedLstmConfig(3, 4, 2).init(dev)
    sd = to_pytorch_state_dict(model)
    tm = torch.nn.LSTM(3, 4, num_layers=2, batch_first=True)
    tm.load_state_dict({k: torch.from_numpy(np.asarray(v.to_numpy(), np.float32)) for k, v in sd.items()},
                       strict=True)
    x = RNG.standard_normal((2, 4, 3))
    assert_close(model(tensor(x, dev))[0], torch_out(tm, x))


def test_enum_module_without_candidates_hints_the_variant(tmp_path: Path, dev: Any, caplog: Any) -> None:
    path = save(torch.nn.ModuleDict({"conv": TorchDws()}), tmp_path / "enum.pt")
    model = EnumNet(conv=nn.Conv2dConfig((2, 4), (3, 3)).init(dev))
    with caplog.at_level(logging.WARNING, logger="ember_import"), pytest.raises(Exception, match="conv.weight"):
        model.load_record(load(path, dev=dev))  # strict: the Conv2d's weight is missing
    assert "look like a DwsConv" in caplog.text and "with_variants" in caplog.text


class StackedBi(Module):
    lstms: list[nn.BiLstm]


def test_two_layer_bidirectional_lstm_into_a_list(tmp_path: Path, dev: Any) -> None:
    torch.manual_seed(6)
    tm = torch.nn.LSTM(3, 4, num_layers=2, batch_first=True, bidirectional=True)
    path = save(tm, tmp_path / "bilstm.pt")
    model = StackedBi(lstms=[nn.BiLstmConfig(3, 4).init(dev), nn.BiLstmConfig(8, 4).init(dev)])
    model = model.load_record(load(path, LoadArgs(path).with_key_remap("^", "lstms."), dev))
    xs = RNG.standard_normal((2, 5, 3))
    x = tensor(xs, dev)
    for lstm in model.lstms:
        x, _ = lstm(x)
    assert_close(x, torch_out(tm, xs))
