"""Quantized ONNX models import onto Ember's quantized tensors (``onnx/_quantized_graph.py``): the int8 weight of a QDQ
``Conv`` and of ``QLinearConv`` / ``QLinearMatMul`` is a ``QuantizedTensor`` parameter (integers and scales in the
record), and the outputs match onnxruntime's: models built with ``onnx.helper`` and a float model quantized by
``onnxruntime.quantization.quantize_static`` (QDQ and QOperator formats) and ``quantize_dynamic``."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from _onnx_backends import BACKENDS

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from ember.quantization import QuantizedTensor, QuantValue  # noqa: E402
from ember.record import NamedMpkFileRecorder  # noqa: E402
from ember_import.onnx import load_model  # noqa: E402

rng = np.random.default_rng(3)


def _device(backend: str) -> ember.Device:
    if backend not in BACKENDS:
        pytest.skip(f"{backend} is not installed")
    return ember.backend(backend).device()


def _finish(
    nodes: list,
    inits: list,
    x_shape: list,
    y_name: str,
    y_type: int = TensorProto.FLOAT,
    x_type: int = TensorProto.FLOAT,
    opset: int = 21,
) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes,
        "q",
        [helper.make_tensor_value_info("x", x_type, x_shape)],
        [helper.make_tensor_value_info(y_name, y_type, [None] * (2 if len(x_shape) == 2 else 4))],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10 if opset >= 21 else 9
    onnx.checker.check_model(model)
    return model


def _ort(model: onnx.ModelProto, feeds: dict, optimize: bool = True) -> np.ndarray:
    opts = ort.SessionOptions()
    if not optimize:  # the graph's own float semantics (no QDQ fusion into integer kernels)
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)[0]


def _run(m, x: np.ndarray, dev) -> np.ndarray:  # type: ignore[no-untyped-def]
    return m(ember.Tensor.from_data(x, dev)).to_numpy()


def _qdq_conv_model(per_channel: bool, uint8: bool, group: int, pads: list[int]) -> onnx.ModelProto:
    m, c = 6, 4
    dt = np.uint8 if uint8 else np.int8
    # [-127, 127] after the uint8 shift: with zero point 0 the weight is Q8S, the int8 kernel's scheme
    w = rng.integers(1 if uint8 else -127, 256 if uint8 else 128, (m, c // group, 3, 3)).astype(dt)
    scale = (rng.uniform(0.002, 0.02, m) if per_channel else np.array(0.01)).astype(np.float32)
    zp = (np.full(m, 128 if uint8 else 0) if per_channel else np.array(130 if uint8 else -3)).astype(dt)
    inits = [
        numpy_helper.from_array(w, "conv.weight"),
        numpy_helper.from_array(scale, "ws"),
        numpy_helper.from_array(zp, "wz"),
        numpy_helper.from_array(rng.standard_normal(m).astype(np.float32), "b"),
        numpy_helper.from_array(np.array(0.03, np.float32), "xs"),
        numpy_helper.from_array(np.array(120, np.uint8), "xz"),
    ]
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
        helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xf"]),
        helper.make_node("DequantizeLinear", ["conv.weight", "ws", "wz"], ["wf"], axis=0),
        helper.make_node("Conv", ["xf", "wf", "b"], ["y"], pads=pads, strides=[2, 1], group=group),
    ]
    return _finish(nodes, inits, ["batch", c, 7, 6], "y")


QDQ_CONV = [
    (True, False, 1, [1, 1, 1, 1]),
    (False, True, 2, [0, 1, 2, 0]),
    (True, True, 1, [0, 0, 0, 0]),
    (False, False, 2, [1, 0, 1, 0]),
]


@pytest.mark.parametrize("backend", ["numpy", "torch", "jax"])
@pytest.mark.parametrize(("per_channel", "uint8", "group", "pads"), QDQ_CONV)
def test_qdq_conv_keeps_int8_weight_and_matches_onnxruntime(  # type: ignore[no-untyped-def]
    backend, per_channel, uint8, group, pads, monkeypatch
) -> None:
    dev = _device(backend)
    model = _qdq_conv_model(per_channel, uint8, group, pads)
    m = load_model(model.SerializeToString(), dev)
    # one node: the activation's QuantizeLinear -> DequantizeLinear pair is read by QdqConv itself
    assert [n.op_type for n in m.program.graph.nodes] == ["QdqConv"]
    calls = _spy_kernel(monkeypatch)
    wq = m.weights["conv.weight"].val()
    assert isinstance(wq, QuantizedTensor) and wq.values.dtype is ember.DType.INT8 and wq.shape == (6, 4 // group, 3, 3)
    assert list(wq.qparams.scale.shape) == [6 if per_channel else 1]
    # no float copy of the weight anywhere in the module
    assert not any(v.num_elements == wq.values.num_elements() for v in m.program.constants.values())
    for batch in (1, 3):  # several inputs: the same numbers as onnxruntime without and with its QDQ fusions
        x = rng.standard_normal((batch, 4, 7, 6)).astype(np.float32) * 2
        got = _run(m, x, dev)
        np.testing.assert_allclose(got, _ort(model, {"x": x}, optimize=False), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(got, _ort(model, {"x": x}), rtol=1e-4, atol=1e-4)
    # symmetric pads take the int8 kernel (Q8S weights: its integer path), asymmetric ones the float fallback
    assert calls == ([("x", "weight")] * 2 if pads[:2] == pads[2:] else [])
    if per_channel:
        assert wq.scheme.value is QuantValue.Q8S


def _spy_kernel(monkeypatch) -> list:  # type: ignore[no-untyped-def]
    """Record each call of ``ember.quantization.quantized_conv2d`` (the int8 convolution) made by the converters."""
    import ember.quantization as eq

    calls: list = []
    real = eq.quantized_conv2d

    def spy(x, weight, *args, **kwargs):  # type: ignore[no-untyped-def]
        assert isinstance(x, QuantizedTensor) and isinstance(weight, QuantizedTensor)
        calls.append(("x", "weight"))
        return real(x, weight, *args, **kwargs)

    monkeypatch.setattr(eq, "quantized_conv2d", spy)
    return calls


def test_qdq_conv_unrecognised_patterns_run_as_float() -> None:
    model = _qdq_conv_model(True, False, 1, [1, 1, 1, 1])
    model.graph.output.append(helper.make_tensor_value_info("wf", TensorProto.FLOAT, [6, 4, 3, 3]))  # a second consumer
    dev = _device("numpy")
    m = load_model(model.SerializeToString(), dev)
    assert "QdqConv" not in [n.op_type for n in m.program.graph.nodes]
    x = rng.standard_normal((2, 4, 7, 6)).astype(np.float32)
    got = m(ember.Tensor.from_data(x, dev))
    np.testing.assert_allclose(got[0].to_numpy(), _ort(model, {"x": x}, optimize=False), rtol=1e-5, atol=1e-5)


def _qlinear_model(op: str, per_channel: bool, uint8_w: bool) -> onnx.ModelProto:
    wt = np.uint8 if uint8_w else np.int8
    lo, hi = (0, 256) if uint8_w else (-127, 128)  # int8 with zero point 0: Q8S, the int8 kernel's weight scheme
    if op == "QLinearConv":
        n, shape_w, x_shape = 5, (5, 3, 3, 3), ["batch", 3, 6, 6]
        axis_n = 5
    else:
        n, shape_w, x_shape = 7, (12, 7), ["batch", 12]
        axis_n = 7
    w = rng.integers(lo, hi, shape_w).astype(wt)
    ws = (rng.uniform(0.005, 0.03, axis_n) if per_channel else np.array(0.01)).astype(np.float32)
    wz = (np.full(axis_n, 128 if uint8_w else 0) if per_channel else np.array(125 if uint8_w else 0)).astype(wt)
    inits = [
        numpy_helper.from_array(w, "w"),
        numpy_helper.from_array(ws, "ws"),
        numpy_helper.from_array(wz, "wz"),
        numpy_helper.from_array(np.array(0.02, np.float32), "xs"),
        numpy_helper.from_array(np.array(128, np.uint8), "xz"),
        numpy_helper.from_array(np.array(0.05, np.float32), "ys"),
        numpy_helper.from_array(np.array(100, np.uint8), "yz"),
    ]
    ins = ["xq", "xs", "xz", "w", "ws", "wz", "ys", "yz"]
    if op == "QLinearConv":
        inits.append(numpy_helper.from_array(rng.integers(-2000, 2000, n).astype(np.int32), "bias"))
        ins.append("bias")
        node = helper.make_node(op, ins, ["yq"], pads=[1, 1, 1, 1], strides=[1, 2])
    else:
        node = helper.make_node(op, ins, ["yq"])
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]), node]
    return _finish(nodes, inits, x_shape, "yq", y_type=TensorProto.UINT8, opset=13)


@pytest.mark.parametrize("backend", ["numpy", "torch", "jax"])
@pytest.mark.parametrize(
    ("op", "per_channel", "uint8_w"),
    [
        ("QLinearConv", True, False),
        ("QLinearConv", False, True),
        ("QLinearMatMul", True, False),
        ("QLinearMatMul", False, True),
    ],
)
def test_qlinear_keeps_int8_weight_and_matches_onnxruntime(backend, op, per_channel, uint8_w, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    dev = _device(backend)
    calls = _spy_kernel(monkeypatch)
    model = _qlinear_model(op, per_channel, uint8_w)
    m = load_model(model.SerializeToString(), dev)
    node = next(n for n in m.program.graph.nodes if n.op_type == op)
    assert node.domain == "ai.ember"
    wq = m.weights["w"].val()
    assert isinstance(wq, QuantizedTensor) and wq.values.dtype is ember.DType.INT8
    assert "w" not in m.program.constants and "ws" not in m.weights  # the scale lives in the quantized tensor
    x_shape = (2, 3, 6, 6) if op == "QLinearConv" else (4, 12)
    off = 0
    total = 0
    for scale in (1.0, 3.0):
        x = (rng.standard_normal(x_shape) * scale).astype(np.float32)
        got = _run(m, x, dev).astype(np.int64)
        want = _ort(model, {"x": x}).astype(np.int64)
        # onnxruntime requantizes in float32, Ember in float64 as the ONNX reference: a value on a rounding
        # boundary may land one quantum apart, never more
        assert np.abs(got - want).max() <= 1
        off += int((got != want).sum())
        total += got.size
    assert off <= max(1, total // 100)
    # QLinearConv runs on quantized_conv2d (requantized output): its int path for the Q8S weight, the float
    # fallback for the affine uint8 one
    assert calls == ([("x", "weight")] * 2 if op == "QLinearConv" else [])
    assert (wq.scheme.value is QuantValue.Q8S) == (not uint8_w)


class _Reader:
    """onnxruntime's CalibrationDataReader protocol: a few batches of random images."""

    def __init__(self, n: int = 4) -> None:
        self.batches = iter([{"x": rng.standard_normal((2, 3, 8, 8)).astype(np.float32)} for _ in range(n)])

    def get_next(self) -> dict | None:
        return next(self.batches, None)


