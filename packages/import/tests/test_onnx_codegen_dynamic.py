"""ModelGen on values read from the data when the generated ``forward`` runs (issue 30): a ``Reduce*``'s ``axes``,
``TopK``'s ``k``, ``Trilu``'s ``k``, ``Unsqueeze``/``Squeeze``'s ``axes`` and ``OneHot``'s depth as graph inputs.

The generated code reads them on the host (``axes.tolist()``) and passes them to the Tensor-API call, so one
generated file must give onnxruntime's answer for *several different* values of that input (the trace's own
stand-in values differ from all of them); a converter branch that the value decides is still refused
(``test_onnx_codegen_slice_reduce.py``).
"""

from __future__ import annotations

import importlib.util
import shutil
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
from _codegen_support import generate_numpy, one_node_model  # noqa: E402

h = onnx.helper
TP = onnx.TensorProto
ROOT = Path(__file__).resolve().parents[3]
_NP = {TP.FLOAT: np.float32, TP.INT64: np.int64, TP.DOUBLE: np.float64}


_model = one_node_model


def _generate(model: Any, tmp: Path, tag: str) -> tuple[Any, str]:
    net, _, text = generate_numpy(model, tmp, tag, "_generated_dyn")
    return net, text


def _run(net: Any, model: Any, feeds: dict[str, np.ndarray]) -> None:
    """The generated module's output equals onnxruntime's on ``feeds``."""
    dev = ember.backend("numpy").device()
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    args = [Tensor.from_data(v, dev, dtype=str(v.dtype)) for v in feeds.values()]
    got = np.asarray(net(*args).to_data().to_numpy())
    assert got.shape == want.shape, (got.shape, want.shape, feeds)
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=1e-5, atol=1e-5)


X = np.random.default_rng(0).standard_normal((3, 4, 5)).astype(np.float32)


