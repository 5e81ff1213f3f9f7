"""StackedLstm against PyTorch's ``nn.LSTM(num_layers=n)`` with the weights copied across (forward, final states
and gradients, on every backend) and against its own layers run one after the other; its config, records and
errors."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import ember
from _nn_support import BACKENDS, ad_device, assert_close, check_grads, param_np, tensor, to_np, torch_t
from ember import nn

torch = pytest.importorskip("torch")
rng = np.random.default_rng(5)


@pytest.fixture(params=BACKENDS)
def backend_name(request: pytest.FixtureRequest) -> str:
    return request.param  # type: ignore[no-any-return]


def _copy(m: nn.StackedLstm, t: Any) -> None:
    """Layer ``k``'s fused weights into ``t``'s ``*_l{k}`` (PyTorch's layout is Ember's transposed)."""
    with torch.no_grad():
        for k, layer in enumerate(m.layers):
            for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
                if getattr(layer, name) is not None:
                    v = param_np(getattr(layer, name))
                    getattr(t, f"{name}_l{k}").copy_(torch_t(v.T if name.startswith("weight") else v))


@pytest.mark.parametrize("bias", [True, False])
def test_stacked_lstm_matches_torch(backend_name: str, bias: bool) -> None:
    dev = ad_device(backend_name)
    m = nn.StackedLstmConfig(4, 6, 3, bias=bias).init(dev)
    assert [layer.weight_ih.shape for layer in m.layers] == [(4, 24), (6, 24), (6, 24)]
    t = torch.nn.LSTM(4, 6, num_layers=3, bias=bias, batch_first=True).double()
    _copy(m, t)
    xn = rng.standard_normal((2, 5, 4))
    h0, c0 = rng.standard_normal((3, 2, 6)), rng.standard_normal((3, 2, 6))
    x = tensor(xn, dev).require_grad()
    out, state = m(x, nn.LstmState(cell=tensor(c0, dev), hidden=tensor(h0, dev)))
    xt = torch_t(xn, True)
    out_t, (hn, cn) = t(xt, (torch_t(h0), torch_t(c0)))
    assert state.hidden.shape == state.cell.shape == (3, 2, 6)
    assert_close(state.hidden, hn)
    assert_close(state.cell, cn)
    names = ["weight_ih", "weight_hh"] + (["bias_ih", "bias_hh"] if bias else [])
    leaves = [("x", x)] + [(f"layers.{k}.{n}", getattr(layer, n).val()) for k, layer in enumerate(m.layers)
                           for n in names]
    torch_leaves = [xt] + [getattr(t, f"{n}_l{k}") for k in range(3) for n in names]
    transforms = [None] + [(lambda g: g.T) if n.startswith("weight") else None for _ in range(3) for n in names]
    check_grads(out, out_t, leaves, torch_leaves, transforms)


def test_stacked_lstm_equals_its_layers_one_after_the_other(backend_name: str) -> None:
    """The stack (one primitive call) and its layers' own forwards chained, with and without an initial state:
    the same output and final states, and the same gradients of every parameter."""
    dev = ad_device(backend_name)
    m = nn.StackedLstmConfig(3, 5, 2).init(dev)
    x = tensor(rng.standard_normal((4, 6, 3)), dev)
    h0, c0 = tensor(rng.standard_normal((2, 4, 5)), dev), tensor(rng.standard_normal((2, 4, 5)), dev)
    for state in (None, nn.LstmState(cell=c0, hidden=h0)):
        y, st = m(x, state)
        z, hs, cs = x, [], []
        for k, layer in enumerate(m.layers):
            sk = None if state is None else nn.LstmState(cell=c0.slice([(k, k + 1)]).squeeze_dim(0),
                                                         hidden=h0.slice([(k, k + 1)]).squeeze_dim(0))
            z, s = layer(z, sk)
            hs.append(s.hidden)
            cs.append(s.cell)
        assert_close(y, to_np(z))
        assert_close(st.hidden, np.stack([to_np(h) for h in hs]))
        assert_close(st.cell, np.stack([to_np(c) for c in cs]))
        g1 = (y * y).sum().add((st.cell * st.hidden).sum()).backward()
        g2 = (z * z).sum().add((ember.Tensor.stack(cs, 0) * ember.Tensor.stack(hs, 0)).sum()).backward()
        for p in m.params():
            assert_close(p.val().grad(g1), to_np(p.val().grad(g2)))


def test_stacked_lstm_config_record_and_errors() -> None:
    dev = ember.backend("numpy").device()
    cfg = nn.StackedLstmConfig(4, 6, 2, bias=False)
    assert nn.StackedLstmConfig.from_dict(cfg.to_dict()) == cfg
    assert cfg.to_dict()["num_layers"] == 2
    m = cfg.init(dev)
    assert all(layer.bias_ih is None and layer.bias_hh is None for layer in m.layers)
    record = m.into_record()
    assert sorted(record["layers"][1]) == sorted(nn.LstmConfig(6, 6, bias=False).init(dev).into_record())
    assert to_np(m.load_record(record).layers[1].weight_hh.val()).tolist() == param_np(m.layers[1].weight_hh).tolist()
    with pytest.raises(ember.ConfigError, match=r"StackedLstmConfig.init: num_layers must be >= 1, got 0"):
        nn.StackedLstmConfig(4, 6, 0).init(dev)
    with pytest.raises(ember.ConfigError, match=r"d_input \(0\) and d_hidden \(6\) must be >= 1"):
        nn.StackedLstmConfig(0, 6, 2).init(dev)
    with pytest.raises(ember.ShapeError, match=r"StackedLstm: expected input of shape \[batch, seq_length, d_input\] "
                                                r"with d_input = 4, got shape \[2, 3, 5\]"):
        m(tensor(np.zeros((2, 3, 5)), dev))
    with pytest.raises(ember.ShapeError, match=r"StackedLstm: expected input .* \(rank 3\), got shape \[3, 4\]"):
        m(tensor(np.zeros((3, 4)), dev))
    h = tensor(np.zeros((2, 6)), dev)
    with pytest.raises(ember.ShapeError, match=r"state.hidden must have shape \[num_layers, batch, d_hidden\] = "
                                                r"\[2, 2, 6\], got \[2, 6\]; stack the layers' states"):
        m(tensor(np.zeros((2, 3, 4)), dev), nn.LstmState(cell=h, hidden=h))
    with pytest.raises(ember.ShapeError, match="holds no layer"):
        nn.StackedLstm(layers=[])(tensor(np.zeros((2, 3, 4)), dev))
