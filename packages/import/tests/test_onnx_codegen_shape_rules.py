"""ModelGen on shape-list operators whose shape, sizes, pads or bounds are graph inputs (issue 30).

``Expand``, ``ConstantOfShape``, ``Tile``, ``Pad`` (pads and axes), ``Split``/``SplitToSequence`` (sizes),
``Range`` (float and int bounds, negative steps) and ``MaxUnpool`` (``output_shape``) plan on values read from the
data; their generated code keeps that planning as code (host rules of :mod:`ember_import.onnx.rules`, or the
values passed straight to a Tensor-API call). Each model is generated once and compared with onnxruntime (or numpy
for ``MaxUnpool``, whose ``output_shape`` padding follows the ONNX reference) on several input values, so the code
is shown to follow the values, not the trace's stand-ins.
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
from _codegen_support import generate_numpy, graph_model  # noqa: E402

h = onnx.helper
TP = onnx.TensorProto
DEV = ember.backend("numpy").device()


_model = graph_model


def _vi(name: str, elem: int, shape: list[Any]) -> Any:
    return h.make_tensor_value_info(name, elem, shape)


def _run(net: Any, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    got = net.forward(*(Tensor.from_data(v, DEV, dtype=str(v.dtype)) for v in feeds.values()))
    return [t.to_numpy() for t in (got if isinstance(got, (tuple, list)) else [got])]


def _check(model: Any, tmp: Path, tag: str, cases: list[dict[str, np.ndarray]], atol: float = 0.0) -> str:
    """Generate ``model`` once; on every feed of ``cases`` its outputs equal onnxruntime's. Returns the source."""
    net, _, src = generate_numpy(model, tmp, tag, "_generated_shape_rules")
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for feeds in cases:
        want = sess.run(None, feeds)
        got = _run(net, feeds)
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            assert g.shape == w.shape, (tag, feeds)
            np.testing.assert_allclose(g, w, rtol=0, atol=atol, err_msg=f"{tag}: {feeds}")
    return src


def _i64(*v: int) -> np.ndarray:
    return np.array(v, dtype=np.int64)


X34 = np.arange(12, dtype=np.float32).reshape(3, 4) * 0.5 - 2.0


def test_expand_shape_from_data(tmp_path: Path) -> None:
    model = _model(
        [h.make_node("Expand", ["x", "shape"], ["y"])],
        [_vi("x", TP.FLOAT, [3, 1]), _vi("shape", TP.INT64, [3])],
        [_vi("y", TP.FLOAT, [None] * 3)],
        13,
    )
    x = np.array([[1.5], [-2.0], [3.25]], dtype=np.float32)
    src = _check(
        model,
        tmp_path,
        "expand",
        [{"x": x, "shape": _i64(*s)} for s in ([2, 1, 6], [1, 3, 4], [1, 1, 1], [2, 3, 0], [4, 1, 1])],
    )
    assert "rules.broadcast_shapes(" in src and ".expand(shape" in src


def test_constant_of_shape_from_data(tmp_path: Path) -> None:
    value = h.make_tensor("value", TP.INT64, [1], [7])
    model = _model(
        [h.make_node("ConstantOfShape", ["shape"], ["y"], value=value)],
        [_vi("shape", TP.INT64, [2])],
        [_vi("y", TP.INT64, [None] * 2)],
        20,
    )
    _check(model, tmp_path, "cos", [{"shape": _i64(*s)} for s in ([2, 3], [0, 4], [1, 1], [5, 0])])


def test_tile_repeats_from_data(tmp_path: Path) -> None:
    model = _model(
        [h.make_node("Tile", ["x", "repeats"], ["y"])],
        [_vi("x", TP.FLOAT, [3, 4]), _vi("repeats", TP.INT64, [2])],
        [_vi("y", TP.FLOAT, [None] * 2)],
        13,
    )
    _check(model, tmp_path, "tile", [{"x": X34, "repeats": _i64(*r)} for r in ([1, 1], [2, 3], [0, 2], [3, 1])])


def test_pad_pads_and_axes_from_data(tmp_path: Path) -> None:
    model = _model(
        [h.make_node("Pad", ["x", "pads", "value", "axes"], ["y"])],
        [
            _vi("x", TP.FLOAT, [2, 3, 4]),
            _vi("pads", TP.INT64, [4]),
            _vi("value", TP.FLOAT, []),
            _vi("axes", TP.INT64, [2]),
        ],
        [_vi("y", TP.FLOAT, [None] * 3)],
        18,
    )
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4) - 11.5
    cases = [
        ([1, 0, 2, 1], [0, 2], 0.5),
        ([-1, 2, 1, -1], [-1, 1], -3.0),
        ([0, 0, 0, 0], [2, 0], 1.0),
        ([2, -2, 0, 1], [1, -3], 9.0),
    ]
    src = _check(
        model,
        tmp_path,
        "pad_axes",
        [{"x": x, "pads": _i64(*p), "value": np.array(v, dtype=np.float32), "axes": _i64(*a)} for p, a, v in cases],
    )
    assert "rules.pad_pairs(3, " in src


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect"])
def test_pad_negative_pads_from_data(tmp_path: Path, mode: str) -> None:
    model = _model(
        [h.make_node("Pad", ["x", "pads"], ["y"], mode=mode)],
        [_vi("x", TP.FLOAT, [3, 4]), _vi("pads", TP.INT64, [4])],
        [_vi("y", TP.FLOAT, [None] * 2)],
        13,
    )
    cases = [[1, -1, 0, 2], [-1, 1, 1, -1], [0, 0, 0, 0], [1, 1, -1, 0]]  # (reflect: pads below the cropped dims)
    _check(model, tmp_path, f"pad_{mode}", [{"x": X34, "pads": _i64(*p)} for p in cases])


