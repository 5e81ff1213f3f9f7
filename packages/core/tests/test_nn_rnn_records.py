"""Lstm's fused gate layout and the records of the per-gate layout (Burn's ``Lstm`` and Ember's before the fused
layout): such records load, and the loaded layer computes what the per-gate weights define (a numpy float64 LSTM,
Hochreiter & Schmidhuber 1997, PyTorch's formulas)."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

import ember
from ember import nn
from ember.record import DefaultFileRecorder

HERE = Path(__file__).resolve().parent
#: PyTorch's gate order, that of the fused blocks
ORDER = ("input_gate", "forget_gate", "cell_gate", "output_gate")


def _dev() -> ember.Device:
    return ember.backend("numpy", float_dtype="float64").device()


def _np(x: object) -> np.ndarray:
    if isinstance(x, dict):
        x = x["param"]
    if isinstance(x, ember.TensorData):
        return x.to_numpy()
    return np.asarray(x)


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-z))


def _reference(per_gate: dict, x: np.ndarray) -> np.ndarray:
    """A float64 LSTM from a per-gate record: every hidden state, ``[batch, seq, d]``."""

    def pre(gate: str, xt: np.ndarray, h: np.ndarray) -> np.ndarray:
        g = per_gate[gate]
        it, ht = g["input_transform"], g["hidden_transform"]
        return xt @ _np(it["weight"]) + _np(it["bias"]) + h @ _np(ht["weight"]) + _np(ht["bias"])

    d = _np(per_gate["input_gate"]["hidden_transform"]["weight"]).shape[0]
    h = np.zeros((x.shape[0], d))
    c = np.zeros_like(h)
    out = []
    for t in range(x.shape[1]):
        xt = x[:, t]
        i, f = _sigmoid(pre("input_gate", xt, h)), _sigmoid(pre("forget_gate", xt, h))
        g, o = np.tanh(pre("cell_gate", xt, h)), _sigmoid(pre("output_gate", xt, h))
        c = f * c + i * g
        h = o * np.tanh(c)
        out.append(h)
    return np.stack(out, 1)


def _per_gate_record(rng: np.random.Generator, d_in: int, d: int) -> dict:
    """A record in the per-gate layout (the structure ``into_record`` wrote before the fused layout, Burn's)."""

    def lin(n: int) -> dict:
        return {
            "weight": {"id": "w", "param": ember.TensorData(rng.standard_normal((n, d)))},
            "bias": {"id": "b", "param": ember.TensorData(rng.standard_normal(d))},
        }

    return {
        g: {"input_transform": lin(d_in), "hidden_transform": lin(d)}
        for g in ("input_gate", "forget_gate", "output_gate", "cell_gate")
    }


def test_per_gate_record_loads_into_fused_blocks() -> None:
    rng = np.random.default_rng(0)
    rec = _per_gate_record(rng, 3, 4)
    m = nn.LstmConfig(3, 4).init(_dev()).load_record(rec)
    w = m.weight_ih.val().to_data().to_numpy()
    assert w.shape == (3, 16)
    for k, gate in enumerate(ORDER):  # block k of the fused weights is gate k in PyTorch's order
        np.testing.assert_array_equal(w[:, 4 * k : 4 * k + 4], _np(rec[gate]["input_transform"]["weight"]))
        np.testing.assert_array_equal(
            m.bias_hh.val().to_data().to_numpy()[4 * k : 4 * k + 4], _np(rec[gate]["hidden_transform"]["bias"])
        )
    x = rng.standard_normal((2, 5, 3))
    out, _ = m(ember.Tensor.from_data(x, _dev()))
    np.testing.assert_allclose(out.to_data().to_numpy(), _reference(rec, x), rtol=1e-12, atol=1e-12)


def test_record_file_saved_in_the_per_gate_layout_loads() -> None:
    """``data/lstm_per_gate_layout.mpk`` was written by ``Lstm.save_file`` before the fused layout (3 -> 2)."""
    path = HERE / "data" / "lstm_per_gate_layout.mpk"
    raw = DefaultFileRecorder().load(path)
    assert set(raw) == {"input_gate", "forget_gate", "output_gate", "cell_gate"}
    m = nn.LstmConfig(3, 2).init(_dev()).load_file(path)
    x = np.random.default_rng(1).standard_normal((2, 4, 3))
    out, state = m(ember.Tensor.from_data(x, _dev()))
    ref = _reference(raw, x)
    np.testing.assert_allclose(out.to_data().to_numpy(), ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(state.hidden.to_data().to_numpy(), ref[:, -1], rtol=1e-12, atol=1e-12)


def test_fused_record_round_trips() -> None:
    m = nn.LstmConfig(3, 2).init(_dev())
    rec = m.into_record()
    assert set(rec) == {"weight_ih", "weight_hh", "bias_ih", "bias_hh"}
    m2 = nn.LstmConfig(3, 2).init(_dev()).load_record(rec)
    for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
        np.testing.assert_array_equal(
            getattr(m2, name).val().to_data().to_numpy(), getattr(m, name).val().to_data().to_numpy()
        )


def test_bilstm_per_gate_record_loads() -> None:
    rng = np.random.default_rng(2)
    rec = {"forward_lstm": _per_gate_record(rng, 3, 2), "reverse_lstm": _per_gate_record(rng, 3, 2)}
    m = nn.BiLstmConfig(3, 2).init(_dev()).load_record(rec)
    x = rng.standard_normal((2, 4, 3))
    out, _ = m(ember.Tensor.from_data(x, _dev()))
    got = out.to_data().to_numpy()
    np.testing.assert_allclose(got[..., :2], _reference(rec["forward_lstm"], x), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(
        got[..., 2:], _reference(rec["reverse_lstm"], x[:, ::-1])[:, ::-1], rtol=1e-12, atol=1e-12
    )


def test_incomplete_per_gate_record_is_reported() -> None:
    rec = _per_gate_record(np.random.default_rng(3), 3, 2)
    del rec["cell_gate"]["input_transform"]["weight"]
    with pytest.raises(ember.RecordError, match="missing from the record.*weight_ih"):
        nn.LstmConfig(3, 2).init(_dev()).load_record(rec)
    _, report = nn.LstmConfig(3, 2).init(_dev()).load_record(rec, strict=False)
    assert "weight_ih" in report.missing and "input_gate.input_transform.weight" in report.unused


def test_per_gate_attributes_are_deprecated_copies() -> None:
    m = nn.LstmConfig(3, 2).init(_dev())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gate = m.cell_gate
    assert any(issubclass(w.category, DeprecationWarning) for w in caught)
    np.testing.assert_array_equal(
        gate.hidden_transform.weight.val().to_data().to_numpy(), m.weight_hh.val().to_data().to_numpy()[:, 4:6]
    )


def _gru_reference(per_gate: dict, x: np.ndarray) -> np.ndarray:
    """A float64 GRU (Cho et al. 2014, PyTorch's reset-after form) from a per-gate record."""

    def part(gate: str, which: str, v: np.ndarray) -> np.ndarray:
        lin = per_gate[gate][which]
        return v @ _np(lin["weight"]) + _np(lin["bias"])

    d = _np(per_gate["new_gate"]["hidden_transform"]["weight"]).shape[0]
    h = np.zeros((x.shape[0], d))
    out = []
    for t in range(x.shape[1]):
        xt = x[:, t]
        z = _sigmoid(part("update_gate", "input_transform", xt) + part("update_gate", "hidden_transform", h))
        r = _sigmoid(part("reset_gate", "input_transform", xt) + part("reset_gate", "hidden_transform", h))
        n = np.tanh(part("new_gate", "input_transform", xt) + r * part("new_gate", "hidden_transform", h))
        h = (1 - z) * n + z * h
        out.append(h)
    return np.stack(out, 1)


def test_gru_record_file_saved_in_the_per_gate_layout_loads() -> None:
    """``data/gru_per_gate_layout.mpk`` was written by ``Gru.save_file`` before the fused layout (3 -> 2)."""
    path = HERE / "data" / "gru_per_gate_layout.mpk"
    raw = DefaultFileRecorder().load(path)
    assert set(raw) == {"update_gate", "reset_gate", "new_gate"}
    m = nn.GruConfig(3, 2).init(_dev()).load_file(path)
    w = m.weight_hh.val().to_data().to_numpy()
    for k, gate in enumerate(("reset_gate", "update_gate", "new_gate")):  # PyTorch's order r, z, n
        np.testing.assert_array_equal(w[:, 2 * k : 2 * k + 2], _np(raw[gate]["hidden_transform"]["weight"]))
    x = np.random.default_rng(4).standard_normal((2, 5, 3))
    out = m(ember.Tensor.from_data(x, _dev()))
    np.testing.assert_allclose(out.to_data().to_numpy(), _gru_reference(raw, x), rtol=1e-12, atol=1e-12)


def test_lstm_without_bias_matches_torch() -> None:
    torch = pytest.importorskip("torch")
    m = nn.LstmConfig(3, 4, bias=False).init(_dev())
    assert (
        m.bias_ih is None
        and m.bias_hh is None
        and {k for k, v in m.into_record().items() if v is not None} == {"weight_ih", "weight_hh"}
    )
    t = torch.nn.LSTM(3, 4, bias=False, batch_first=True).double()
    with torch.no_grad():
        t.weight_ih_l0.copy_(torch.from_numpy(m.weight_ih.val().to_data().to_numpy().T.copy()))
        t.weight_hh_l0.copy_(torch.from_numpy(m.weight_hh.val().to_data().to_numpy().T.copy()))
    x = np.random.default_rng(5).standard_normal((2, 6, 3))
    out, _ = m(ember.Tensor.from_data(x, _dev()))
    want, _ = t(torch.from_numpy(x))
    np.testing.assert_allclose(out.to_data().to_numpy(), want.detach().numpy(), rtol=1e-10, atol=1e-12)