@pytest.mark.parametrize("op", ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceL2", "ReduceLogSumExp"])
@pytest.mark.parametrize("keepdims", [0, 1])
def test_reduce_axes_input_is_read_when_forward_runs(op: str, keepdims: int, tmp_path: Path) -> None:
    node = h.make_node(op, ["x", "axes"], ["y"], keepdims=keepdims)
    model = _model(node, [("x", TP.FLOAT, [3, 4, 5]), ("axes", TP.INT64, [2])], ("y", TP.FLOAT, 3 if keepdims else 1))
    net, src = _generate(model, tmp_path, f"{op}_{keepdims}")
    assert ".tolist()" in src  # a host read in forward, not the trace's axes as constants
    for axes in ([0, 1], [2, 0], [-1, -2], [1, -3]):
        _run(net, model, {"x": X, "axes": np.array(axes, np.int64)})


def test_topk_k_input_gives_an_output_size_known_when_forward_runs(tmp_path: Path) -> None:
    node = h.make_node("TopK", ["x", "k"], ["v", "i"], axis=-1)
    model = _model(node, [("x", TP.FLOAT, [3, 4, 5]), ("k", TP.INT64, [1])], ("v", TP.FLOAT, 3))
    net, _ = _generate(model, tmp_path, "topk")
    for k in (1, 3, 5, 0):
        _run(net, model, {"x": X, "k": np.array([k], np.int64)})


@pytest.mark.parametrize("upper", [0, 1])
def test_trilu_diagonal_input(upper: int, tmp_path: Path) -> None:
    node = h.make_node("Trilu", ["x", "k"], ["y"], upper=upper)
    model = _model(node, [("x", TP.FLOAT, [3, 4, 5]), ("k", TP.INT64, [])], ("y", TP.FLOAT, 3), opset=14)
    net, _ = _generate(model, tmp_path, f"trilu_{upper}")
    for k in (0, 2, -1, -7, 9):
        _run(net, model, {"x": X, "k": np.array(k, np.int64)})


def test_unsqueeze_and_squeeze_axes_inputs(tmp_path: Path) -> None:
    node = h.make_node("Unsqueeze", ["x", "axes"], ["y"])
    model = _model(node, [("x", TP.FLOAT, [3, 4, 5]), ("axes", TP.INT64, [2])], ("y", TP.FLOAT, 5))
    net, _ = _generate(model, tmp_path, "unsqueeze")
    for axes in ([0, 4], [3, 1], [-1, 0], [2, -2]):
        _run(net, model, {"x": X, "axes": np.array(axes, np.int64)})
    ones = np.random.default_rng(1).standard_normal((1, 4, 1)).astype(np.float32)
    node = h.make_node("Squeeze", ["x", "axes"], ["y"])
    model = _model(node, [("x", TP.FLOAT, [1, 4, 1]), ("axes", TP.INT64, [1])], ("y", TP.FLOAT, 2))
    net, _ = _generate(model, tmp_path, "squeeze")
    for axes in ([0], [2], [-1], [-3]):
        _run(net, model, {"x": ones, "axes": np.array(axes, np.int64)})


@pytest.mark.parametrize("depth_type", [TP.INT64, TP.FLOAT])
def test_onehot_depth_input(depth_type: int, tmp_path: Path) -> None:
    # a float depth is read as a float and truncated in forward (``int(sizes[0])``)
    node = h.make_node("OneHot", ["i", "depth", "values"], ["y"], axis=1)
    model = _model(
        node,
        [("i", TP.INT64, [4]), ("depth", depth_type, [1]), ("values", TP.FLOAT, [2])],
        ("y", TP.FLOAT, 2),
        opset=11,
    )
    net, src = _generate(model, tmp_path, f"onehot_{depth_type}")
    assert ("int(" in src) == (depth_type == TP.FLOAT)
    idx = np.array([0, 2, -1, 5], np.int64)
    for depth in (3, 6, 1):
        feeds = {"i": idx, "depth": np.array([depth], _NP[depth_type]), "values": np.array([0.0, 2.0], np.float32)}
        _run(net, model, feeds)


@pytest.mark.skipif(
    shutil.which("ruff") is None and importlib.util.find_spec("ruff") is None, reason="ruff is not installed"
)
def test_generated_code_with_host_reads_passes_ruff(tmp_path: Path) -> None:
    node = h.make_node("ReduceSum", ["x", "axes"], ["y"], keepdims=0)
    model = _model(node, [("x", TP.FLOAT, [3, 4, 5]), ("axes", TP.INT64, [2])], ("y", TP.FLOAT, 1))
    _generate(model, tmp_path, "ruff")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "ruff",
            "check",
            "--no-cache",
            "--config",
            str(ROOT / "pyproject.toml"),
            str(tmp_path / "ruff" / "model.py"),
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect"])
def test_pad_amounts_and_fill_value_inputs(mode: str, tmp_path: Path) -> None:
    # negative amounts crop (Tensor.pad crops them first), the fill value is a float read when forward runs
    node = h.make_node("Pad", ["x", "pads", "value"], ["y"], mode=mode)
    model = _model(
        node, [("x", TP.FLOAT, [3, 4, 5]), ("pads", TP.INT64, [6]), ("value", TP.FLOAT, [])], ("y", TP.FLOAT, 3)
    )
    net, src = _generate(model, tmp_path, f"pad_{mode}")
    for pads, value in (([0, 1, 2, 1, 0, 2], 1.5), ([1, -1, 0, 0, 2, -3], -2.0), ([0, 0, 0, 0, 0, 0], 0.25)):
        _run(net, model, {"x": X, "pads": np.array(pads, np.int64), "value": np.array(value, np.float32)})


def test_center_crop_pad_shape_input_crops_and_pads(tmp_path: Path) -> None:
    node = h.make_node("CenterCropPad", ["x", "shape"], ["y"])
    model = _model(node, [("x", TP.FLOAT, [3, 4, 5]), ("shape", TP.INT64, [3])], ("y", TP.FLOAT, 3))
    net, _ = _generate(model, tmp_path, "ccp")
    for shape in ([3, 4, 5], [1, 7, 2], [6, 3, 8], [2, 1, 1]):
        _run(net, model, {"x": X, "shape": np.array(shape, np.int64)})
