"""Constant folding with partially static shapes (``_passes.fold``, issue 30): ``Shape`` of a value whose batch is
dynamic still gives its static dims at import, so ``Shape -> Gather``/``Slice`` on them fold, and what uses them
(a ``Slice`` bound, a ``Reshape`` target) gets constants; what reads a dynamic dim stays in the graph and runs with
the model. Every model equals onnxruntime at two batch sizes, on every installed backend."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from _onnx_backends import BACKENDS  # noqa: E402
from ember import Tensor  # noqa: E402
from ember_import.onnx import load_model  # noqa: E402
from ember_import.onnx._context import Context  # noqa: E402
from ember_import.onnx._parse import read_model  # noqa: E402
from ember_import.onnx._passes import fold  # noqa: E402
from ember_import.onnx._program import Program, host_device  # noqa: E402
from ember_import.onnx.conformance._runner import backend_device  # noqa: E402

RNG = np.random.default_rng(8)
I64 = np.int64


def _model(nodes: list[Any], outputs: dict[str, list[Any]], inits: dict[str, np.ndarray], opset: int = 13,
           x_shape: tuple[Any, ...] = ("batch", 6, 4)) -> Any:
    graph = helper.make_graph(
        nodes, "fold", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))],
        [helper.make_tensor_value_info(k, TensorProto.FLOAT, v) for k, v in outputs.items()],
        initializer=[numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def _channel_split() -> Any:
    """ShuffleNet's channel split as exported: ``half = Shape(x)[1] / 2``; ``Slice(x, 0:half)`` and
    ``Slice(x, half:)`` on axis 1 (x: [batch, 6, 4] -> two [batch, 3, 4])."""
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "one"], ["c"], axis=0),
        helper.make_node("Div", ["c", "two"], ["half"]),
        helper.make_node("Unsqueeze", ["half", "axes0"], ["half1"]),
        helper.make_node("Slice", ["x", "zero1", "half1", "axes1"], ["a"]),
        helper.make_node("Slice", ["x", "half1", "big", "axes1"], ["b"]),
        helper.make_node("Relu", ["b"], ["rb"]),
    ]
    inits = {"one": np.array(1, I64), "two": np.array(2, I64), "axes0": np.array([0], I64),
             "zero1": np.array([0], I64), "axes1": np.array([1], I64), "big": np.array([1 << 62], I64)}
    return _model(nodes, {"a": ["batch", 3, 4], "rb": ["batch", 3, 4]}, inits)


def _reshape_from_shape_slice() -> Any:
    """``Reshape(x, Concat([-1], Shape(x)[1:2], [2, 2]))`` (x: [batch, 6, 4] -> [batch, 6, 2, 2]) and the last
    dim read with ``Gather(-1)`` into an ``Expand`` target; the batch read with ``Gather(0)`` stays dynamic."""
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Slice", ["s", "start1", "end2"], ["c1"]),
        helper.make_node("Concat", ["minus1", "c1", "twotwo"], ["target"], axis=0),
        helper.make_node("Reshape", ["x", "target"], ["r"]),
        helper.make_node("Gather", ["s", "last"], ["w"], axis=0),
        helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
        helper.make_node("Unsqueeze", ["n", "axes0"], ["n1"]),
        helper.make_node("Unsqueeze", ["w", "axes0"], ["w1"]),
        helper.make_node("Concat", ["n1", "three", "w1"], ["full"], axis=0),
        helper.make_node("Expand", ["x", "full"], ["e0"]),
        helper.make_node("ReduceSum", ["e0", "axes1"], ["e"], keepdims=0),
    ]
    inits = {"start1": np.array([1], I64), "end2": np.array([2], I64), "minus1": np.array([-1], I64),
             "twotwo": np.array([2, 2], I64), "last": np.array(-1, I64), "zero": np.array(0, I64),
             "axes0": np.array([0], I64), "three": np.array([6], I64), "axes1": np.array([1], I64)}
    return _model(nodes, {"r": ["batch", 6, 2, 2], "e": ["batch", 4]}, inits)


def _shape_attrs_opset15() -> Any:
    """``Shape(x, start=1)`` (opset 15) of x: [batch, 6, 4] is [6, 4]: a constant, so ``ConstantOfShape`` of it
    folds; ``Shape(x, end=2)`` is [batch, 6], which reaches the output through ``Cast`` and ``Identity``."""
    nodes = [
        helper.make_node("Shape", ["x"], ["tail"], start=1),
        helper.make_node("ConstantOfShape", ["tail"], ["ones"], value=numpy_helper.from_array(np.ones(1, np.float32))),
        helper.make_node("Add", ["x", "ones"], ["y"]),
        helper.make_node("Shape", ["x"], ["head"], end=2),
        helper.make_node("Cast", ["head"], ["head64"], to=TensorProto.INT64),
        helper.make_node("Identity", ["head64"], ["head_id"]),
        helper.make_node("Cast", ["head_id"], ["hf"], to=TensorProto.FLOAT),
    ]
    return _model(nodes, {"y": ["batch", 6, 4], "hf": [2]}, {}, opset=15)


MODELS = {"channel_split": _channel_split, "reshape_from_shape": _reshape_from_shape_slice,
          "shape_start_end": _shape_attrs_opset15}
#: the op types left in the graph after folding: what reads only static dims is gone
LEFT = {
    "channel_split": ["Slice", "Slice", "Relu"],
    "reshape_from_shape": ["Shape", "Reshape", "Gather", "Unsqueeze", "Concat", "Expand", "ReduceSum"],
    "shape_start_end": ["Add", "Shape", "Cast", "Identity", "Cast"],
}


def _ort(model: Any, x: np.ndarray) -> list[np.ndarray]:
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return [np.asarray(o) for o in sess.run(None, {"x": x})]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", list(MODELS))
def test_static_dims_of_a_dynamic_shape_fold_and_match_onnxruntime(name: str, backend: str) -> None:
    model = MODELS[name]()
    dev = backend_device(backend)
    m = load_model(model, dev)
    assert [n.op_type for n in m.program.graph.nodes] == LEFT[name]
    for n in (1, 3):
        x = RNG.standard_normal((n, 6, 4)).astype(np.float32)
        got = m(Tensor.from_data(x, dev))
        got = got if isinstance(got, tuple) else (got,)
        for g, w in zip(got, _ort(model, x), strict=True):
            np.testing.assert_allclose(g.to_numpy(), w, rtol=1e-6, atol=1e-6)


def _fold(model: Any) -> Any:
    parsed = read_model(model)
    program = Program(parsed.graph, parsed.opsets, dict(parsed.graph.initializers))
    return fold(parsed.graph, program.constants, Context(program, host_device(), host_device())), program


def test_fold_reports_the_partially_known_shape_values() -> None:
    result, program = _fold(_reshape_from_shape_slice())
    assert result.partial == {"s": [None, 6, 4], "n1": [None], "full": [None, 6, 4]}
    # the static parts became constants: the Slice of the shape, the Reshape target, the last dim
    assert program.constants["c1"].to_numpy().tolist() == [6]
    assert program.constants["target"].to_numpy().tolist() == [-1, 6, 2, 2]
    assert program.constants["w"].to_numpy().tolist() == 4
    assert "n" not in program.constants and "n1" not in program.constants  # the batch: known when it runs
    result, _ = _fold(_shape_attrs_opset15())
    assert result.partial == {"head": [None, 6], "head64": [None, 6], "head_id": [None, 6]}


def test_a_fully_dynamic_shape_and_size_stay_in_the_graph() -> None:
    nodes = [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Size", ["x"], ["k"]),
             helper.make_node("Gather", ["s", "one"], ["c"], axis=0),
             helper.make_node("Cast", ["c"], ["cf"], to=TensorProto.FLOAT),
             helper.make_node("Cast", ["k"], ["kf"], to=TensorProto.FLOAT),
             helper.make_node("Mul", ["cf", "kf"], ["y"])]
    model = _model(nodes, {"y": []}, {"one": np.array(1, I64)}, x_shape=("n", "m"))
    result, _ = _fold(model)
    assert result.folded == 0 and result.partial == {"s": [None, None]}  # the rank is known, no dim
    dev = backend_device("numpy")
    m = load_model(model, dev)
    x = np.zeros((3, 5), np.float32)
    np.testing.assert_allclose(m(Tensor.from_data(x, dev)).to_numpy(), _ort(model, x)[0])


@pytest.mark.skipif("jax" not in BACKENDS, reason="ember-backend-jax is not installed")
def test_channel_split_compiles_once_per_batch_size() -> None:
    import ember_jax

    model = _channel_split()
    dev = backend_device("jax")
    m = load_model(model, dev)
    step = ember_jax.jit(lambda mod, inp: mod(inp))
    for n in (2, 2, 4):
        x = RNG.standard_normal((n, 6, 4)).astype(np.float32)
        for g, w in zip(step(m, Tensor.from_data(x, dev)), _ort(model, x), strict=True):
            np.testing.assert_allclose(g.to_numpy(), w, rtol=1e-6, atol=1e-6)
    assert step.trace_count == 2
