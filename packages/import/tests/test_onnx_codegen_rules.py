"""ModelGen's host rules (issue 30): a converter's planning on values read from the data, recorded as one line.

``Reshape`` with its shape as a graph input plans on that shape with ONNX's rules (``0`` copies a dim, ``-1`` is
inferred, ``allowzero`` makes ``0`` an empty dim). The planning is :func:`ember_import.onnx.rules.reshape_target`,
a host rule: the generated code calls it (``shape = rules.reshape_target(...)``) and passes its result on
(``x.reshape(shape)``). One generated file is compared with onnxruntime for several shapes, so the code is shown
not to be specialised on the trace's stand-in values; a rule called on constants alone folds into a literal.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ember
from ember import Tensor

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from _codegen_support import generate_numpy  # noqa: E402
from ember_import.onnx import OnnxImportError, rules  # noqa: E402
from ember_import.onnx.rules import from_data, host_rule  # noqa: E402

h = onnx.helper
TP = onnx.TensorProto
DEV = ember.backend("numpy").device()


def _model(nodes: list[Any], ins: list[Any], outs: list[Any], opset: int, inits: list[Any] | None = None) -> Any:
    graph = h.make_graph(nodes, "g", ins, outs, initializer=inits or [])
    return h.make_model(graph, opset_imports=[h.make_opsetid("", opset)])


def _compare(model: Any, net: Any, feeds: dict[str, np.ndarray], atol: float = 0.0) -> None:
    """The generated ``net`` on ``feeds`` equals onnxruntime (every output, shape and values)."""
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    want = sess.run(None, feeds)
    got = net.forward(*(Tensor.from_data(v, DEV, dtype=str(v.dtype)) for v in feeds.values()))
    got = list(got) if isinstance(got, (tuple, list)) else [got]
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert tuple(g.shape) == w.shape, feeds
        np.testing.assert_allclose(g.to_numpy(), w, rtol=0, atol=atol)


def _rule_lines(src: str) -> list[str]:
    return [ln.strip() for ln in src.splitlines() if "rules." in ln and "import" not in ln]


# ---------------------------------------------------------------- the mechanism
def test_rule_outside_a_trace_is_a_plain_call() -> None:
    assert rules.reshape_target([2, 3, 4], [4, 0, -1], False) == [4, 3, 2]
    assert rules.reshape_target([2, 0, 4], [0, 8], True) == [0, 8]
    assert type(rules.reshape_target([2, 3], [-1], False)[0]) is int
    assert not from_data([1, 2], 3.0)
    with pytest.raises(OnnxImportError, match="more than one -1"):
        rules.reshape_target([2, 3], [-1, -1], False)


def test_host_rule_takes_a_lowercase_variable_name() -> None:
    with pytest.raises(ValueError, match="lower-case identifier"):
        host_rule(var="Shape")


def test_reshape_rule_is_one_line_and_its_result_feeds_the_next_call(tmp_path: Path) -> None:
    model = _model([h.make_node("Reshape", ["x", "shape"], ["y"])],
                   [h.make_tensor_value_info("x", TP.FLOAT, [2, 3, 4]),
                    h.make_tensor_value_info("shape", TP.INT64, [3])],
                   [h.make_tensor_value_info("y", TP.FLOAT, [None, None, None])], 14)
    net, _, src = generate_numpy(model, tmp_path, "reshape", "_generated_rules")
    assert "from ember_import.onnx import rules" in src
    lines = _rule_lines(src)
    assert len(lines) == 1 and lines[0].startswith("shape_1 = rules.reshape_target([2, 3, 4], "), lines
    assert "x.reshape(shape_1)" in src  # the rule's result list is passed on as its variable
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4) - 7.5
    for spec in ([4, 0, -1], [0, 4, 3], [-1, 1, 6], [24, 1, 1], [2, -1, 2], [0, 0, -1], [1, 2, 12]):
        _compare(model, net, {"x": x, "shape": np.array(spec, dtype=np.int64)})
    with pytest.raises(OnnxImportError, match="cannot reshape"):  # a shape the model refuses, as onnxruntime does
        net.forward(Tensor.from_data(x, DEV), Tensor.from_data(np.array([5, 5, 1]), DEV, dtype="int64"))


@pytest.mark.parametrize("dims", [[2, 3, 4], [2, 0, 3]], ids=["full", "empty"])
def test_reshape_allowzero_from_data(tmp_path: Path, dims: list[int]) -> None:
    model = _model([h.make_node("Reshape", ["x", "shape"], ["y"], allowzero=1)],
                   [h.make_tensor_value_info("x", TP.FLOAT, dims),
                    h.make_tensor_value_info("shape", TP.INT64, [3])],
                   [h.make_tensor_value_info("y", TP.FLOAT, [None, None, None])], 14)
    net, _, src = generate_numpy(model, tmp_path, f"allowzero_{len(dims)}_{dims[1]}", "_generated_rules")
    assert "rules.reshape_target(" in src and ", True)" in src
    x = np.arange(int(np.prod(dims)), dtype=np.float32).reshape(dims) + 0.25
    specs = [[4, -1, 3], [24, 1, 1], [3, 2, 4]] if dims[1] else [[0, 6, 5], [3, 0, 7], [1, 1, 0]]
    for spec in specs:
        _compare(model, net, {"x": x, "shape": np.array(spec, dtype=np.int64)})


def test_rule_on_constants_alone_folds(tmp_path: Path) -> None:
    spec = h.make_tensor("shape", TP.INT64, [3], [0, -1, 2])
    model = _model([h.make_node("Reshape", ["x", "shape"], ["y"])],
                   [h.make_tensor_value_info("x", TP.FLOAT, [2, 3, 4])],
                   [h.make_tensor_value_info("y", TP.FLOAT, [2, 6, 2])], 14, [spec])
    net, _, src = generate_numpy(model, tmp_path, "folded", "_generated_rules")
    assert "rules." not in src and "import rules" not in src
    assert "x.reshape([2, 6, 2])" in src
    _compare(model, net, {"x": np.arange(24, dtype=np.float32).reshape(2, 3, 4)})
