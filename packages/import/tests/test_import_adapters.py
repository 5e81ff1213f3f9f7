"""PyTorch layers -> Ember layers: weights written by torch, read by ember_import, same outputs (1e-5).

Each test builds a PyTorch module (random weights, seeded), saves its ``state_dict`` (``.pt`` and
``.safetensors``), loads it with ``PyTorchFileRecorder`` / ``SafetensorsFileRecorder`` into the matching
Ember layer on every installed backend and compares the forward outputs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from _import_models_support import BACKENDS, assert_close, device, load, save, tensor, torch, torch_out
from ember import nn
from ember.nn import MhaInput, PaddingConfig1d, PaddingConfig2d

RNG = np.random.default_rng(0)
FORMATS = ["pt", "safetensors"]


@pytest.fixture(params=BACKENDS)
def dev(request: Any) -> Any:
    return device(request.param)


def _randomize(module: Any) -> Any:
    """Non-trivial values for every parameter and buffer (norm weights are ones/zeros otherwise)."""
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for _, p in module.named_parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.5)
        for name, b in module.named_buffers():
            if name.endswith("running_var"):
                b.copy_(torch.rand(b.shape, generator=g) + 0.5)
            elif b.is_floating_point():
                b.copy_(torch.randn(b.shape, generator=g) * 0.3)
    return module


def _roundtrip(tm: Any, ember_layer: Any, tmp_path: Path, fmt: str, dev: Any) -> Any:
    path = save(_randomize(tm), tmp_path / f"m.{fmt}", fmt)
    return ember_layer.load_record(load(path, dev=dev))


@pytest.mark.parametrize("fmt", FORMATS)
def test_linear(tmp_path: Path, fmt: str, dev: Any) -> None:
    tm = torch.nn.Linear(5, 3)
    layer = _roundtrip(tm, nn.LinearConfig(5, 3).init(dev), tmp_path, fmt, dev)
    assert layer.weight.shape == (5, 3)  # Ember's [d_input, d_output]
    x = RNG.standard_normal((4, 5))
    assert_close(layer(tensor(x, dev)), torch_out(tm, x))


def test_linear_without_bias(tmp_path: Path, dev: Any) -> None:
    tm = torch.nn.Linear(4, 4, bias=False)  # square: only the convention says to transpose
    layer = _roundtrip(tm, nn.LinearConfig(4, 4, bias=False).init(dev), tmp_path, "pt", dev)
    x = RNG.standard_normal((2, 3, 4))
    assert_close(layer(tensor(x, dev)), torch_out(tm, x))


@pytest.mark.parametrize("fmt", FORMATS)
def test_conv1d(tmp_path: Path, fmt: str, dev: Any) -> None:
    tm = torch.nn.Conv1d(4, 6, 3, stride=2, padding=1)
    cfg = nn.Conv1dConfig((4, 6), (3,), stride=(2,), padding=PaddingConfig1d.Explicit(1))
    layer = _roundtrip(tm, cfg.init(dev), tmp_path, fmt, dev)
    x = RNG.standard_normal((2, 4, 9))
    assert_close(layer(tensor(x, dev)), torch_out(tm, x))


@pytest.mark.parametrize("fmt", FORMATS)
def test_conv2d(tmp_path: Path, fmt: str, dev: Any) -> None:
    tm = torch.nn.Conv2d(4, 6, (3, 2), padding=(1, 0), groups=2)
    cfg = nn.Conv2dConfig((4, 6), (3, 2), padding=PaddingConfig2d.Explicit(1, 0), groups=2)
    layer = _roundtrip(tm, cfg.init(dev), tmp_path, fmt, dev)
    x = RNG.standard_normal((2, 4, 5, 6))
    assert_close(layer(tensor(x, dev)), torch_out(tm, x))


def test_conv_transpose2d(tmp_path: Path, dev: Any) -> None:
    tm = torch.nn.ConvTranspose2d(3, 4, 3, stride=2, padding=1, output_padding=1)
    cfg = nn.ConvTranspose2dConfig((3, 4), (3, 3), stride=(2, 2), padding=(1, 1), padding_out=(1, 1))
    layer = _roundtrip(tm, cfg.init(dev), tmp_path, "pt", dev)
    x = RNG.standard_normal((2, 3, 4, 5))
    assert_close(layer(tensor(x, dev)), torch_out(tm, x))


@pytest.mark.parametrize("fmt", FORMATS)
def test_batch_norm(tmp_path: Path, fmt: str, dev: Any) -> None:
    tm = torch.nn.BatchNorm2d(3)
    tm.train()
    with torch.no_grad():  # real running statistics and a non-zero num_batches_tracked
        tm(torch.randn(8, 3, 4, 4) * 2 + 1)
    layer = _roundtrip(tm, nn.BatchNormConfig(3).init(dev), tmp_path, fmt, dev)
    np.testing.assert_allclose(layer.running_var.value().to_data().to_numpy(), tm.running_var.numpy(), rtol=1e-6)
    x = RNG.standard_normal((2, 3, 4, 4))
    assert_close(layer(tensor(x, dev)), torch_out(tm, x))  # eval mode: running statistics


def test_batch_norm_1d(tmp_path: Path, dev: Any) -> None:
    tm = torch.nn.BatchNorm1d(5)
    layer = _roundtrip(tm, nn.BatchNormConfig(5).init(dev), tmp_path, "pt", dev)
    x = RNG.standard_normal((4, 5))
    assert_close(layer(tensor(x, dev)), torch_out(tm, x))


def test_layer_norm(tmp_path: Path, dev: Any) -> None:
    tm = torch.nn.LayerNorm(6)
    layer = _roundtrip(tm, nn.LayerNormConfig(6).init(dev), tmp_path, "safetensors", dev)
    x = RNG.standard_normal((2, 3, 6))
    assert_close(layer(tensor(x, dev)), torch_out(tm, x))


def test_group_norm(tmp_path: Path, dev: Any) -> None:
    tm = torch.nn.GroupNorm(2, 6)
    layer = _roundtrip(tm, nn.GroupNormConfig(2, 6).init(dev), tmp_path, "pt", dev)
    x = RNG.standard_normal((2, 6, 3, 3))
    assert_close(layer(tensor(x, dev)), torch_out(tm, x))


def test_embedding(tmp_path: Path, dev: Any) -> None:
    tm = torch.nn.Embedding(10, 4)
    layer = _roundtrip(tm, nn.EmbeddingConfig(10, 4).init(dev), tmp_path, "pt", dev)
    idx = RNG.integers(0, 10, size=(3, 5)).astype(np.int64)
    assert_close(layer(tensor(idx, dev)), torch_out(tm, idx))


@pytest.mark.parametrize("fmt", FORMATS)
def test_lstm(tmp_path: Path, fmt: str, dev: Any) -> None:
    tm = torch.nn.LSTM(3, 5, batch_first=True)
    layer = _roundtrip(tm, nn.LstmConfig(3, 5).init(dev), tmp_path, fmt, dev)
    # the fused layout is weight_ih_l0 [4 d, d_input] transposed, gate blocks i, f, g, o in the same order
    np.testing.assert_allclose(layer.weight_ih.val().to_data().to_numpy(), tm.weight_ih_l0.detach().numpy().T,
                               rtol=1e-6)
    np.testing.assert_allclose(layer.bias_hh.val().to_data().to_numpy(), tm.bias_hh_l0.detach().numpy(), rtol=1e-6)
    x = RNG.standard_normal((2, 7, 3))
    out, state = layer(tensor(x, dev))
    assert_close(out, torch_out(tm, x))
    with torch.no_grad():
        _, (h, c) = tm(torch.from_numpy(x.astype(np.float32)))
    assert_close(state.cell, c[0].double().numpy())


def test_bidirectional_lstm(tmp_path: Path, dev: Any) -> None:
    tm = torch.nn.LSTM(3, 4, batch_first=True, bidirectional=True)
    layer = _roundtrip(tm, nn.BiLstmConfig(3, 4).init(dev), tmp_path, "pt", dev)
    x = RNG.standard_normal((2, 5, 3))
    out, _ = layer(tensor(x, dev))
    assert_close(out, torch_out(tm, x))


def test_gru(tmp_path: Path, dev: Any) -> None:
    tm = torch.nn.GRU(3, 4, batch_first=True)
    layer = _roundtrip(tm, nn.GruConfig(3, 4).init(dev), tmp_path, "pt", dev)
    x = RNG.standard_normal((2, 6, 3))
    assert_close(layer(tensor(x, dev)), torch_out(tm, x))


@pytest.mark.parametrize("fmt", FORMATS)
def test_multi_head_attention(tmp_path: Path, fmt: str, dev: Any) -> None:
    tm = torch.nn.MultiheadAttention(8, 2, batch_first=True, dropout=0.0)
    layer = _roundtrip(tm, nn.MultiHeadAttentionConfig(8, 2, dropout=0.0).init(dev), tmp_path, fmt, dev)
    q, k = RNG.standard_normal((2, 3, 8)), RNG.standard_normal((2, 5, 8))
    v = RNG.standard_normal((2, 5, 8))
    tm.eval()
    with torch.no_grad():
        want, _ = tm(*(torch.from_numpy(a.astype(np.float32)) for a in (q, k, v)))
    got = layer(MhaInput(tensor(q, dev), tensor(k, dev), tensor(v, dev))).context
    assert_close(got, want.double().numpy())


def test_instance_norm(tmp_path: Path, dev: Any) -> None:
    tm = torch.nn.InstanceNorm2d(3, affine=True)
    layer = _roundtrip(tm, nn.InstanceNormConfig(3).init(dev), tmp_path, "pt", dev)
    x = RNG.standard_normal((2, 3, 4, 4))
    assert_close(layer(tensor(x, dev)), torch_out(tm, x))


def test_rms_norm(tmp_path: Path, dev: Any) -> None:
    tm = torch.nn.RMSNorm(6, eps=1e-5)
    layer = _roundtrip(tm, nn.RmsNormConfig(6).init(dev), tmp_path, "pt", dev)
    x = RNG.standard_normal((2, 6))
    assert_close(layer(tensor(x, dev)), torch_out(tm, x))


def test_prelu(tmp_path: Path, dev: Any) -> None:
    tm = torch.nn.PReLU(3)
    layer = _roundtrip(tm, nn.PReluConfig(3).init(dev), tmp_path, "pt", dev)
    x = RNG.standard_normal((2, 3, 4))
    assert_close(layer(tensor(x, dev)), torch_out(tm, x))
