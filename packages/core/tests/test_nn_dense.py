"""Linear, Embedding, SwiGlu, PositionWiseFeedForward, PositionalEncoding, RotaryEncoding and Dropout
against PyTorch / numpy references, forward and gradients, on every installed backend."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ember
from _nn_support import (
    BACKENDS,
    ad_device,
    assert_close,
    check_grads,
    ints,
    param_np,
    plain_device,
    tensor,
    torch_t,
)
from ember import nn
from ember.module import ad_enabled

torch = pytest.importorskip("torch")
rng = np.random.default_rng(11)


@pytest.fixture(params=BACKENDS)
def backend_name(request: pytest.FixtureRequest) -> str:
    return request.param  # type: ignore[no-any-return]


def test_linear_matches_torch(backend_name: str) -> None:
    dev = ad_device(backend_name)
    layer = nn.LinearConfig(7, 5).init(dev)
    assert layer.weight.shape == (7, 5) and layer.bias.shape == (5,)  # Burn's layout
    xn = rng.standard_normal((3, 4, 7))
    x = tensor(xn, dev).require_grad()
    tl = torch.nn.Linear(7, 5).double()
    with torch.no_grad():
        tl.weight.copy_(torch_t(param_np(layer.weight).T))
        tl.bias.copy_(torch_t(param_np(layer.bias)))
    xt = torch_t(xn, True)
    check_grads(layer(x), tl(xt), [("x", x), ("weight", layer.weight.val()), ("bias", layer.bias.val())],
                [xt, tl.weight, tl.bias], [None, lambda g: g.T, None])


def test_linear_without_bias_and_rank1(backend_name: str) -> None:
    dev = plain_device(backend_name)
    layer = nn.LinearConfig(3, 2, bias=False).init(dev)
    assert layer.bias is None
    x = rng.standard_normal(3)
    assert_close(layer(tensor(x, dev)), x @ param_np(layer.weight))


def test_linear_default_init_bound(backend_name: str) -> None:
    # Burn's KaimingUniform(gain=1/sqrt(3)) gives U(-1/sqrt(d_in), 1/sqrt(d_in)), PyTorch's default
    layer = nn.LinearConfig(400, 300).init(plain_device(backend_name))
    w = param_np(layer.weight)
    bound = 1 / math.sqrt(400)
    # the sampler's bound is 1/20 in float32 (0.0500000007): a draw may equal it, above the float64 1/20
    assert np.abs(w).max() <= np.float32(bound)
    assert abs(w.std() - bound / math.sqrt(3)) < 0.03 * bound


def test_embedding_matches_torch(backend_name: str) -> None:
    dev = ad_device(backend_name)
    emb = nn.EmbeddingConfig(10, 4).init(dev)
    idx = rng.integers(0, 10, (3, 5))
    te = torch.nn.Embedding(10, 4).double()
    with torch.no_grad():
        te.weight.copy_(torch_t(param_np(emb.weight)))
    check_grads(emb(ints(idx, dev)), te(torch.tensor(idx)), [("weight", emb.weight.val())], [te.weight])


def test_swiglu_matches_formula(backend_name: str) -> None:
    dev = ad_device(backend_name)
    layer = nn.SwiGluConfig(6, 4).init(dev)
    assert layer.linear_inner.bias is None  # Burn's default bias=False
    xn = rng.standard_normal((2, 6))
    x = tensor(xn, dev).require_grad()
    wi, wo = (torch_t(param_np(lin.weight), True) for lin in (layer.linear_inner, layer.linear_outer))
    xt = torch_t(xn, True)
    expected = torch.nn.functional.silu(xt @ wi) * (xt @ wo)
    check_grads(layer(x), expected, [("x", x), ("inner", layer.linear_inner.weight.val()),
                                     ("outer", layer.linear_outer.weight.val())], [xt, wi, wo])


def test_pwff_matches_torch(backend_name: str) -> None:
    dev = ad_device(backend_name)
    layer = nn.PositionWiseFeedForwardConfig(6, 10, dropout=0.0).init(dev)
    xn = rng.standard_normal((2, 3, 6))
    x = tensor(xn, dev).require_grad()
    w1, b1, w2, b2 = (torch_t(param_np(p), True) for p in (layer.linear_inner.weight, layer.linear_inner.bias,
                                                           layer.linear_outer.weight, layer.linear_outer.bias))
    xt = torch_t(xn, True)
    expected = torch.nn.functional.gelu(xt @ w1 + b1) @ w2 + b2
    check_grads(layer(x), expected, [("x", x), ("w1", layer.linear_inner.weight.val())], [xt, w1])


def test_positional_encoding_table_and_forward(backend_name: str) -> None:
    dev = plain_device(backend_name)
    pe = nn.PositionalEncodingConfig(6, max_sequence_size=20).init(dev)
    x = rng.standard_normal((2, 5, 6))
    pos = np.arange(5)[:, None]
    i = np.arange(6)[None, :]
    angle = pos / 10000 ** ((i - i % 2) / 6)
    table = np.where(i % 2 == 0, np.sin(angle), np.cos(angle))
    assert_close(pe(tensor(x, dev)), x + table)
    with pytest.raises(ember.ShapeError, match="max_sequence_size"):
        pe(tensor(np.zeros((1, 21, 6)), dev))


def test_rotary_encoding_burn_example(backend_name: str) -> None:
    # the values of Burn's own test (RotaryEncodingConfig::new(10, 4))
    dev = plain_device(backend_name)
    rope = nn.RotaryEncodingConfig(10, 4).init(dev)
    x = np.array([[[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]], [[9.0, 10.0, 11.0, 12.0], [13.0, 14.0, 15.0, 16.0]]])
    expected = [[[1.0, 2.0, 3.0, 4.0], [-2.3473, 7.4492, 6.9197, 8.0696]],
                [[9.0, 10.0, 11.0, 12.0], [-4.7567, 18.5034, 14.8393, 16.1492]]]
    out = rope(tensor(x, dev).unsqueeze_dim(0))
    np.testing.assert_allclose(out.to_numpy()[0], expected, atol=1e-4)


def test_rotary_encoding_offset_and_grad(backend_name: str) -> None:
    dev = ad_device(backend_name)
    rope = nn.RotaryEncodingConfig(16, 8, theta=100.0).init(dev)
    xn = rng.standard_normal((2, 3, 5, 8))
    x = tensor(xn, dev).require_grad()
    xt = torch_t(xn, True)
    p = torch.arange(2, 7, dtype=torch.float64)[:, None] * 100.0 ** (-torch.arange(0, 8, 2, dtype=torch.float64) / 8)
    a, b = xt[..., 0::2], xt[..., 1::2]
    expected = torch.stack([a * p.cos() - b * p.sin(), a * p.sin() + b * p.cos()], -1).reshape(xt.shape)
    check_grads(rope.apply(x, 2), expected, [("x", x)], [xt])


def test_dropout_statistics_and_valid(backend_name: str) -> None:
    ember.backend(backend_name).seed(3)
    dev = ad_device(backend_name)
    drop = nn.DropoutConfig(0.25).init(dev)
    x = tensor(np.ones((200, 100)), dev).require_grad()
    y = drop(x)
    yn = y.to_numpy()
    kept = yn != 0
    assert abs(kept.mean() - 0.75) < 0.02
    np.testing.assert_allclose(yn[kept], 1 / 0.75, rtol=1e-6)
    g = y.sum().backward()
    np.testing.assert_allclose(x.grad(g).to_numpy(), np.where(kept, 1 / 0.75, 0.0), rtol=1e-6)
    # inactive on the inner backend after valid(), and on a plain backend
    model = drop.valid()
    xi = x.inner()
    assert not ad_enabled(xi)
    assert model(xi) is xi
    assert nn.Dropout(prob=1.0)(x).to_numpy().max() == 0.0


def test_dropout_config_rejects_bad_prob() -> None:
    with pytest.raises(ember.ConfigError, match=r"prob must be in \[0, 1\]"):
        nn.DropoutConfig(1.5).init()


def test_layers_save_and_load_records(tmp_path: object) -> None:
    # a small model of nn layers round-trips through a record file (params and BatchNorm running stats)
    dev = plain_device("numpy")

    class Net(ember.Module):
        lin: nn.Linear
        bn: nn.BatchNorm
        drop: nn.Dropout

    def make() -> Net:
        return Net(lin=nn.LinearConfig(4, 3).init(dev), bn=nn.BatchNormConfig(3).init(dev),
                   drop=nn.DropoutConfig(0.1).init())

    net = make()
    net.bn.running_mean.update(tensor([1.0, 2.0, 3.0], dev))
    path = net.save_file(tmp_path / "net")  # type: ignore[operator]
    other = make().load_file(path)
    np.testing.assert_array_equal(param_np(other.lin.weight), param_np(net.lin.weight))
    np.testing.assert_array_equal(param_np(other.bn.running_mean), [1.0, 2.0, 3.0])
    assert other.num_params() == 4 * 3 + 3 + 3 + 3
