"""Lstm, BiLstm and Gru against PyTorch's ``nn.LSTM`` / ``nn.GRU`` with the weights copied across
(Burn's per-gate layout <-> PyTorch's stacked layout), forward and gradients, on every backend."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from _nn_support import (
    BACKENDS,
    ad_device,
    assert_close,
    check_grads,
    param_np,
    tensor,
    torch_t,
)
from ember import nn

torch = pytest.importorskip("torch")
rng = np.random.default_rng(3)


@pytest.fixture(params=BACKENDS)
def backend_name(request: pytest.FixtureRequest) -> str:
    return request.param  # type: ignore[no-any-return]


def _copy_lstm(m: nn.Lstm, t: torch.nn.LSTM, suffix: str = "") -> None:
    # the fused layout is PyTorch's transposed, same gate order i, f, g, o
    with torch.no_grad():
        for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
            v = param_np(getattr(m, name))
            getattr(t, f"{name}_l0{suffix}").copy_(torch_t(v.T if name.startswith("weight") else v))


def test_lstm_matches_torch(backend_name: str) -> None:
    dev = ad_device(backend_name)
    m = nn.LstmConfig(4, 6).init(dev)
    assert m.weight_ih.shape == (4, 24) and m.weight_hh.shape == (6, 24) and m.bias_ih.shape == (24,)
    t = torch.nn.LSTM(4, 6, batch_first=True).double()
    _copy_lstm(m, t)
    xn = rng.standard_normal((3, 7, 4))
    h0, c0 = rng.standard_normal((3, 6)), rng.standard_normal((3, 6))
    x = tensor(xn, dev).require_grad()
    out, state = m(x, nn.LstmState(cell=tensor(c0, dev), hidden=tensor(h0, dev)))
    xt = torch_t(xn, True)
    out_t, (hn, cn) = t(xt, (torch_t(h0)[None], torch_t(c0)[None]))
    assert_close(state.hidden, hn[0])
    assert_close(state.cell, cn[0])
    check_grads(out, out_t, [("x", x), ("weight_ih", m.weight_ih.val()), ("weight_hh", m.weight_hh.val()),
                             ("bias_ih", m.bias_ih.val()), ("bias_hh", m.bias_hh.val())],
                [xt, t.weight_ih_l0, t.weight_hh_l0, t.bias_ih_l0, t.bias_hh_l0],
                [None, lambda g: g.T, lambda g: g.T, None, None])


def test_bilstm_matches_torch(backend_name: str) -> None:
    dev = ad_device(backend_name)
    m = nn.BiLstmConfig(3, 5).init(dev)
    t = torch.nn.LSTM(3, 5, batch_first=True, bidirectional=True).double()
    _copy_lstm(m.forward_lstm, t)
    _copy_lstm(m.reverse_lstm, t, "_reverse")
    xn = rng.standard_normal((2, 6, 3))
    x = tensor(xn, dev).require_grad()
    out, state = m(x)
    xt = torch_t(xn, True)
    out_t, (hn, cn) = t(xt)
    assert out.shape == (2, 6, 10) and state.hidden.shape == (2, 2, 5)
    assert_close(state.hidden, hn)
    assert_close(state.cell, cn)
    check_grads(out, out_t, [("x", x), ("reverse weight_hh", m.reverse_lstm.weight_hh.val())],
                [xt, t.weight_hh_l0_reverse], [None, lambda g: g.T])


@pytest.mark.parametrize("reset_after", [True, False])
def test_gru_matches_reference(backend_name: str, reset_after: bool) -> None:
    dev = ad_device(backend_name)
    m = nn.GruConfig(4, 5, reset_after=reset_after).init(dev)
    xn = rng.standard_normal((2, 6, 4))
    h0 = rng.standard_normal((2, 5))
    x = tensor(xn, dev).require_grad()
    out = m(x, tensor(h0, dev))
    xt = torch_t(xn, True)
    assert m.weight_ih.shape == (4, 15) and m.weight_hh.shape == (5, 15) and m.bias_hh.shape == (15,)
    if reset_after:  # PyTorch's nn.GRU: the fused weights are its own transposed (same gate order r, z, n)
        t = torch.nn.GRU(4, 5, batch_first=True).double()
        with torch.no_grad():
            for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
                v = param_np(getattr(m, name))
                getattr(t, f"{name}_l0").copy_(torch_t(v.T if name.startswith("weight") else v))
        expected, _ = t(xt, torch_t(h0)[None])
        check_grads(out, expected, [("x", x), ("weight_ih", m.weight_ih.val()), ("weight_hh", m.weight_hh.val()),
                                    ("bias_hh", m.bias_hh.val())],
                    [xt, t.weight_ih_l0, t.weight_hh_l0, t.bias_hh_l0], [None, lambda g: g.T, lambda g: g.T, None])
        return
    # Cho et al.'s form, written out in torch from the fused blocks (r, z, n)
    wi, wh = torch_t(param_np(m.weight_ih)), torch_t(param_np(m.weight_hh))
    bi, bh = torch_t(param_np(m.bias_ih)), torch_t(param_np(m.bias_hh))

    def lin(k: int, w: torch.Tensor, b: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return v @ w[:, 5 * k:5 * k + 5] + b[5 * k:5 * k + 5]

    h = torch_t(h0)
    outs = []
    for s in range(6):
        xs = xt[:, s]
        r = torch.sigmoid(lin(0, wi, bi, xs) + lin(0, wh, bh, h))
        z = torch.sigmoid(lin(1, wi, bi, xs) + lin(1, wh, bh, h))
        n = torch.tanh(lin(2, wi, bi, xs) + lin(2, wh, bh, r * h))
        h = (1 - z) * n + z * h
        outs.append(h)
    expected = torch.stack(outs, 1)
    check_grads(out, expected, [("x", x)], [xt])


def test_rnn_errors() -> None:
    dev = ember.backend("numpy").device()
    lstm = nn.LstmConfig(4, 6).init(dev)
    with pytest.raises(ember.ShapeError, match=r"Lstm: expected input of shape \[batch, seq_length, d_input\] "
                                                r"with d_input = 4, got shape \[2, 3, 5\]"):
        lstm(tensor(np.zeros((2, 3, 5)), dev))
    with pytest.raises(ember.ShapeError, match=r"Gru: expected input of shape \[batch, seq_length, d_input\] "
                                                r"\(rank 3\), got shape \[3, 4\]"):
        nn.GruConfig(4, 6).init(dev)(tensor(np.zeros((3, 4)), dev))