def _float_model() -> onnx.ModelProto:
    def f32(*s: int) -> np.ndarray:
        return (rng.standard_normal(s) * 0.3).astype(np.float32)

    inits = [
        numpy_helper.from_array(f32(16, 3, 3, 3), "conv1.weight"),
        numpy_helper.from_array(f32(16), "conv1.bias"),
        numpy_helper.from_array(f32(16, 16, 3, 3), "conv2.weight"),
        numpy_helper.from_array(f32(16), "conv2.bias"),
        numpy_helper.from_array(f32(256, 64), "fc.weight"),
        numpy_helper.from_array(f32(64), "fc.bias"),
        numpy_helper.from_array(np.array([0, -1], np.int64), "shape"),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "conv1.weight", "conv1.bias"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "conv2.weight", "conv2.bias"], ["c2"], strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c2"], ["r2"]),
        helper.make_node("Reshape", ["r2", "shape"], ["flat"]),
        helper.make_node("MatMul", ["flat", "fc.weight"], ["mm"]),
        helper.make_node("Add", ["mm", "fc.bias"], ["y"]),
    ]
    return _finish(nodes, inits, ["batch", 3, 8, 8], "y", opset=17)


def _bytes(m) -> int:  # type: ignore[no-untyped-def]
    """Bytes the module holds: its parameters (a quantized one: integers and scales) and the program's constants."""
    total = sum(d.num_elements * d.dtype.itemsize for d in m.program.constants.values())
    for p in m.weights.values():
        v = p.val()
        parts = [v.values, v.qparams.scale] if isinstance(v, QuantizedTensor) else [v]
        total += sum(t.num_elements() * t.dtype.itemsize for t in parts)
    return total


