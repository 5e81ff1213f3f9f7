"""Long ONNX graphs of every node kind the import passes treat differently, for the import-cost guard
(``test_onnx_import_cost.py``) and the import-time benchmark (``bench/onnx_import.py``)."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["blocks", "NODES_PER_BLOCK"]

#: nodes in one block of :func:`blocks` (the ``If`` counts once; its branches hold one node each)
NODES_PER_BLOCK = 14


def blocks(n_blocks: int) -> Any:
    """A chain of ``n_blocks`` blocks over ``x: float32[batch, 8]`` (``NODES_PER_BLOCK`` nodes each), every block:

    - ``Add`` of a per-block float initializer (a parameter) and ``Relu``;
    - a dynamic reshape: ``Reshape(h, Concat(Unsqueeze(Gather(Shape(h), 0)), [2, 4]))``: the batch is read when
      the model runs, the static dims fold (partially static shape);
    - ``Mul`` by a ``Constant`` node (folded), ``Flatten`` back to ``[batch, 8]``;
    - ``Shape`` of an initializer and a ``ConstantOfShape`` on it (fully constant: folded);
    - an ``If`` on a constant condition whose branches read the running value from the outer scope;
    - a dead ``Neg`` (removed).
    """
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    nodes: list[Any] = []
    inits = [numpy_helper.from_array(np.array(0, np.int64), "zero"),
             numpy_helper.from_array(np.array([0], np.int64), "axes0"),
             numpy_helper.from_array(np.array([2, 4], np.int64), "tail"),
             numpy_helper.from_array(np.array(True), "yes")]
    prev = "x"
    for b in range(n_blocks):
        p = f"b{b}_"
        inits.append(numpy_helper.from_array(rng.standard_normal(8).astype(np.float32) * 0.1, p + "bias"))
        then = helper.make_graph([helper.make_node("Identity", [p + "f"], [p + "t"])], p + "then", [],
                                 [helper.make_tensor_value_info(p + "t", TensorProto.FLOAT, ["batch", 8])])
        other = helper.make_graph([helper.make_node("Neg", [p + "f"], [p + "e"])], p + "else", [],
                                  [helper.make_tensor_value_info(p + "e", TensorProto.FLOAT, ["batch", 8])])
        out = "y" if b == n_blocks - 1 else p + "out"
        nodes += [
            helper.make_node("Add", [prev, p + "bias"], [p + "a"]),
            helper.make_node("Relu", [p + "a"], [p + "h"]),
            helper.make_node("Shape", [p + "h"], [p + "s"]),
            helper.make_node("Gather", [p + "s", "zero"], [p + "n"], axis=0),
            helper.make_node("Unsqueeze", [p + "n", "axes0"], [p + "n1"]),
            helper.make_node("Concat", [p + "n1", "tail"], [p + "shape"], axis=0),
            helper.make_node("Reshape", [p + "h", p + "shape"], [p + "h3"]),
            helper.make_node("Constant", [], [p + "k"], value=numpy_helper.from_array(
                np.full(4, 0.5, np.float32), p + "kv")),
            helper.make_node("Mul", [p + "h3", p + "k"], [p + "m"]),
            helper.make_node("Flatten", [p + "m"], [p + "f"], axis=1),
            helper.make_node("Shape", ["tail"], [p + "ts"]),
            helper.make_node("ConstantOfShape", [p + "ts"], [p + "ones"]),
            helper.make_node("If", ["yes"], [out], then_branch=then, else_branch=other),
            helper.make_node("Neg", [p + "f"], [p + "dead"]),
        ]
        prev = out
    graph = helper.make_graph(nodes, "blocks", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 8])], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


def blocks_reference(x: np.ndarray, model: Any) -> np.ndarray:
    """The output of :func:`blocks` recomputed with numpy (each block: ``relu(x + bias) * 0.5``)."""
    from onnx import numpy_helper

    biases = [numpy_helper.to_array(t) for t in model.graph.initializer if t.name.endswith("_bias")]
    for bias in biases:
        x = np.maximum(x + bias, 0) * np.float32(0.5)
    return x
