"""ONNX converters of family F5 (recurrent layers, control flow, sequences, signal, random) beyond the node
suite: LSTM and GRU values and gradients under ``Autodiff`` against ``torch.nn.LSTM``/``GRU`` with the same
weights, a ``torch.onnx.export`` of ``nn.LSTM``, and the attributes the suite leaves out (variable
``sequence_lens``, ``layout`` 1, ``clip``, activations with alpha/beta, ``input_forget``, GRU
``linear_before_reset`` 0 and 1, opset 7 versus 14) against onnxruntime."""

from __future__ import annotations

import io
import warnings
from typing import Any

import numpy as np
import pytest

from ember import Tensor
from ember.autodiff import Autodiff

onnx = pytest.importorskip("onnx")
from ember_import.onnx import load_model  # noqa: E402
from ember_import.onnx.conformance._runner import backend_device  # noqa: E402
from onnx import TensorProto, helper  # noqa: E402

RNG = np.random.default_rng(5)
_ONNX_TYPE = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.float64): TensorProto.DOUBLE,
              np.dtype(np.int64): TensorProto.INT64, np.dtype(np.int32): TensorProto.INT32,
              np.dtype(np.bool_): TensorProto.BOOL}


def _installed(name: str) -> bool:
    try:
        backend_device(name)
    except Exception:  # noqa: BLE001 - an uninstalled backend is not tested
        return False
    return True


@pytest.fixture(params=[pytest.param(n, marks=pytest.mark.skipif(not _installed(n), reason=f"no {n} backend"))
                        for n in ("numpy", "torch", "jax")])
def backend(request: Any) -> str:
    """A backend name (skipped where the backend is not installed)."""
    return str(request.param)


def _f32(*shape: int) -> np.ndarray:
    return (RNG.standard_normal(shape) * 0.5).astype(np.float32)


def _model(op: str, inputs: dict[str, np.ndarray | None], n_out: int, opset: int = 14, **attrs: Any) -> Any:
    """A one-node model; ``None`` inputs are omitted optional inputs. Outputs get inferred types."""
    names = [k if v is not None else "" for k, v in inputs.items()]
    while names and not names[-1]:
        names.pop()
    outs = [f"y{i}" for i in range(n_out)]
    node = helper.make_node(op, names, outs, **attrs)
    vis = [helper.make_tensor_value_info(k, _ONNX_TYPE[v.dtype], list(v.shape)) for k, v in inputs.items()
           if v is not None]
    graph = helper.make_graph([node], "g", vis, [helper.make_empty_tensor_value_info(o) for o in outs])
    model = onnx.shape_inference.infer_shapes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]))
    model.ir_version = 8
    return model


def _run(model: Any, inputs: dict[str, np.ndarray | None], backend: str) -> list[np.ndarray]:
    dev = backend_device(backend)
    out = load_model(model, dev)(*[Tensor.from_data(v, dev, dtype=str(v.dtype)) for v in inputs.values()
                                   if v is not None])
    return [o.to_numpy() for o in (out if isinstance(out, tuple) else (out,))]


def _ort(model: Any, inputs: dict[str, np.ndarray | None]) -> list[np.ndarray]:
    ort = pytest.importorskip("onnxruntime")
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return list(sess.run(None, {k: v for k, v in inputs.items() if v is not None}))


def _check_ort(model: Any, inputs: dict[str, np.ndarray | None], backend: str,
               want: list[np.ndarray] | None = None) -> None:
    got = _run(model, inputs, backend)
    want = _ort(model, inputs) if want is None else want
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------------------------------------- torch parity
def _reorder(t: np.ndarray, order: list[int], n: int) -> np.ndarray:
    """Gate blocks of dim 0 (``n`` of them) in ``order``: torch's gate order to ONNX's."""
    return np.concatenate([np.split(t, n, axis=0)[i] for i in order], axis=0)


#: op -> (torch class, gates, torch-to-ONNX gate order): LSTM i,f,g,o -> i,o,f,c; GRU r,z,n -> z,r,h
_TORCH = {"LSTM": ("LSTM", 4, [0, 3, 1, 2]), "GRU": ("GRU", 3, [1, 0, 2])}


