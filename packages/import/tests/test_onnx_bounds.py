"""Hostile and malformed ONNX input (issue 28): the ``max_tensor_bytes`` budget on what folding and value-sized ops
materialise, raw data against declared dims, opsets outside the known range, and the input checks of ``forward``
(rank, fixed dims, symbolic dims agreeing across inputs)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ember
from ember import Tensor

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from ember_import.onnx import OnnxImportError, load_model  # noqa: E402

DEV = ember.backend("numpy").device()
BIG = [1 << 20, 1 << 20]  # 2**40 elements: 4 TiB of float32


def _model(nodes: list[Any], inputs: list[Any], outputs: list[Any], inits: list[Any] | None = None,
           opset: int = 17) -> Any:
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=inits or [])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _f(name: str, shape: list[Any]) -> Any:
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def _i64(name: str, values: list[int], dims: list[int] | None = None) -> Any:
    return helper.make_tensor(name, TensorProto.INT64, [len(values)] if dims is None else dims, values)


def _np(t: Tensor) -> np.ndarray:
    return np.asarray(t.to_data().to_numpy())


ONE = helper.make_tensor("one", TensorProto.FLOAT, [1, 1], [1.0])


# ---------------------------------------------------------------------------------------------- the budget
def test_constant_of_shape_bomb_names_file_node_output_shape_and_bytes(tmp_path: Path) -> None:
    node = helper.make_node("ConstantOfShape", ["shape"], ["y"], name="bomb")
    path = tmp_path / "bomb.onnx"
    onnx.save(_model([node], [], [_f("y", [None, None])], [_i64("shape", BIG)]), str(path))
    with pytest.raises(OnnxImportError) as info:
        load_model(path, DEV)
    msg = str(info.value)
    assert str(path) in msg
    assert "ConstantOfShape node 'bomb'" in msg and "(output 'y')" in msg
    assert "[1048576, 1048576]" in msg and f"{4 << 40} bytes (4.0 TiB)" in msg
    assert f"max_tensor_bytes={1 << 30} bytes (1.0 GiB)" in msg


# each: (nodes, graph inputs, initializers, output rank); all ask for at least 2**40 elements
BOMBS = {
    "Expand": ([helper.make_node("Expand", ["one", "shape"], ["y"], name="bomb")], [], [ONE, _i64("shape", BIG)], 2),
    "Tile": ([helper.make_node("Tile", ["one", "reps"], ["y"], name="bomb")], [], [ONE, _i64("reps", BIG)], 2),
    "Range": ([helper.make_node("Range", ["a", "b", "d"], ["y"], name="bomb")], [],
              [_i64("a", [0], []), _i64("b", [1 << 40], []), _i64("d", [1], [])], 1),
    "Pad": ([helper.make_node("Pad", ["one", "pads"], ["y"], name="bomb")], [],
            [ONE, _i64("pads", [0, 0, 1 << 20, 1 << 20])], 2),
    "OneHot": ([helper.make_node("OneHot", ["i", "depth", "v"], ["y"], name="bomb")], [],
               [_i64("i", [0, 1]), _i64("depth", [1 << 40], []),
                helper.make_tensor("v", TensorProto.FLOAT, [2], [0.0, 1.0])], 2),
    "RandomNormal": ([helper.make_node("RandomNormal", [], ["y"], name="bomb", shape=BIG)], [], [], 2),
    "Resize": ([helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], name="bomb")], [_f("x", [1, 1, 2, 2])],
               [_i64("sizes", [1, 1, 1 << 20, 1 << 20])], 4),
    "Expand-of-input": ([helper.make_node("Expand", ["x", "shape"], ["y"], name="bomb")], [_f("x", [1, 1])],
                        [_i64("shape", BIG)], 2),
}


@pytest.mark.parametrize("op", sorted(BOMBS))
def test_value_sized_ops_are_refused_before_they_allocate(op: str) -> None:
    nodes, inputs, inits, rank = BOMBS[op]
    # folded at import (constant inputs) or refused on the first call (graph inputs, RandomNormal)
    feeds = [Tensor.from_data(np.ones([d.dim_value for d in i.type.tensor_type.shape.dim], np.float32), DEV)
             for i in inputs]
    with pytest.raises(OnnxImportError, match=r"node 'bomb' \(output 'y'\) would allocate .* more than the limit"):
        m = load_model(_model(nodes, inputs, [_f("y", [None] * rank)], inits), DEV)
        m(*feeds)


def test_budget_is_configurable_and_values_within_it_are_exact() -> None:
    value = helper.make_tensor("v", TensorProto.FLOAT, [1], [2.5])
    nodes = [helper.make_node("ConstantOfShape", ["shape"], ["c"], name="cos", value=value),
             helper.make_node("Add", ["x", "c"], ["y"], name="add")]
    model = _model(nodes, [_f("x", [256, 1024])], [_f("y", [256, 1024])], [_i64("shape", [256, 1024])])
    x = np.arange(256 * 1024, dtype=np.float32).reshape(256, 1024) % 7
    y = load_model(model, DEV)(Tensor.from_data(x, DEV))  # 1 MiB: far within the default
    np.testing.assert_array_equal(_np(y), x + np.float32(2.5))
    with pytest.raises(OnnxImportError, match=r"shape \[256, 1024\]: 1048576 bytes .*max_tensor_bytes=524288 bytes"):
        load_model(model, DEV, max_tensor_bytes=512 << 10)
    y = load_model(model, DEV, max_tensor_bytes=1 << 20)(Tensor.from_data(x, DEV))  # exactly at the limit
    np.testing.assert_array_equal(_np(y), x + np.float32(2.5))


def test_a_folded_value_above_the_budget_is_refused() -> None:
    """An op no planner knows (Mul broadcasting [N, 1] by [1, N]) still may not fold into a value above the budget."""
    a = numpy_helper.from_array(np.ones((512, 1), np.int64), "a")
    b = numpy_helper.from_array(np.ones((1, 512), np.int64), "b")
    nodes = [helper.make_node("Mul", ["a", "b"], ["m"], name="outer"),
             helper.make_node("Shape", ["m"], ["y"], name="shape")]
    model = _model(nodes, [], [helper.make_tensor_value_info("y", TensorProto.INT64, [2])], [a, b])
    with pytest.raises(OnnxImportError, match=r"Mul node 'outer' \(output 'm'\) folds at import into a int64 tensor "
                                              r"of shape \[512, 512\]: 2097152 bytes"):
        load_model(model, DEV, max_tensor_bytes=1 << 20)
    np.testing.assert_array_equal(_np(load_model(model, DEV)()), [512, 512])


def _doublings(n: int) -> Any:
    """``c{k+1} = Concat(c{k}, c{k})`` from one int64 (a constant, not a parameter): ``2**n`` elements after ``n``
    nodes, all folded."""
    nodes = [helper.make_node("Concat", [f"c{k}", f"c{k}"], [f"c{k + 1}"], name=f"cat{k}", axis=0) for k in range(n)]
    nodes.append(helper.make_node("Shape", [f"c{n}"], ["y"], name="shape"))
    return _model(nodes, [], [helper.make_tensor_value_info("y", TensorProto.INT64, [1])], [_i64("c0", [7])])


def test_the_folded_values_together_stay_within_the_budget() -> None:
    """Each doubling is within 1000 bytes, but folding keeps them all: 16 + 32 + ... + 512 = 1008 bytes."""
    with pytest.raises(OnnxImportError, match=r"Concat node 'cat5' \(output 'c6'\) folds into a int64 tensor of "
                                              r"shape \[64\] \(512 bytes .*1008 bytes .* in all, more than the "
                                              r"limit max_tensor_bytes=1000 bytes"):
        load_model(_doublings(6), DEV, max_tensor_bytes=1000)
    np.testing.assert_array_equal(_np(load_model(_doublings(6), DEV, max_tensor_bytes=1016)()), [64])  # + Shape


def test_memory_error_in_a_node_becomes_an_import_error_naming_it() -> None:
    m = load_model(_model([helper.make_node("Relu", ["x"], ["y"], name="r")], [_f("x", [2])], [_f("y", [2])]), DEV)
    node = m.program.graph.nodes[0]

    def boom(*args: Any) -> Any:
        raise MemoryError("no memory")

    m.program.converters[id(node)] = dataclasses.replace(m.program.converters[id(node)], fn=boom)
    with pytest.raises(OnnxImportError, match=r"<ModelProto 'g'>: Relu node 'r' ran out of memory on inputs "
                                              r"\(float32\[2\]\)"):
        m(Tensor.from_data(np.ones(2, np.float32), DEV))


# ---------------------------------------------------------------------------------------------- the file
def test_raw_data_shorter_than_the_dims_is_refused_without_allocating() -> None:
    t = TensorProto()
    t.name, t.data_type, t.raw_data = "w", TensorProto.FLOAT, b"\0" * 16
    t.dims.extend(BIG)
    model = _model([helper.make_node("Add", ["x", "w"], ["y"], name="add")], [_f("x", [1, 1])],
                   [_f("y", [None, None])], [t])
    with pytest.raises(OnnxImportError, match=r"initializer 'w' could not be read: it declares dims "
                                              r"\[1048576, 1048576\] of float32 \(4398046511104 bytes\) but holds "
                                              r"16 bytes"):
        load_model(model.SerializeToString(), DEV)


@pytest.mark.parametrize("opset", [1000, 99])
def test_opset_beyond_the_known_range_is_refused(opset: int) -> None:
    model = _model([helper.make_node("Relu", ["x"], ["y"])], [_f("x", [2])], [_f("y", [2])], opset=opset)
    with pytest.raises(OnnxImportError, match=rf"ai.onnx opset {opset}, outside the opsets 1\.\.\d+"):
        load_model(model.SerializeToString(), DEV)


def test_outer_names_of_nested_subgraphs() -> None:
    """The parser (no per-node scope copies since issue 28) still finds what sub-graphs read from outside."""
    inner = helper.make_graph([helper.make_node("Add", ["x", "b"], ["o"], name="add")], "inner", [], [_f("o", [2])])
    other = helper.make_graph([helper.make_node("Neg", ["x"], ["p"], name="neg")], "other", [], [_f("p", [2])])
    nodes = [helper.make_node("Relu", ["x"], ["b"], name="relu"),
             helper.make_node("If", ["c"], ["y"], name="if", then_branch=inner, else_branch=other)]
    model = _model(nodes, [helper.make_tensor_value_info("c", TensorProto.BOOL, []), _f("x", [2])], [_f("y", [2])])
    m = load_model(model, DEV)
    if_node = m.program.graph.nodes[-1]
    assert {g.name: g.outer for g in if_node.subgraphs()} == {"inner": ["x", "b"], "other": ["x"]}
    x = np.array([-1.0, 2.0], np.float32)
    for c, want in ((True, x + np.maximum(x, 0)), (False, -x)):
        np.testing.assert_array_equal(_np(m(Tensor.from_data(np.array(c), DEV), Tensor.from_data(x, DEV))), want)


# ---------------------------------------------------------------------------------------------- input checks
def _two_inputs() -> Any:
    nodes = [helper.make_node("Add", ["x", "z"], ["y"], name="add")]
    return load_model(_model(nodes, [_f("x", ["batch", 3, 4]), _f("z", ["batch", 3, None])],
                             [_f("y", ["batch", 3, 4])]), DEV)


def test_input_of_another_rank_is_refused() -> None:
    m = _two_inputs()
    x = Tensor.from_data(np.ones((2, 3, 4, 1), np.float32), DEV)
    with pytest.raises(OnnxImportError, match=r"input 'x' is declared with shape \[batch, 3, 4\] \(rank 3\), got "
                                              r"shape \[2, 3, 4, 1\] \(rank 4\)"):
        m(x, Tensor.from_data(np.ones((2, 3, 4), np.float32), DEV))


def test_fixed_dim_mismatch_is_refused() -> None:
    m = _two_inputs()
    with pytest.raises(OnnxImportError, match=r"input 'x' .* got shape \[2, 5, 4\]: dim 1 must be 3, found 5"):
        m(Tensor.from_data(np.ones((2, 5, 4), np.float32), DEV), Tensor.from_data(np.ones((2, 5, 4), np.float32), DEV))


def test_symbolic_dims_must_agree_across_inputs() -> None:
    m = _two_inputs()
    with pytest.raises(OnnxImportError, match=r"input 'z' .*dim 0 is 'batch', which is 2 at 'x' dim 0 but 3 here"):
        m(Tensor.from_data(np.ones((2, 3, 4), np.float32), DEV), Tensor.from_data(np.ones((3, 3, 4), np.float32), DEV))


@pytest.mark.parametrize("batch", [1, 2, 7])
def test_dynamic_batch_and_unknown_dims_take_any_size(batch: int) -> None:
    m = _two_inputs()
    x = np.arange(batch * 12, dtype=np.float32).reshape(batch, 3, 4)
    z = np.ones((batch, 3, 1), np.float32)  # the unknown last dim broadcasts
    np.testing.assert_array_equal(_np(m(Tensor.from_data(x, DEV), Tensor.from_data(z, DEV))), x + 1)
