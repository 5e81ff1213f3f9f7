"""ModelGen on quantized ONNX models (``codegen/_quant_recognizers.py``): QDQ ``MatMul`` / ``Gemm`` / ``Conv`` become
``ember.quantization`` layers holding the int8 weights; the generated code equals ``load_model`` and onnxruntime on
several inputs, passes ruff and mypy, and its record stores int8; other quantized nodes are refused."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ember
from _onnx_backends import BACKENDS

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from ember.quantization import QuantizedConv1d, QuantizedConv2d, QuantizedLinear, QuantizedTensor  # noqa: E402
from ember_import.onnx import ModelGen, ModelGenError, load_model  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
rng = np.random.default_rng(30)


def _model(nodes: list, inits: list, x_shape: list, y_rank: int) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes,
        "q",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None] * y_rank)],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    onnx.checker.check_model(model)
    return model


def _weight(name: str, shape: tuple[int, ...], axis_n: int, uint8: bool) -> tuple[list, str]:
    """Initializers of a quantized weight ``name`` (int8 symmetric per channel, or uint8 per tensor with a zero
    point) and the name of its dequantized value."""
    if uint8:
        w = rng.integers(0, 256, shape).astype(np.uint8)
        scale, zp = np.array(0.01, np.float32), np.array(131, np.uint8)
    else:
        w = rng.integers(-127, 128, shape).astype(np.int8)
        scale, zp = rng.uniform(0.005, 0.02, axis_n).astype(np.float32), np.zeros(axis_n, np.int8)
    inits = [
        numpy_helper.from_array(w, name),
        numpy_helper.from_array(scale, f"{name}_scale"),
        numpy_helper.from_array(zp, f"{name}_zp"),
    ]
    return inits, f"{name}_dq"


def _dq(name: str, axis: int) -> Any:
    return helper.make_node("DequantizeLinear", [name, f"{name}_scale", f"{name}_zp"], [f"{name}_dq"], axis=axis)


def _activation_pair(x: str, out: str, uint8: bool = True) -> tuple[list, list]:
    inits = [
        numpy_helper.from_array(np.array(0.04, np.float32), f"{out}_s"),
        numpy_helper.from_array(np.array(128 if uint8 else 2, np.uint8 if uint8 else np.int8), f"{out}_z"),
    ]
    nodes = [
        helper.make_node("QuantizeLinear", [x, f"{out}_s", f"{out}_z"], [f"{out}_q"]),
        helper.make_node("DequantizeLinear", [f"{out}_q", f"{out}_s", f"{out}_z"], [out]),
    ]
    return inits, nodes


def _mlp(uint8: bool) -> onnx.ModelProto:
    """x -> Q/DQ -> MatMul(W1) + b1 -> Relu -> Gemm(W2^T, b2): a linear with a static activation and one weight-only."""
    i1, w1 = _weight("fc1.weight", (12, 16), 16, uint8)
    i2, w2 = _weight("fc2.weight", (5, 16), 5, not uint8)
    ia, na = _activation_pair("x", "xf", uint8)
    b1 = numpy_helper.from_array(rng.standard_normal(16).astype(np.float32), "fc1.bias")
    b2 = numpy_helper.from_array(rng.standard_normal(5).astype(np.float32), "fc2.bias")
    nodes = [
        *na,
        _dq("fc1.weight", 1),
        _dq("fc2.weight", 0),
        helper.make_node("MatMul", ["xf", w1], ["m"]),
        helper.make_node("Add", ["m", "fc1.bias"], ["h"]),
        helper.make_node("Relu", ["h"], ["r"]),
        helper.make_node("Gemm", ["r", w2, "fc2.bias"], ["y"], transB=1),
    ]
    return _model(nodes, [*i1, *i2, *ia, b1, b2], ["batch", 12], 2)


def _cnn(uint8: bool, conv1d: bool = False) -> onnx.ModelProto:
    """Q/DQ -> Conv (groups 2, ``pads`` 1) -> Relu -> Conv (stride 2), both with quantized weights."""
    k = (3,) if conv1d else (3, 3)
    i1, w1 = _weight("conv1.weight", (6, 2, *k), 6, uint8)
    i2, w2 = _weight("conv2.weight", (4, 6, *k), 4, not uint8)
    ia, na = _activation_pair("x", "xf", uint8)
    b1 = numpy_helper.from_array(rng.standard_normal(6).astype(np.float32), "conv1.bias")
    b2 = numpy_helper.from_array(rng.standard_normal(4).astype(np.float32), "conv2.bias")
    pads1 = [1, 1] if conv1d else [1, 1, 1, 1]
    nodes = [
        *na,
        _dq("conv1.weight", 0),
        _dq("conv2.weight", 0),
        helper.make_node("Conv", ["xf", w1, "conv1.bias"], ["c1"], group=2, pads=pads1),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", w2, "conv2.bias"], ["y"], strides=[2] * len(k), pads=[1] * 2 * len(k)),
    ]
    shape = ["batch", 4, "length"] if conv1d else ["batch", 4, "height", "width"]
    return _model(nodes, [*i1, *i2, *ia, b1, b2], shape, 3 if conv1d else 4)


def _generate(model: onnx.ModelProto, root: Path, tag: str) -> tuple[Path, Path, Any]:
    path = root / f"{tag}.onnx"
    onnx.save(model, path)
    py = ModelGen().input(path).out_dir(root / tag).run()
    spec = importlib.util.spec_from_file_location(f"_generated_quantized_{tag}", py)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return path, py, mod


def _ort(path: Path, x: np.ndarray) -> np.ndarray:
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return sess.run(None, {"x": x})[0]


def _check(path: Path, py: Path, mod: Any, shapes: list[tuple[int, ...]], backend: str) -> Any:
    """The generated module equals ``load_model`` and onnxruntime on several inputs; returns the loaded module."""
    dev = ember.backend(backend).device()
    net = mod.Model.from_record(str(py.parent / "model.mpk"), dev)
    runtime = load_model(path, dev)
    for shape in shapes:
        x = (rng.standard_normal(shape) * 2).astype(np.float32)
        got = net(ember.Tensor.from_data(x, dev)).to_numpy()
        np.testing.assert_allclose(got, runtime(ember.Tensor.from_data(x, dev)).to_numpy(), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(got, _ort(path, x), rtol=1e-4, atol=1e-4)
    return net


def _quantized_weights(net: Any) -> dict[str, Any]:
    return {
        name: getattr(net, name).weight.val()
        for name in type(net).__annotations__
        if isinstance(getattr(net, name), (QuantizedLinear, QuantizedConv1d, QuantizedConv2d))
    }


#: jax compiles each op per shape (tens of seconds here): one case runs on it, the others on numpy and torch
FAST = [b for b in BACKENDS if b != "jax"]


@pytest.mark.parametrize(
    ("backend", "uint8"), [(b, u) for b in FAST for u in (False, True)] + [("jax", True)] * ("jax" in BACKENDS)
)
def test_qdq_mlp_generates_quantized_linears(tmp_path: Path, backend: str, uint8: bool) -> None:
    path, py, mod = _generate(_mlp(uint8), tmp_path, "mlp")
    text = py.read_text()
    assert text.count(": quantization.QuantizedLinear") == 2 and not re.search(r"\bnn\.Linear\b", text)
    net = _check(path, py, mod, [(1, 12), (3, 12), (6, 12)], backend)
    weights = _quantized_weights(net)
    assert sorted(weights) == ["fc1", "fc2"]
    assert all(isinstance(w, QuantizedTensor) and w.values.dtype is ember.DType.INT8 for w in weights.values())
    assert weights["fc1"].shape == (12, 16) and weights["fc2"].shape == (16, 5)  # Ember's [d_input, d_output]


@pytest.mark.parametrize("backend", FAST)
@pytest.mark.parametrize(("uint8", "conv1d"), [(False, False), (True, False), (False, True)])
def test_qdq_cnn_generates_quantized_convolutions(tmp_path: Path, backend: str, uint8: bool, conv1d: bool) -> None:
    path, py, mod = _generate(_cnn(uint8, conv1d), tmp_path, "cnn")
    k = 1 if conv1d else 2
    assert py.read_text().count(f"quantization.QuantizedConv{k}d") == 2
    shapes = [(1, 4, 9), (2, 4, 11)] if conv1d else [(1, 4, 7, 8), (2, 4, 9, 6)]
    net = _check(path, py, mod, shapes, backend)
    weights = _quantized_weights(net)
    assert sorted(weights) == ["conv1", "conv2"] and weights["conv1"].values.dtype is ember.DType.INT8


def test_generated_record_holds_int8_and_fresh_init_builds_quantized_layers(tmp_path: Path) -> None:
    path, py, mod = _generate(_cnn(False), tmp_path, "cnn")
    record = py.parent / "model.mpk"
    dev = ember.backend("numpy").device()
    net = mod.Model.from_record(str(record), dev)
    records = net.into_record()
    for field, value in (("conv1", "q8s"), ("conv2", "q8f")):  # int8 symmetric; uint8 with a zero point, shifted
        rec = records[field]["weight"]["param"]["quantized"]
        assert rec["values"].dtype is ember.DType.INT8 and rec["scheme"]["value"] == value
    # the record's bytes: int8 weights, about a quarter of a float32 copy of the same network
    floats = sum(
        p.val().num_elements() * 4 for p in load_model(path, dev).weights.values() if isinstance(p.val(), ember.Tensor)
    )
    ints = sum(w.values.num_elements() + w.qparams.scale.num_elements() * 4 for w in _quantized_weights(net).values())
    assert record.stat().st_size < floats + 4 * ints  # the float32 network would take floats + 4 * ints
    fresh = mod.ModelConfig().init(dev)
    assert [type(fresh.conv1).__name__, type(fresh.conv2).__name__] == ["QuantizedConv2d", "QuantizedConv2d"]
    assert fresh.conv2.weight.val().shape == net.conv2.weight.val().shape


def test_onnxruntime_quantize_static_model_generates(tmp_path: Path) -> None:
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_static

    from test_onnx_quantized_import import _float_model, _Reader

    onnx.save(_float_model(), tmp_path / "f.onnx")
    quantize_static(
        str(tmp_path / "f.onnx"),
        str(tmp_path / "q.onnx"),
        _Reader(),
        quant_format=QuantFormat.QDQ,
        per_channel=True,
        weight_type=QuantType.QInt8,
        activation_type=QuantType.QUInt8,
        op_types_to_quantize=["Conv", "MatMul"],
    )
    path, py, mod = _generate(onnx.load(tmp_path / "q.onnx"), tmp_path, "static")
    net = _check(path, py, mod, [(1, 3, 8, 8), (4, 3, 8, 8)], "numpy")
    assert sorted(_quantized_weights(net)) == ["conv1", "conv2", "fc"]
    for args in (
        ["ruff", "check", "--no-cache", "--config", str(ROOT / "pyproject.toml")],
        ["mypy", "--config-file", str(ROOT / "pyproject.toml")],
    ):
        if importlib.util.find_spec(args[0]) is None:
            continue
        done = subprocess.run([sys.executable, "-m", *args, str(py)], capture_output=True, text=True, cwd=py.parent)
        assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize(
    ("op", "per_channel", "uint8_w"), [("QLinearMatMul", True, False), ("QLinearConv", False, True)]
)
def test_qlinear_models_generate_integer_code(tmp_path: Path, op: str, per_channel: bool, uint8_w: bool) -> None:
    """QLinearMatMul / QLinearConv: integer tensor code on the int8 weight, equal to onnxruntime to the integer."""
    from test_onnx_quantized_import import _qlinear_model

    path, py, mod = _generate(_qlinear_model(op, per_channel, uint8_w), tmp_path, "qlinear")
    dev = ember.backend("numpy").device()
    net = mod.Model.from_record(str(py.parent / "model.mpk"), dev)
    shapes = [(1, 12), (5, 12)] if op == "QLinearMatMul" else [(1, 3, 6, 6), (3, 3, 6, 6)]
    for shape in shapes:
        x = (rng.standard_normal(shape) * 2).astype(np.float32)
        np.testing.assert_array_equal(net(ember.Tensor.from_data(x, dev)).to_numpy(), _ort(path, x))
    # the weight is an integer field holding the ONNX integers (uint8 shifted by -128 with its zero points)
    w = numpy_helper.to_array(next(t for t in onnx.load(path).graph.initializer if t.name == "w")).astype(np.int64)
    np.testing.assert_array_equal(net.w.val().to_numpy(), w - (128 if uint8_w else 0))
    assert not net.w.val().dtype.is_float


def test_unsupported_quantized_patterns_are_refused(tmp_path: Path) -> None:
    gemm = _mlp(False)
    for node in gemm.graph.node:
        if node.op_type == "Gemm":
            node.attribute.append(helper.make_attribute("alpha", 0.5))
    onnx.save(gemm, tmp_path / "alpha.onnx")
    with pytest.raises(ModelGenError, match="alpha = 1"):
        ModelGen().input(tmp_path / "alpha.onnx").out_dir(tmp_path / "alpha").run()
    cnn = _cnn(False)
    for node in cnn.graph.node:
        if node.op_type == "Conv":
            del node.attribute[:]
            node.attribute.append(helper.make_attribute("pads", [0, 1, 1, 0]))
            node.attribute.append(helper.make_attribute("group", 2 if node.input[0] == "xf" else 1))
    onnx.save(cnn, tmp_path / "pads.onnx")
    with pytest.raises(ModelGenError, match="symmetric pads"):
        ModelGen().input(tmp_path / "pads.onnx").out_dir(tmp_path / "pads").run()
