"""ONNX import as a whole: parameters and constants, inputs and outputs, errors before anything runs
(unsupported operators listed at once, malformed files, external data confined to the model's folder),
constant folding and dead-node removal, gradients, records, ``onnx-info``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ember
from ember import DType, Tensor
from ember.autodiff import Autodiff
from ember.module import ParamId
from ember.record import NamedMpkFileRecorder

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from _onnx_backends import BACKENDS  # noqa: E402
from ember_import import ModelImportError  # noqa: E402
from ember_import._cli import main as cli_main  # noqa: E402
from ember_import.onnx import OnnxImportError, OnnxModule, load_model  # noqa: E402

RNG = np.random.default_rng(0)


@pytest.fixture(params=BACKENDS)
def dev(request: Any) -> Any:
    return ember.backend(request.param).device()


def _mlp(w: np.ndarray, b: np.ndarray, opset: int = 17, weights_as_inputs: bool = False) -> Any:
    """y = relu(x @ w + b): MatMul, Add, Relu, with ``w``/``b`` initializers."""
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["xw"], name="mm"),
        helper.make_node("Add", ["xw", "b"], ["h"], name="add"),
        helper.make_node("Relu", ["h"], ["y"], name="relu"),
    ]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", w.shape[0]])]
    if weights_as_inputs:  # old exporters list initializers as graph inputs too
        inputs += [helper.make_tensor_value_info("w", TensorProto.FLOAT, list(w.shape)),
                   helper.make_tensor_value_info("b", TensorProto.FLOAT, list(b.shape))]
    graph = helper.make_graph(
        nodes, "mlp", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", w.shape[1]])],
        initializer=[numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _np(t: Tensor) -> np.ndarray:
    return np.asarray(t.to_data().to_numpy(), dtype=np.float64)


W = RNG.standard_normal((4, 3)).astype(np.float32)
B = RNG.standard_normal(3).astype(np.float32)
X = RNG.standard_normal((5, 4)).astype(np.float32)


def _expected(x: np.ndarray) -> np.ndarray:
    return np.maximum(x.astype(np.float64) @ W.astype(np.float64) + B, 0.0)


# ---------------------------------------------------------------------------------------------- module
def test_float_initializers_become_params_with_readable_ids(dev: Any) -> None:
    m = load_model(_mlp(W, B), dev)
    assert isinstance(m, OnnxModule)
    assert sorted(m.weights) == ["b", "w"]
    assert m.weights["w"].id == ParamId("w")
    assert m.num_params() == W.size + B.size
    assert m.input_names == ("x",) and m.output_names == ("y",) and m.opset == 17
    y = m(Tensor.from_data(X, dev))
    np.testing.assert_allclose(_np(y), _expected(X), rtol=1e-5, atol=1e-6)


def test_initializers_listed_as_inputs_are_not_forward_arguments(dev: Any) -> None:
    m = load_model(_mlp(W, B, weights_as_inputs=True), dev)
    assert m.input_names == ("x",)
    np.testing.assert_allclose(_np(m(Tensor.from_data(X, dev))), _expected(X), rtol=1e-5, atol=1e-6)


def test_forward_checks_the_inputs(dev: Any) -> None:
    m = load_model(_mlp(W, B), dev)
    with pytest.raises(OnnxImportError, match=r"takes 1 input\(s\) \(x\), got 2"):
        m(Tensor.from_data(X, dev), Tensor.from_data(X, dev))
    with pytest.raises(OnnxImportError, match="declared x: float32"):
        m(Tensor.from_data(X.astype(np.int64), dev))
    with pytest.raises(OnnxImportError, match="must be an ember Tensor"):
        m(X)


def test_float64_input_is_cast_to_the_declared_type() -> None:
    dev = ember.backend("numpy").device()
    m = load_model(_mlp(W, B), dev)
    y = m(Tensor.from_data(X.astype(np.float64), dev, dtype="float64"))
    assert y.dtype is DType.FLOAT32


def test_gradients_flow_to_the_params(dev: Any) -> None:
    ad = Autodiff(dev.backend).device()
    m = load_model(_mlp(W, B), ad)
    y = m(Tensor.from_data(X, ad))
    grads = y.sum().backward()
    gw = _np(m.weights["w"].val().grad(grads))
    gb = _np(m.weights["b"].val().grad(grads))
    mask = (X.astype(np.float64) @ W + B) > 0
    np.testing.assert_allclose(gw, X.T.astype(np.float64) @ mask, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(gb, mask.sum(0), rtol=1e-6)


def test_record_round_trip(tmp_path: Path, dev: Any) -> None:
    m = load_model(_mlp(W, B), dev)
    m2 = m.map(lambda p: p.with_val(p.val() * 0.0))
    path = tmp_path / "model"
    m.save_file(path, NamedMpkFileRecorder())
    m3 = m2.load_file(path, NamedMpkFileRecorder(), dev)
    np.testing.assert_allclose(_np(m3(Tensor.from_data(X, dev))), _expected(X), rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------------------------- passes
def test_constant_subgraphs_fold_and_dead_nodes_go() -> None:
    dev = ember.backend("numpy").device()
    w = numpy_helper.from_array(np.array([2.0], np.float32), "w")
    nodes = [
        helper.make_node("Constant", [], ["k"], value=numpy_helper.from_array(np.array([3.0], np.float32))),
        helper.make_node("Constant", [], ["two"], value=numpy_helper.from_array(np.array([2.0], np.float32))),
        helper.make_node("Mul", ["k", "two"], ["k6"]),                 # constant: folded
        helper.make_node("Add", ["x", "k6"], ["y0"]),
        helper.make_node("Mul", ["y0", "w"], ["y"]),                   # a weight: trainable, never folded
        helper.make_node("Neg", ["x"], ["unused"]),                    # dead
    ]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])], initializer=[w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m = load_model(model, dev)
    assert [n.op_type for n in m.program.graph.nodes] == ["Add", "Mul"]
    assert list(m.weights) == ["w"]
    np.testing.assert_allclose(_np(m(Tensor.from_data(np.array([1.0, -1.0], np.float32), dev))), [14.0, 10.0])


# ---------------------------------------------------------------------------------------------- errors
def test_every_unsupported_operator_is_listed_at_once() -> None:
    nodes = [
        helper.make_node("FancyOp", ["x"], ["a"], name="f1", domain="com.example"),
        helper.make_node("FancyOp", ["a"], ["b"], name="f2", domain="com.example"),
        helper.make_node("OtherOp", ["b"], ["y"], name="o1", domain="com.example"),
    ]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)])
    with pytest.raises(OnnxImportError) as err:
        load_model(model, ember.backend("numpy").device())
    msg = str(err.value)
    assert "2 operator(s)" in msg
    assert "FancyOp (domain com.example) at opset 1: 2 node(s): 'f1', 'f2'" in msg
    assert "OtherOp (domain com.example) at opset 1: 1 node(s): 'o1'" in msg
    assert isinstance(err.value, ModelImportError) and isinstance(err.value, ember.EmberError)


def test_truncated_file(tmp_path: Path) -> None:
    data = _mlp(W, B).SerializeToString()
    path = tmp_path / "bad.onnx"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(OnnxImportError, match="not a readable ONNX model|checker"):
        load_model(path, ember.backend("numpy").device())


def test_checker_rejects_a_dangling_input() -> None:
    graph = helper.make_graph([helper.make_node("Relu", ["nowhere"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(OnnxImportError, match="checker rejects"):
        load_model(model, ember.backend("numpy").device())


@pytest.mark.parametrize("weights_as_inputs", [False, True])
def test_large_weights_are_checked_and_imported(dev: Any, weights_as_inputs: bool) -> None:
    # initializers above the skeleton threshold skip onnx's checker and shape inference: read and checked here
    w = RNG.standard_normal((200, 100)).astype(np.float32)
    b = RNG.standard_normal(100).astype(np.float32)
    m = load_model(_mlp(w, b, weights_as_inputs=weights_as_inputs), dev)
    x = RNG.standard_normal((2, 200)).astype(np.float32)
    np.testing.assert_allclose(_np(m(Tensor.from_data(x, dev))), np.maximum(x.astype(np.float64) @ w + b, 0),
                               rtol=1e-4, atol=1e-4)
    assert sorted(m.weights) == ["b", "w"] and m.input_names == ("x",)
    bad = _mlp(w, b)
    bad.graph.initializer[0].raw_data = bad.graph.initializer[0].raw_data[:-8]
    with pytest.raises(OnnxImportError, match="'w'.*could not be read"):
        load_model(bad, dev)


def test_absurd_dims_are_refused_without_allocating() -> None:
    t = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[1 << 30, 1 << 30], raw_data=b"\0" * 8)
    graph = helper.make_graph([helper.make_node("Identity", ["w"], ["y"])], "g", [],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], initializer=[t])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(OnnxImportError, match="absurd dims|could not be read|checker"):
        load_model(model.SerializeToString(), ember.backend("numpy").device())


def _external(tmp_path: Path, location: str) -> Path:
    model = _mlp(W, B)
    w = model.graph.initializer[0]
    w.ClearField("raw_data")
    w.ClearField("float_data")
    w.data_location = TensorProto.EXTERNAL
    for k, v in (("location", location), ("offset", "0"), ("length", str(W.nbytes))):
        e = w.external_data.add()
        e.key, e.value = k, v
    path = tmp_path / "model" / "m.onnx"
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(model.SerializeToString())
    return path


def test_external_data_is_read_from_the_models_folder(tmp_path: Path) -> None:
    path = _external(tmp_path, "m.onnx.data")
    (path.parent / "m.onnx.data").write_bytes(W.tobytes())
    dev = ember.backend("numpy").device()
    m = load_model(path, dev)
    np.testing.assert_array_equal(m.weights["w"].val().to_numpy(), W)


@pytest.mark.parametrize("location", ["../secret.bin", "/etc/passwd", "sub/../../secret.bin", "link.bin"])
def test_external_data_outside_the_folder_is_refused(tmp_path: Path, location: str) -> None:
    path = _external(tmp_path, location)
    secret = tmp_path / "secret.bin"
    secret.write_bytes(W.tobytes())
    if location == "link.bin":
        os.symlink(secret, path.parent / "link.bin")
    with pytest.raises(OnnxImportError, match="relative to the model's folder|leaves the model's folder"):
        load_model(path, ember.backend("numpy").device())


def test_external_data_from_bytes_needs_the_path(tmp_path: Path) -> None:
    path = _external(tmp_path, "m.onnx.data")
    with pytest.raises(OnnxImportError, match="load it from its path"):
        load_model(path.read_bytes(), ember.backend("numpy").device())


def test_external_data_shorter_than_declared(tmp_path: Path) -> None:
    path = _external(tmp_path, "m.onnx.data")
    (path.parent / "m.onnx.data").write_bytes(W.tobytes()[:10])
    with pytest.raises(OnnxImportError, match="outside"):
        load_model(path, ember.backend("numpy").device())


# ---------------------------------------------------------------------------------------------- onnx-info
def test_onnx_info(tmp_path: Path, capsys: Any) -> None:
    path = tmp_path / "m.onnx"
    onnx.save(_mlp(W, B), str(path))
    assert cli_main(["onnx-info", str(path)]) == 0
    out = capsys.readouterr().out
    assert "x: float32[batch, 4]" in out and "y: float32[batch, 3]" in out
    assert "MatMul" in out and "every operator is supported" in out
    model = _mlp(W, B)
    model.graph.node.append(helper.make_node("FancyOp", ["y"], ["z"], domain="com.example"))
    model.opset_import.append(helper.make_opsetid("com.example", 1))
    onnx.save(model, str(path))
    assert cli_main(["onnx-info", str(path)]) == 3
    assert "unsupported: FancyOp" in capsys.readouterr().out
