"""The interpreter's per-graph plan (``_interpret.plan``, issue 32): each value is dropped after its last reader,
values a sub-graph reads from outside stay alive until the node holding it ran, graph outputs are never dropped,
and the plan is rebuilt when the graph's node list changes. ``LayerNormalization`` runs as Ember's fused
``layer_norm`` when its statistics are unused: equal to a float64 numpy reference on every backend."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from _onnx_backends import BACKENDS  # noqa: E402
from ember import Tensor  # noqa: E402
from ember_import.onnx import load_model  # noqa: E402
from ember_import.onnx._interpret import plan_of  # noqa: E402
from ember_import.onnx.conformance._runner import backend_device  # noqa: E402


def _model(nodes: list[Any], outputs: list[str], inits: dict[str, np.ndarray], opset: int = 17) -> bytes:
    graph = helper.make_graph(
        nodes, "plan", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, [2, 1] if o in ("mean", "inv") else [2, 3])
         for o in outputs],
        initializer=[numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model.SerializeToString()


def _branch(name: str, op: str, outer: str) -> Any:
    """A branch graph computing ``op(outer)`` (``outer`` read from the enclosing graph)."""
    return helper.make_graph([helper.make_node(op, [outer], [f"{name}_out"])], name, [],
                             [helper.make_tensor_value_info(f"{name}_out", TensorProto.FLOAT, [2, 3])])


def test_values_dropped_after_last_reader_sub_graph_reads_and_outputs_kept() -> None:
    nodes = [
        helper.make_node("Relu", ["x"], ["a"]),
        helper.make_node("Neg", ["a"], ["b"]),  # last reader of a
        helper.make_node("ReduceSum", ["b"], ["s"], keepdims=0),
        helper.make_node("Greater", ["s", "zero"], ["cond"]),
        helper.make_node("Dropout", ["x"], ["dx", "mask"]),  # inference: dx = x; mask read by nobody
        helper.make_node("Abs", ["dx"], ["kept"]),  # a graph output, also read by the branches
        helper.make_node("If", ["cond"], ["y"], then_branch=_branch("then", "Exp", "b"),
                         else_branch=_branch("else", "Sigmoid", "kept")),
    ]
    raw = _model(nodes, ["y", "kept"], {"zero": np.array(0.0, np.float32)})
    dev = backend_device("numpy")
    model = load_model(raw, dev, fold=False)
    steps = plan_of(model.program.graph, model.program).steps
    drops = {s.node.op_type: set(s.drop) for s in steps}
    assert drops["Neg"] == {"a"}
    assert "b" not in drops["ReduceSum"] and "b" in drops["If"]  # the then-branch reads b: alive until If ran
    assert not any("kept" in d for d in drops.values())  # a graph output is never dropped
    assert drops["Dropout"] == {"x", "mask"} and drops["Abs"] == {"dx"}
    x = np.array([[1.0, -2.0, 3.0], [-0.5, 0.25, 4.0]], np.float32)
    y, kept = model.forward(Tensor.from_data(x, dev))
    b = -np.maximum(x.astype(np.float64), 0)
    want = np.exp(b) if b.sum() > 0 else 1 / (1 + np.exp(-np.abs(x.astype(np.float64))))
    np.testing.assert_allclose(y.to_data().to_numpy(), want, rtol=1e-6)
    np.testing.assert_allclose(kept.to_data().to_numpy(), np.abs(x), rtol=0)


def test_plan_rebuilt_when_the_node_list_changes() -> None:
    raw = _model([helper.make_node("Relu", ["x"], ["y"])], ["y"], {})
    model = load_model(raw, backend_device("numpy"), fold=False)
    program, graph = model.program, model.program.graph
    first = plan_of(graph, program)
    assert plan_of(graph, program) is first
    graph.nodes = list(graph.nodes)  # a pass that rewrote the graph replaces its node list
    assert plan_of(graph, program) is not first


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("stats", [False, True])
def test_layer_norm_fused_and_decomposed_match_numpy(backend: str, stats: bool) -> None:
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3)).astype(np.float32)
    s, b = rng.standard_normal(3).astype(np.float32), rng.standard_normal(3).astype(np.float32)
    outs = ["y", "mean", "inv"] if stats else ["y"]
    node = helper.make_node("LayerNormalization", ["x", "s", "b"], outs, epsilon=1e-3)
    model = load_model(_model([node], outs, {"s": s, "b": b}), backend_device(backend), fold=False)
    got = model.forward(Tensor.from_data(x, backend_device(backend)))
    got = list(got) if stats else [got]
    x64 = x.astype(np.float64)
    mean = x64.mean(-1, keepdims=True)
    inv = 1 / np.sqrt(((x64 - mean) ** 2).mean(-1, keepdims=True) + 1e-3)
    want = [(x64 - mean) * inv * s + b, mean, inv][: len(outs)]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.to_data().to_numpy(), w, rtol=1e-5, atol=1e-5)