@pytest.mark.parametrize("fmt", ["QDQ", "QOperator"])
def test_onnxruntime_quantize_static_imports_int8(tmp_path, fmt) -> None:  # type: ignore[no-untyped-def]
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_static

    dev = _device("numpy")
    float_path, q_path = tmp_path / "f.onnx", tmp_path / "q.onnx"
    onnx.save(_float_model(), float_path)
    quantize_static(
        str(float_path),
        str(q_path),
        _Reader(),
        quant_format=getattr(QuantFormat, fmt),
        per_channel=True,
        weight_type=QuantType.QInt8,
        activation_type=QuantType.QUInt8,
        op_types_to_quantize=["Conv", "MatMul"],
    )
    qmodel = onnx.load(q_path)
    m = load_model(q_path, dev)
    ops = {n.op_type for n in m.program.graph.nodes}
    assert ops >= ({"QdqConv", "QdqMatMul"} if fmt == "QDQ" else {"QLinearConv", "QLinearMatMul"})
    quantized = {k for k, p in m.weights.items() if isinstance(p.val(), QuantizedTensor)}
    assert quantized == {"conv1.weight_quantized", "conv2.weight_quantized", "fc.weight_quantized"}
    for k in quantized:
        assert m.weights[k].val().values.dtype is ember.DType.INT8
    for batch in (1, 4):
        x = rng.standard_normal((batch, 3, 8, 8)).astype(np.float32)
        got = _run(m, x, dev)
        # the output is float (a DequantizeLinear of the last quantized value): compare in output quanta
        np.testing.assert_allclose(got, _ort(qmodel, {"x": x}), rtol=0, atol=1e-5)
        np.testing.assert_allclose(got, _ort(qmodel, {"x": x}, optimize=False), rtol=0, atol=1e-5)
    # memory and record: int8 weights, < 0.3x the float import
    f = load_model(float_path, dev)
    assert _bytes(m) < 0.3 * _bytes(f)
    q_rec = m.save_file(tmp_path / "q", NamedMpkFileRecorder())
    f_rec = f.save_file(tmp_path / "f", NamedMpkFileRecorder())
    assert q_rec.stat().st_size < 0.3 * f_rec.stat().st_size
    rec = m.into_record()["weights"]["fc.weight_quantized"]["param"]["quantized"]
    assert rec["values"].dtype is ember.DType.INT8 and rec["scheme"]["level"] == "axis"
    # a fresh import with other weights loads the record back and computes the saved model
    again = load_model(q_path, dev).load_file(tmp_path / "q", NamedMpkFileRecorder(), dev)
    x = rng.standard_normal((2, 3, 8, 8)).astype(np.float32)
    np.testing.assert_array_equal(_run(again, x, dev), _run(m, x, dev))