@pytest.mark.parametrize("op,bidir", [("LSTM", False), ("LSTM", True), ("GRU", False), ("GRU", True)])
def test_matches_torch_values_and_gradients(backend: str, op: str, bidir: bool) -> None:
    """Y, Y_h (and Y_c) and the gradients of a weighted sum with respect to X, W, R, B, initial_h (and
    initial_c) equal torch.nn.LSTM/GRU's (GRU is ONNX's ``linear_before_reset=1``) on the same weights."""
    torch = pytest.importorskip("torch")
    tname, gates, order = _TORCH[op]
    seq, batch, inp, hid, nd = 5, 3, 4, 6, 2 if bidir else 1
    tm = getattr(torch.nn, tname)(inp, hid, bidirectional=bidir).double()
    sfx = ["", "_reverse"][:nd]
    w = np.stack([_reorder(getattr(tm, f"weight_ih_l0{s}").detach().numpy(), order, gates) for s in sfx])
    r = np.stack([_reorder(getattr(tm, f"weight_hh_l0{s}").detach().numpy(), order, gates) for s in sfx])
    b = np.stack([np.concatenate([_reorder(getattr(tm, f"bias_{k}_l0{s}").detach().numpy(), order, gates)
                                  for k in ("ih", "hh")]) for s in sfx])
    x, h0, c0 = _f32(seq, batch, inp), _f32(nd, batch, hid), _f32(nd, batch, hid)
    inputs: dict[str, np.ndarray | None] = {"x": x, "w": w.astype(np.float32), "r": r.astype(np.float32),
                                            "b": b.astype(np.float32), "lens": None, "h0": h0}
    if op == "LSTM":
        inputs["c0"] = c0
    attrs: dict[str, Any] = {"hidden_size": hid, "direction": "bidirectional" if bidir else "forward"}
    if op == "GRU":
        attrs["linear_before_reset"] = 1
    n_out = 3 if op == "LSTM" else 2
    model = _model(op, inputs, n_out, **attrs)

    # torch reference (float64)
    tx = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    th = torch.tensor(h0, dtype=torch.float64, requires_grad=True)
    tc = torch.tensor(c0, dtype=torch.float64, requires_grad=True)
    ty, state = tm(tx, (th, tc) if op == "LSTM" else th)
    t_outs = [ty.reshape(seq, batch, nd, hid).permute(0, 2, 1, 3)]
    t_outs += list(state) if op == "LSTM" else [state]
    weights = [RNG.standard_normal(tuple(o.shape)) for o in t_outs]
    loss = sum((o * torch.tensor(wt)).sum() for o, wt in zip(t_outs, weights))
    loss.backward()

    # Ember under Autodiff
    dev = Autodiff(backend_device(backend).backend).device()
    ts = {k: Tensor.from_data(v, dev, dtype="float32").require_grad() for k, v in inputs.items() if v is not None}
    outs = load_model(model, dev)(*ts.values())
    for o, t in zip(outs, t_outs):
        np.testing.assert_allclose(o.to_numpy(), t.detach().numpy(), rtol=1e-4, atol=1e-5)
    e_loss = outs[0].mul(Tensor.from_data(weights[0], dev)).sum()
    for o, wt in zip(outs[1:], weights[1:]):
        e_loss = e_loss + o.mul(Tensor.from_data(wt, dev)).sum()
    g = e_loss.backward()
    grads = {k: t.grad(g).to_numpy() for k, t in ts.items()}
    np.testing.assert_allclose(grads["x"], tx.grad.numpy(), rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(grads["h0"], th.grad.numpy(), rtol=1e-3, atol=1e-4)
    if op == "LSTM":
        np.testing.assert_allclose(grads["c0"], tc.grad.numpy(), rtol=1e-3, atol=1e-4)
    for key, tkey in (("w", "weight_ih"), ("r", "weight_hh")):
        want = np.stack([_reorder(getattr(tm, f"{tkey}_l0{s}").grad.numpy(), order, gates) for s in sfx])
        np.testing.assert_allclose(grads[key], want, rtol=1e-3, atol=1e-4)
    want_b = np.stack([np.concatenate([_reorder(getattr(tm, f"bias_{k}_l0{s}").grad.numpy(), order, gates)
                                       for k in ("ih", "hh")]) for s in sfx])
    np.testing.assert_allclose(grads["b"], want_b, rtol=1e-3, atol=1e-4)


def test_torch_export_lstm(backend: str) -> None:
    """``torch.onnx.export`` of ``nn.LSTM`` (layout 0, forward, initial states as inputs) runs like torch."""
    torch = pytest.importorskip("torch")
    from ember_import.onnx._registry import lookup

    tm = torch.nn.LSTM(3, 4).eval()
    x, h, c = torch.randn(5, 2, 3), torch.randn(1, 2, 4), torch.randn(1, 2, 4)
    f = io.BytesIO()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(tm, (x, (h, c)), f, dynamo=False, input_names=["x", "h0", "c0"])
    except Exception as exc:  # noqa: BLE001 - the legacy exporter may be gone from a future torch
        pytest.skip(f"torch.onnx.export failed: {exc}")
    model = onnx.load_from_string(f.getvalue())
    missing = {n.op_type for n in model.graph.node if lookup(n.op_type, n.domain, 17) is None}
    if missing:
        pytest.skip(f"the export uses ops not converted yet: {missing}")
    got = _run(model, {"x": x.numpy(), "h0": h.numpy(), "c0": c.numpy()}, backend)
    with torch.no_grad():
        y, (hn, cn) = tm(x, (h, c))
    for g, t in zip(got, (y, hn, cn)):
        np.testing.assert_allclose(g, t.numpy(), rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------------------------------------- attributes
def _weights(op: str, nd: int, inp: int, hid: int, peep: bool = False) -> dict[str, np.ndarray]:
    g = {"LSTM": 4, "GRU": 3, "RNN": 1}[op]
    out = {"w": _f32(nd, g * hid, inp), "r": _f32(nd, g * hid, hid), "b": _f32(nd, 2 * g * hid)}
    return out


_CASES: dict[str, tuple[str, dict[str, Any], bool]] = {
    # name: (op, attrs, with peepholes/initial states)
    "lstm_seq_lens_bidir": ("LSTM", {"direction": "bidirectional"}, True),
    "lstm_layout1_clip": ("LSTM", {"layout": 1, "clip": 0.3}, True),
    "lstm_input_forget_reverse": ("LSTM", {"input_forget": 1, "direction": "reverse"}, False),
    "lstm_activations": ("LSTM", {"activations": ["HardSigmoid", "LeakyRelu", "Softsign"],
                                  "activation_alpha": [0.3, 0.05], "activation_beta": [0.4]}, False),
    "gru_lbr0_seq_lens": ("GRU", {"linear_before_reset": 0, "direction": "bidirectional"}, True),
    "gru_lbr1_layout1": ("GRU", {"linear_before_reset": 1, "layout": 1}, True),
    "rnn_relu_seq_lens_reverse": ("RNN", {"activations": ["Relu"], "direction": "reverse"}, True),
    "rnn_affine_bidir": ("RNN", {"activations": ["Affine", "ScaledTanh"], "activation_alpha": [0.7, 1.1],
                                 "activation_beta": [0.2, 0.9], "direction": "bidirectional"}, False),
}


@pytest.mark.parametrize("name", sorted(_CASES))
def test_attributes_against_onnxruntime(backend: str, name: str) -> None:
    op, attrs, full = _CASES[name]
    nd = 2 if attrs.get("direction") == "bidirectional" else 1
    layout = attrs.get("layout", 0)
    seq, batch, inp, hid = 4, 3, 2, 5
    x = _f32(batch, seq, inp) if layout else _f32(seq, batch, inp)
    state = (batch, nd, hid) if layout else (nd, batch, hid)
    inputs: dict[str, np.ndarray | None] = {"x": x, **_weights(op, nd, inp, hid)}
    inputs["lens"] = np.array([4, 2, 3], np.int32) if full else None
    inputs["h0"] = _f32(*state) if full else None
    if op == "LSTM":
        inputs["c0"] = _f32(*state) if full else None
        inputs["p"] = _f32(nd, 3 * hid) if full else None
    n_out = 3 if op == "LSTM" else 2
    want = None
    if layout:  # onnxruntime refuses layout 1: its layout-0 run on swapped inputs, outputs swapped back
        swapped = {k: (v.swapaxes(0, 1) if k in ("x", "h0", "c0") and v is not None else v) for k, v in inputs.items()}
        attrs0 = {k: v for k, v in attrs.items() if k != "layout"}
        want = _ort(_model(op, swapped, n_out, hidden_size=hid, **attrs0), swapped)
        want = [want[0].transpose(2, 0, 1, 3)] + [w.swapaxes(0, 1) for w in want[1:]]
    _check_ort(_model(op, inputs, n_out, hidden_size=hid, **attrs), inputs, backend, want)


@pytest.mark.parametrize("opset", [7, 14])
def test_gru_opsets(backend: str, opset: int) -> None:
    """GRU at opset 7 (no layout) and 14 give onnxruntime's values, Y only (Y_h omitted)."""
    inputs: dict[str, np.ndarray | None] = {"x": _f32(3, 2, 4), **_weights("GRU", 1, 4, 3)}
    _check_ort(_model("GRU", inputs, 1, opset=opset, hidden_size=3), inputs, backend)
