"""ModelGen's recurrent layers (issue 30): ONNX ``LSTM`` / ``GRU`` nodes become ``nn.Lstm`` / ``nn.BiLstm`` /
``nn.Gru`` fields in every direction (forward, reverse, bidirectional), layout (seq-first, batch-first), with or
without biases and initial states, and GRU's ``linear_before_reset`` 0 or 1; nodes the layers cannot express
(``clip``, custom activations, peepholes, ``sequence_lens``, ``input_forget``) are traced through their converter
and still generate.

Expected outputs come from onnxruntime (seq-first layout) or ONNX's reference evaluator (``onnx.reference``, for
the batch-first layout onnxruntime's CPU kernels refuse), on two inputs of different batch sizes and values: the
generated code is not specialised on the trace's input. Every generated file passes ruff; mypy on three of them
runs with ``EMBER_SLOW_TESTS=1``.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ember
from ember import Tensor

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

from ember_import.onnx import ModelGen  # noqa: E402

SEQ, D_IN, HIDDEN = 5, 3, 4
ROOT = Path(__file__).resolve().parents[3]


def _model(op: str, direction: str = "forward", layout: int = 0, bias: bool = True, h0: bool = False,
           c0: bool = False, seed: int = 0, **attrs: Any) -> Any:
    """One ``op`` node on random weights; inputs ``X`` (dynamic batch) and the initial states asked for; every
    output of the node is a graph output."""
    rng = np.random.default_rng(seed)
    nd = 2 if direction == "bidirectional" else 1
    gates = 4 if op == "LSTM" else 3
    inits = [helper.make_tensor("W", TensorProto.FLOAT, [nd, gates * HIDDEN, D_IN],
                                rng.uniform(-0.6, 0.6, nd * gates * HIDDEN * D_IN).tolist()),
             helper.make_tensor("R", TensorProto.FLOAT, [nd, gates * HIDDEN, HIDDEN],
                                rng.uniform(-0.6, 0.6, nd * gates * HIDDEN * HIDDEN).tolist())]
    names = ["X", "W", "R"]
    if bias:
        inits.append(helper.make_tensor("B", TensorProto.FLOAT, [nd, 2 * gates * HIDDEN],
                                        rng.uniform(-0.5, 0.5, nd * 2 * gates * HIDDEN).tolist()))
    names.append("B" if bias else "")
    x_shape = ["batch", SEQ, D_IN] if layout else [SEQ, "batch", D_IN]
    st_shape = ["batch", nd, HIDDEN] if layout else [nd, "batch", HIDDEN]
    inputs = [helper.make_tensor_value_info("X", TensorProto.FLOAT, x_shape)]
    names.append("")  # sequence_lens
    for flag, name in ((h0, "H0"), (c0, "C0")):
        if flag:
            inputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, st_shape))
    names.append("H0" if h0 else "")
    if op == "LSTM":
        names.append("C0" if c0 else "")
    while names and not names[-1]:
        names.pop()
    outs = ["Y", "Y_h"] + (["Y_c"] if op == "LSTM" else [])
    node = helper.make_node(op, names, outs, hidden_size=HIDDEN, direction=direction, layout=layout, **attrs)
    y_shape = ["batch", SEQ, nd, HIDDEN] if layout else [SEQ, nd, "batch", HIDDEN]
    shapes = [y_shape, st_shape, st_shape]
    graph = helper.make_graph([node], "rnn", inputs, [helper.make_tensor_value_info(o, TensorProto.FLOAT, shape)
                                                      for o, shape in zip(outs, shapes)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])


def _feeds(model: Any, batch: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    out = {}
    for vi in model.graph.input:
        dims = [batch if d.dim_param else d.dim_value for d in vi.type.tensor_type.shape.dim]
        out[vi.name] = rng.standard_normal(dims).astype(np.float32)
    return out


def _expected(model: Any, feeds: dict[str, np.ndarray], layout: int) -> list[np.ndarray]:
    if layout:  # onnxruntime's CPU kernels refuse layout=1: ONNX's reference implementation
        return [np.asarray(v) for v in ReferenceEvaluator(model).run(None, feeds)]
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def _generate(model: Any, tmp: Path) -> tuple[Any, str]:
    path = tmp / "rnn.onnx"
    onnx.save(model, str(path))
    py = ModelGen().input(path).out_dir(tmp / "gen").run()
    if importlib.util.find_spec("ruff") is not None:
        done = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--config",
                               str(ROOT / "pyproject.toml"), str(py)], capture_output=True, text=True)
        assert done.returncode == 0, done.stdout + done.stderr
    spec = importlib.util.spec_from_file_location(f"_generated_rnn_{tmp.name}", py)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    dev = ember.backend("numpy").device()
    return mod.Model.from_record(str(py.parent / "model.mpk"), dev), py.read_text()


def _check(net: Any, model: Any, layout: int) -> None:
    dev = ember.backend("numpy").device()
    for batch, seed in ((2, 1), (3, 2)):  # the trace ran at batch 2 on other values
        feeds = _feeds(model, batch, seed)
        want = _expected(model, feeds, layout)
        got = net(*[Tensor.from_data(feeds[vi.name], dev) for vi in model.graph.input])
        got = got if isinstance(got, tuple) else (got,)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert list(g.shape) == list(w.shape)
            np.testing.assert_allclose(np.asarray(g.to_numpy(), np.float64), w, rtol=1e-5, atol=1e-5)


CASES = [(op, d, lay) for op in ("LSTM", "GRU") for d in ("forward", "reverse", "bidirectional") for lay in (0, 1)]


@pytest.mark.parametrize(("op", "direction", "layout"), CASES, ids=[f"{o}-{d}-l{lay}" for o, d, lay in CASES])
def test_every_direction_and_layout_becomes_a_layer(op: str, direction: str, layout: int, tmp_path: Path) -> None:
    model = _model(op, direction, layout, h0=True, c0=op == "LSTM")
    net, text = _generate(model, tmp_path)
    if op == "LSTM":
        assert ("nn.BiLstm" if direction == "bidirectional" else "nn.Lstm") in text
    else:
        assert text.count(": nn.Gru") == (2 if direction == "bidirectional" else 1)
    assert "self.w.val()" not in text and ".matmul(" not in text  # no traced recurrence beside the layer
    _check(net, model, layout)


@pytest.mark.parametrize("linear_before_reset", [0, 1])
@pytest.mark.parametrize("bias", [True, False])
def test_gru_reset_placement_and_bias(linear_before_reset: int, bias: bool, tmp_path: Path) -> None:
    model = _model("GRU", "bidirectional", bias=bias, linear_before_reset=linear_before_reset)
    net, text = _generate(model, tmp_path)
    assert ("reset_after=False" in text) == (linear_before_reset == 0)
    assert ("bias=False" in text) == (not bias)
    _check(net, model, 0)


@pytest.mark.parametrize("c0", [True, False])
def test_lstm_partial_initial_state(c0: bool, tmp_path: Path) -> None:
    model = _model("LSTM", "forward", h0=not c0, c0=c0, bias=False)
    net, text = _generate(model, tmp_path)
    assert "nn.LstmState(" in text and ".zeros_like()" in text
    _check(net, model, 0)


def test_explicit_default_activations_map(tmp_path: Path) -> None:
    model = _model("LSTM", "bidirectional", activations=["Sigmoid", "Tanh", "Tanh"] * 2)
    net, text = _generate(model, tmp_path)
    assert "nn.BiLstm" in text
    _check(net, model, 0)


UNMAPPED = [
    ("LSTM", {"clip": 0.5}),
    ("GRU", {"clip": 0.3}),
    ("LSTM", {"activations": ["HardSigmoid", "Tanh", "Relu"], "activation_alpha": [0.3], "activation_beta": [0.4]}),
    ("GRU", {"activations": ["Sigmoid", "Relu"]}),
    ("LSTM", {"input_forget": 1}),
]


@pytest.mark.parametrize(("op", "attrs"), UNMAPPED, ids=[f"{o}-{next(iter(a))}" for o, a in UNMAPPED])
def test_attributes_without_a_layer_are_traced(op: str, attrs: dict[str, Any], tmp_path: Path) -> None:
    model = _model(op, "forward", h0=True, **attrs)
    net, text = _generate(model, tmp_path)
    assert "nn.Lstm" not in text and "nn.Gru" not in text
    _check(net, model, 0)


def test_exporter_transposes_fold_into_the_layer(tmp_path: Path) -> None:
    """PyTorch's pattern: ``X = Transpose(x, [1, 0, 2])``, zero ``initial_h`` from ``ConstantOfShape``, ``Y`` ->
    ``Transpose([0, 2, 1, 3])`` -> ``Reshape([0, 0, -1])`` -> ``Transpose([1, 0, 2])``: the layer reads and
    returns the batch-first tensors."""
    torch = pytest.importorskip("torch")
    import warnings

    class Net(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lstm = torch.nn.LSTM(D_IN, HIDDEN, num_layers=2, batch_first=True, bidirectional=True)

        def forward(self, x: Any) -> Any:
            return self.lstm(x)[0]

    torch.manual_seed(0)
    path = tmp_path / "lstm.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(Net().eval(), (torch.zeros(2, SEQ, D_IN),), str(path), dynamo=False, opset_version=17,
                          input_names=["x"], dynamic_axes={"x": {0: "batch"}})
    model = onnx.load(str(path))
    net, text = _generate(model, tmp_path)
    body = text.split("def forward", 1)[1].split("return", 1)[0]
    assert text.count(": nn.BiLstm") == 2
    assert "swap_dims" not in body and "permute" not in body and "reshape" not in body
    _check(net, model, 0)


@pytest.mark.skipif(importlib.util.find_spec("mypy") is None, reason="mypy is not installed")
@pytest.mark.skipif(not os.environ.get("EMBER_SLOW_TESTS"), reason="three mypy runs (~1 min): EMBER_SLOW_TESTS=1")
def test_generated_recurrent_code_passes_mypy(tmp_path: Path) -> None:
    files = []
    for op, direction, layout in (("LSTM", "bidirectional", 1), ("LSTM", "reverse", 0), ("GRU", "bidirectional", 0)):
        sub = tmp_path / f"{op}_{direction}_{layout}"
        sub.mkdir()
        model = _model(op, direction, layout, h0=True, c0=op == "LSTM")
        onnx.save(model, str(sub / "rnn.onnx"))
        files.append(str(ModelGen().input(sub / "rnn.onnx").out_dir(sub / "gen").run()))
    for py in files:
        done = subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"), py],
                              capture_output=True, text=True, cwd=Path(py).parent)
        assert done.returncode == 0, done.stdout + done.stderr