def test_onnxruntime_quantize_dynamic_matches(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """``quantize_dynamic`` writes ``DynamicQuantizeLinear`` + ``ConvInteger`` / ``MatMulInteger``: the weights stay
    integer constants (their scale is a separate ``Mul``, so they are not quantized tensors) and the outputs match."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    dev = _device("numpy")
    float_path, q_path = tmp_path / "f.onnx", tmp_path / "q.onnx"
    onnx.save(_float_model(), float_path)
    quantize_dynamic(str(float_path), str(q_path), weight_type=QuantType.QInt8)
    m = load_model(q_path, dev)
    assert {"ConvInteger", "MatMulInteger"} <= {n.op_type for n in m.program.graph.nodes}
    assert {d.dtype for k, d in m.program.constants.items() if "weight" in k} == {ember.DType.INT8}
    assert _bytes(m) < 0.3 * _bytes(load_model(float_path, dev))
    for batch in (1, 3):
        x = rng.standard_normal((batch, 3, 8, 8)).astype(np.float32)
        np.testing.assert_allclose(_run(m, x, dev), _ort(onnx.load(q_path), {"x": x}), rtol=1e-5, atol=1e-5)


def test_quantized_weights_under_autodiff_and_jax_jit() -> None:
    """The quantized weight is an untracked parameter: gradients reach the float bias; a jitted forward carries it."""
    from ember.autodiff import Autodiff

    model = _qdq_conv_model(True, False, 1, [1, 1, 1, 1])
    host = _device("numpy")
    ref = load_model(model.SerializeToString(), host)
    dev = Autodiff(ember.backend("numpy")).device()
    m = load_model(model.SerializeToString(), dev)
    x = rng.standard_normal((2, 4, 7, 6)).astype(np.float32)
    y = m(ember.Tensor.from_data(x, dev))
    np.testing.assert_array_equal(y.to_numpy(), _run(ref, x, host))
    grads = y.sum().backward()
    bias_grad = grads.get(m.weights["b"].val())
    assert bias_grad is not None  # d sum / d bias[c] = the number of output positions of channel c
    np.testing.assert_allclose(bias_grad.to_numpy(), np.full(6, y.shape[0] * y.shape[2] * y.shape[3]), rtol=1e-6)
    if "jax" not in BACKENDS:
        return
    import ember_jax

    jdev = ember.backend("jax").device()
    mj = load_model(model.SerializeToString(), jdev)
    step = ember_jax.jit(lambda mod, a: mod(a))
    for batch in (2, 3):
        xb = rng.standard_normal((batch, 4, 7, 6)).astype(np.float32)
        got = step(mj, ember.Tensor.from_data(xb, jdev)).to_numpy()
        np.testing.assert_allclose(got, _run(ref, xb, host), rtol=1e-5, atol=1e-5)


def _elementwise_model(op: str, uint8: bool) -> onnx.ModelProto:
    """``op`` (com.microsoft) of the input ``a`` and a constant ``b`` broadcast along rows, with scales whose ratios
    make many results land halfway between two integers (the rounding order decides them)."""
    dt, tp = (np.uint8, TensorProto.UINT8) if uint8 else (np.int8, TensorProto.INT8)
    scales = (0.02, 0.03, 0.04) if op == "QLinearAdd" else (0.25, 0.5, 2.0)
    inits = [numpy_helper.from_array(np.array(s, np.float32), n) for n, s in zip(("as", "bs", "cs"), scales)]
    inits += [numpy_helper.from_array(np.array(z, dt), n) for n, z in (("az", 3), ("bz", 5), ("cz", 7))]
    inits.append(numpy_helper.from_array(rng.integers(0, 20, (5,)).astype(dt), "b"))
    node = helper.make_node(op, ["a", "as", "az", "b", "bs", "bz", "cs", "cz"], ["c"], domain="com.microsoft")
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("a", tp, ["n", 5])],
        [helper.make_tensor_value_info("c", tp, ["n", 5])],
        inits,
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    )
    model.ir_version = 9
    return model


@pytest.mark.parametrize("backend", ["numpy", "torch", "jax"])
@pytest.mark.parametrize("op", ["QLinearAdd", "QLinearMul"])
@pytest.mark.parametrize("uint8", [True, False])
def test_com_microsoft_qlinear_elementwise_equals_onnxruntime(backend, op, uint8) -> None:  # type: ignore[no-untyped-def]
    dev = _device(backend)
    model = _elementwise_model(op, uint8)
    m = load_model(model.SerializeToString(), dev)
    lo, hi = (0, 256) if uint8 else (-128, 128)
    for rows in (1, 64):
        a = rng.integers(lo, hi, (rows, 5)).astype(np.uint8 if uint8 else np.int8)
        got = m(ember.Tensor.from_data(a, dev)).to_numpy()
        np.testing.assert_array_equal(got, _ort(model, {"a": a}))  # exactly, halfway values included


def test_onnxruntime_qoperator_model_with_qlinear_add_equals_onnxruntime(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """``quantize_static`` in the QOperator format without restricting the operators writes a ``QLinearAdd``."""
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_static

    dev = _device("numpy")
    onnx.save(_float_model(), tmp_path / "f.onnx")
    quantize_static(
        str(tmp_path / "f.onnx"),
        str(tmp_path / "q.onnx"),
        _Reader(),
        quant_format=QuantFormat.QOperator,
        per_channel=True,
        weight_type=QuantType.QInt8,
        activation_type=QuantType.QUInt8,
    )
    qmodel = onnx.load(tmp_path / "q.onnx")
    assert "QLinearAdd" in {n.op_type for n in qmodel.graph.node}
    m = load_model(tmp_path / "q.onnx", dev)
    for batch in (1, 3):
        x = rng.standard_normal((batch, 3, 8, 8)).astype(np.float32)
        np.testing.assert_array_equal(_run(m, x, dev), _ort(qmodel, {"x": x}))


def _int_conv_ref(x: np.ndarray, w: np.ndarray, stride: int, pads: list[int]) -> np.ndarray:
    """The int64 cross-correlation of ``x`` ``[N, C, H, W]`` (already centered, padded with zeros as ``pads``
    ``[top, left, bottom, right]``) and ``w`` ``[M, C, kh, kw]``: the exact accumulator, by loops."""
    xp = np.pad(x.astype(np.int64), ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    m, _, kh, kw = w.shape
    ho, wo = (xp.shape[2] - kh) // stride + 1, (xp.shape[3] - kw) // stride + 1
    out = np.zeros((x.shape[0], m, ho, wo), np.int64)
    for i in range(ho):
        for j in range(wo):
            win = xp[:, :, i * stride : i * stride + kh, j * stride : j * stride + kw]
            out[:, :, i, j] = np.einsum("nchw,mchw->nm", win, w.astype(np.int64))
    return out


@pytest.mark.parametrize("backend", ["numpy", "torch", "jax"])
@pytest.mark.parametrize(("spatial", "pads"), [(2, [1, 1, 1, 1]), (1, [2, 2]), (2, [0, 1, 1, 0])])
def test_qlinear_conv_requantizes_as_the_exact_value_rounded(backend, spatial, pads, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """``QLinearConv`` against the exact value ``r = (acc + B) * x_scale * w_scale[o] / y_scale`` (int64
    accumulator, float64 rescale, numpy): ``round_half_even(r) + y_zp`` saturated to uint8. The int8 kernel
    (symmetric pads; 1-D as height 1) rescales in float32 (``x_scale * w_scale * acc + B * x_scale * w_scale``, then
    ``/ y_scale``), so it may differ by one quantum only where ``r`` lies within float32's rounding of a half
    integer: at most a few float32 ulps of ``(|acc| + |B|) * x_scale * w_scale / y_scale``. The generic path
    (asymmetric pads) rescales in float64 as the ONNX reference and equals it exactly."""
    dev = _device(backend)
    calls = _spy_kernel(monkeypatch)
    m, c, k = 6, 4, 3
    kshape = (k, k) if spatial == 2 else (k,)
    w = rng.integers(-127, 128, (m, c, *kshape)).astype(np.int8)
    ws = rng.uniform(0.002, 0.02, m).astype(np.float32)
    b = rng.integers(-3000, 3000, m).astype(np.int32)
    xs, xz, ys, yz = np.float32(0.021), np.uint8(131), np.float32(0.043), np.uint8(97)
    inits = [
        numpy_helper.from_array(w, "w"),
        numpy_helper.from_array(ws, "ws"),
        numpy_helper.from_array(np.zeros(m, np.int8), "wz"),
        numpy_helper.from_array(b, "b"),
        numpy_helper.from_array(np.array(xs), "xs"),
        numpy_helper.from_array(np.array(xz), "xz"),
        numpy_helper.from_array(np.array(ys), "ys"),
        numpy_helper.from_array(np.array(yz), "yz"),
    ]
    ins = ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"]
    node = helper.make_node("QLinearConv", ins, ["y"], pads=pads)
    x_shape = [2, c, 7, 8] if spatial == 2 else [2, c, 9]
    model = _finish([node], inits, x_shape, "y", y_type=TensorProto.UINT8, x_type=TensorProto.UINT8, opset=13)
    mod = load_model(model.SerializeToString(), dev)
    x = rng.integers(0, 256, x_shape).astype(np.uint8)
    got = _run(mod, x, dev).astype(np.int64)
    # the exact value, independently: 1-D as height 1
    x4 = x.astype(np.int64) - int(xz)
    w4 = w
    p4 = pads
    if spatial == 1:
        x4, w4, p4 = x4[:, :, None, :], w[:, :, None, :], [0, pads[0], 0, pads[1]]
    acc = _int_conv_ref(x4, w4, 1, p4)
    factor = (np.float64(xs) * ws.astype(np.float64) / np.float64(ys))[None, :, None, None]
    bias = np.broadcast_to(b[None, :, None, None].astype(np.int64), acc.shape)
    r = (acc + bias) * factor
    want = np.clip(np.round(r) + int(yz), 0, 255)
    # the float32 rescale's error: a few ulps of each term (x_scale * w_scale * acc, the bias) and of r
    bound = 8 * 2.0**-24 * ((np.abs(acc) + np.abs(bias)) * factor + np.abs(r))
    if spatial == 1:
        r, want, bound = r[:, :, 0], want[:, :, 0], bound[:, :, 0]
    kernel = pads[: len(pads) // 2] == pads[len(pads) // 2 :]
    assert calls == ([("x", "weight")] if kernel else [])
    if not kernel:
        np.testing.assert_array_equal(got, want)
        return
    diff = got != want
    assert np.abs(got - want).max() <= 1
    near_half = np.abs(np.abs(r - np.floor(r)) - 0.5) <= bound
    assert not (diff & ~near_half).any()  # every difference is a value on a rounding boundary
    # and onnxruntime (MLAS, float32 rescale of acc + B) agrees within one quantum too
    assert np.abs(got - _ort(model, {"x": x}).astype(np.int64)).max() <= 1
