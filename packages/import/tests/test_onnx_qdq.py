"""QDQ recognition (``onnx/_qdq.py``): ``DequantizeLinear`` int8/uint8 weights feeding ``MatMul`` / ``Gemm`` run on
Ember's quantized tensors; the outputs match onnxruntime and the ONNX reference evaluator."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from _onnx_backends import BACKENDS  # noqa: F401  (the import checks the backends' availability)

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from ember.quantization import QuantizedTensor  # noqa: E402
from ember_import.onnx import load_model  # noqa: E402

rng = np.random.default_rng(33)


def _model(op: str, w_dtype: type, per_channel: bool, activation: bool, trans_b: bool = False) -> onnx.ModelProto:
    k, n = 16, 6
    lo, hi = (-128, 128) if w_dtype is np.int8 else (0, 256)
    w = rng.integers(lo, hi, (n, k) if trans_b else (k, n)).astype(w_dtype)
    axis = (0 if trans_b else 1) if per_channel else 1
    scale = (rng.uniform(0.001, 0.01, n) if per_channel else np.array(0.004)).astype(np.float32)
    zp_val = 0 if w_dtype is np.int8 else 128
    zp = (np.full(n, zp_val) if per_channel else np.array(zp_val)).astype(w_dtype)
    inits = [numpy_helper.from_array(w, "W"), numpy_helper.from_array(scale, "ws"), numpy_helper.from_array(zp, "wz"),
             numpy_helper.from_array(rng.standard_normal(n).astype(np.float32), "B"),
             numpy_helper.from_array(np.array(0.02, dtype=np.float32), "xs"),
             numpy_helper.from_array(np.array(128 if w_dtype is np.uint8 else 3, dtype=w_dtype), "xz")]
    nodes = [helper.make_node("DequantizeLinear", ["W", "ws", "wz"], ["Wf"], axis=axis)]
    x = "x"
    if activation:
        nodes += [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
                  helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xf"])]
        x = "xf"
    if op == "MatMul":
        nodes += [helper.make_node("MatMul", [x, "Wf"], ["m"]), helper.make_node("Add", ["m", "B"], ["y"])]
    else:
        nodes += [helper.make_node("Gemm", [x, "Wf", "B"], ["y"], transB=int(trans_b), alpha=0.5, beta=2.0)]
    graph = helper.make_graph(nodes, "qdq", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, k])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, n])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    onnx.checker.check_model(model)
    return model


CASES = [("MatMul", np.int8, False, False, False), ("MatMul", np.int8, True, True, False),
         ("MatMul", np.uint8, False, True, False), ("Gemm", np.int8, True, True, True),
         ("Gemm", np.uint8, True, False, False)]


@pytest.mark.parametrize("backend", ["numpy", "torch", "jax"])
@pytest.mark.parametrize(("op", "w_dtype", "per_channel", "activation", "trans_b"), CASES)
def test_qdq_matmul_runs_quantized(backend, op, w_dtype, per_channel, activation, trans_b) -> None:  # type: ignore[no-untyped-def]
    try:
        dev = ember.backend(backend).device()
    except Exception:
        pytest.skip(f"{backend} is not installed")
    from onnx.reference import ReferenceEvaluator

    model = _model(op, w_dtype, per_channel, activation, trans_b)
    m = load_model(model.SerializeToString(), dev)
    fused = [n for n in m.program.graph.nodes if n.op_type == "QdqMatMul"]
    assert len(fused) == 1 and not any(n.op_type == "DequantizeLinear" for n in m.program.graph.nodes)
    # the weight is a QuantizedTensor parameter (int8; transposed once for a Gemm with transB): no float32 copy
    assert not any(v.num_elements == 96 for v in m.program.constants.values())
    wq = m.weights["W"].val()
    assert isinstance(wq, QuantizedTensor) and wq.values.dtype is ember.DType.INT8
    assert wq.shape == (16, 6) and not m.weights["W"].require_grad
    assert not any(isinstance(p.val(), ember.Tensor) and p.val().num_elements() == 96 for p in m.weights.values())
    x = rng.standard_normal((4, 16)).astype(np.float32)
    want = ReferenceEvaluator(model).run(None, {"x": x})[0]
    got = m(ember.Tensor.from_data(x, dev))
    got = (got[0] if isinstance(got, (list, tuple)) else got).to_numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_unrecognised_patterns_are_left_alone() -> None:
    model = _model("MatMul", np.int8, False, False)
    model.graph.output.append(helper.make_tensor_value_info("Wf", TensorProto.FLOAT, [16, 6]))  # a second consumer
    m = load_model(model.SerializeToString(), ember.backend("numpy").device())
    assert not any(n.op_type == "QdqMatMul" for n in m.program.graph.nodes)