def test_wrap_pad_from_data(tmp_path: Path) -> None:
    model = _model(
        [h.make_node("Pad", ["x", "pads"], ["y"], mode="wrap")],
        [_vi("x", TP.FLOAT, [3, 4]), _vi("pads", TP.INT64, [4])],
        [_vi("y", TP.FLOAT, [None] * 2)],
        19,
    )
    cases = [[1, 2, 0, 3], [0, 5, 4, 1], [-1, 1, 2, -2], [0, 0, 0, 0], [3, -3, 1, 9]]
    src = _check(model, tmp_path, "pad_wrap", [{"x": X34, "pads": _i64(*p)} for p in cases])
    assert "rules.wrap_pad_plan([3, 4], " in src


@pytest.mark.parametrize("opset", [13, 18])
def test_split_sizes_from_data(tmp_path: Path, opset: int) -> None:
    model = _model(
        [h.make_node("Split", ["x", "split"], ["a", "b"], axis=1)],
        [_vi("x", TP.FLOAT, [3, 4]), _vi("split", TP.INT64, [2])],
        [_vi("a", TP.FLOAT, [None] * 2), _vi("b", TP.FLOAT, [None] * 2)],
        opset,
    )
    src = _check(
        model, tmp_path, f"split{opset}", [{"x": X34, "split": _i64(*s)} for s in ([1, 3], [4, 0], [2, 2], [0, 4])]
    )
    assert "rules.split_sizes(4, 2, " in src


def test_split_to_sequence_sizes_from_data(tmp_path: Path) -> None:
    nodes = [
        h.make_node("SplitToSequence", ["x", "split"], ["seq"], axis=0),
        h.make_node("SequenceAt", ["seq", "first"], ["a"]),
        h.make_node("SequenceAt", ["seq", "last"], ["c"]),
    ]
    inits = [h.make_tensor("first", TP.INT64, [], [0]), h.make_tensor("last", TP.INT64, [], [-1])]
    model = _model(
        nodes,
        [_vi("x", TP.FLOAT, [6, 2]), _vi("split", TP.INT64, [3])],
        [_vi("a", TP.FLOAT, [None] * 2), _vi("c", TP.FLOAT, [None] * 2)],
        13,
        inits,
    )
    x = np.arange(12, dtype=np.float32).reshape(6, 2)
    _check(model, tmp_path, "sts", [{"x": x, "split": _i64(*s)} for s in ([1, 2, 3], [6, 0, 0], [2, 2, 2])])


@pytest.mark.parametrize(
    ("elem", "dtype", "cases"),
    [
        (
            TP.FLOAT,
            np.float32,
            [(1.0, 10.0, 2.0), (10.0, 1.0, -3.0), (0.5, 0.5, 1.0), (-2.5, 3.1, 0.7), (3.0, 1.0, 1.0)],
        ),
        (TP.INT32, np.int32, [(10, 4, -3), (0, 7, 2), (5, 5, 1), (-4, 9, 5), (2, -6, -1)]),
    ],
    ids=["float", "int32"],
)
def test_range_bounds_from_data(tmp_path: Path, elem: int, dtype: Any, cases: list[tuple[Any, Any, Any]]) -> None:
    model = _model(
        [h.make_node("Range", ["start", "limit", "delta"], ["y"])],
        [_vi("start", elem, []), _vi("limit", elem, []), _vi("delta", elem, [])],
        [_vi("y", elem, [None])],
        11,
    )
    feeds = [
        {"start": np.array(a, dtype), "limit": np.array(b, dtype), "delta": np.array(d, dtype)} for a, b, d in cases
    ]
    src = _check(model, tmp_path, f"range_{np.dtype(dtype).name}", feeds, atol=1e-6)
    assert "rules.range_count(" in src


def test_max_unpool_output_shape_from_data(tmp_path: Path) -> None:
    """Checked against the ONNX reference's rule (``op_max_unpool.py``: scatter into the inferred shape, zeros
    appended at the end of each dim up to ``output_shape``)."""
    model = _model(
        [h.make_node("MaxUnpool", ["x", "i", "out"], ["y"], kernel_shape=[2, 2], strides=[2, 2])],
        [_vi("x", TP.FLOAT, [1, 1, 2, 2]), _vi("i", TP.INT64, [1, 1, 2, 2]), _vi("out", TP.INT64, [4])],
        [_vi("y", TP.FLOAT, [None] * 4)],
        11,
    )
    net, _, src = generate_numpy(model, tmp_path, "unpool", "_generated_shape_rules")
    assert "rules.unpool_ends(" in src
    x = np.array([[[[5.0, 6.0], [7.0, 8.0]]]], dtype=np.float32)
    idx = np.array([[[[5, 7], [13, 15]]]], dtype=np.int64)
    for shape in ([1, 1, 4, 4], [1, 1, 5, 5], [1, 1, 4, 7], [2, 1, 6, 4]):
        flat = np.zeros(16, dtype=np.float32)
        flat[idx.ravel()] = x.ravel()
        want = np.pad(flat.reshape(1, 1, 4, 4), [(0, s - i) for s, i in zip(shape, [1, 1, 4, 4])])
        (got,) = _run(net, {"x": x, "i": idx, "out": _i64(*shape)})
        np.testing.assert_array_equal(got, want)


def test_eye_like_of_a_static_shape(tmp_path: Path) -> None:
    model = _model(
        [h.make_node("EyeLike", ["x"], ["y"], k=1)], [_vi("x", TP.FLOAT, [3, 4])], [_vi("y", TP.FLOAT, [3, 4])], 9
    )
    _check(model, tmp_path, "eyelike", [{"x": X34}, {"x": -X34}])
