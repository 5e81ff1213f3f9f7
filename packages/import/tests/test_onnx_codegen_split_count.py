"""ModelGen on calls whose *number* of results depends on a value read from the data (issue 30).

``SplitToSequence`` with a scalar ``split`` graph input gives ``ceil(size / split)`` pieces: the generated code
must keep the pieces as a run-time list (``x.split(split_size, 1)``), not unpack the count the trace saw with its
stand-in value. One generated file is compared with onnxruntime for several ``split`` values; a graph that
would need the count fixed (``Split`` into named outputs) is refused, never wrong.
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
from ember_import.onnx import ModelGenError  # noqa: E402

h = onnx.helper
TP = onnx.TensorProto


def _generate(model: Any, tmp: Path, tag: str) -> tuple[Any, str]:
    net, _, text = generate_numpy(model, tmp, tag, "_generated_split")
    return net, text


def _split_model(axis: int, keepdims_out: str = "seq", concat: bool = False) -> Any:
    nodes = [h.make_node("SplitToSequence", ["data", "split"], ["seq"], axis=axis)]
    out: Any = h.make_tensor_sequence_value_info("seq", TP.FLOAT, None)
    if concat:  # the run-time list consumed by a sequence op: pieces reversed along ``axis`` back to ``data``
        nodes.append(h.make_node("ConcatFromSequence", ["seq"], ["y"], axis=axis))
        out = h.make_tensor_value_info("y", TP.FLOAT, [None, None])
    ins = [h.make_tensor_value_info("data", TP.FLOAT, [3, 6]), h.make_tensor_value_info("split", TP.INT64, [])]
    return h.make_model(h.make_graph(nodes, "g", ins, [out]), opset_imports=[h.make_opsetid("", 18)])


def _feeds(split: int) -> dict[str, np.ndarray]:
    data = np.arange(18, dtype=np.float32).reshape(3, 6) * 0.5 - 2.0
    return {"data": data, "split": np.array(split, dtype=np.int64)}


@pytest.mark.parametrize("axis", [1, 0])
def test_split_to_sequence_count_from_data(tmp_path: Path, axis: int) -> None:
    model = _split_model(axis)
    net, src = _generate(model, tmp_path, f"sts{axis}")
    assert "list[Tensor]" in src
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    dev = ember.backend("numpy").device()
    for split in (1, 2, 4, 5, 6):
        feeds = _feeds(split)
        want = sess.run(None, feeds)[0]
        got = net.forward(*(Tensor.from_data(v, dev) for v in feeds.values()))
        assert isinstance(got, list)
        assert len(got) == len(want), (split, len(got), len(want))
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g.to_numpy(), w)


def test_split_to_sequence_count_from_data_consumed(tmp_path: Path) -> None:
    model = _split_model(1, concat=True)
    net, _ = _generate(model, tmp_path, "stscat")
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    dev = ember.backend("numpy").device()
    for split in (1, 2, 4, 5, 6):
        feeds = _feeds(split)
        want = sess.run(None, feeds)[0]
        got = net.forward(*(Tensor.from_data(v, dev) for v in feeds.values()))
        np.testing.assert_array_equal(got.to_numpy(), want)


def _no_split_model(keepdims: int) -> Any:
    node = h.make_node("SplitToSequence", ["data"], ["seq"], axis=0, keepdims=keepdims)
    ins = [h.make_tensor_value_info("data", TP.FLOAT, ["N", 4])]
    out = h.make_tensor_sequence_value_info("seq", TP.FLOAT, None)
    return h.make_model(h.make_graph([node], "g", ins, [out]), opset_imports=[h.make_opsetid("", 18)])


def test_split_to_sequence_count_from_run_time_dim(tmp_path: Path) -> None:
    """Without ``split``, one piece per element of a run-time dim (``N``): as many pieces as each batch has."""
    model = _no_split_model(1)
    net, _ = _generate(model, tmp_path, "stsdim")
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    dev = ember.backend("numpy").device()
    for n in (1, 3, 5):
        data = np.arange(4 * n, dtype=np.float32).reshape(n, 4) - 3.0
        want = sess.run(None, {"data": data})[0]
        got = net.forward(Tensor.from_data(data, dev))
        assert len(got) == len(want) == n
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g.to_numpy(), w)


def test_split_to_sequence_squeezed_pieces_of_run_time_count_refused(tmp_path: Path) -> None:
    """``keepdims=0`` squeezes each piece in the converter, a loop the trace would fix at the stand-in's count:
    refused, not wrong."""
    with pytest.raises(ModelGenError):
        _generate(_no_split_model(0), tmp_path, "stsnokeep")


def test_split_num_outputs_of_run_time_dim(tmp_path: Path) -> None:
    """``Split`` (opset 18) into 3 ``num_outputs`` of a run-time dim ``N``: chunks of ``ceil(N / 3)``, the last
    smaller, computed in the generated code for each ``N`` (not the trace's stand-in size)."""
    outs = ["y1", "y2", "y3"]
    node = h.make_node("Split", ["x"], outs, axis=0, num_outputs=3)
    ins = [h.make_tensor_value_info("x", TP.FLOAT, ["N", 4])]
    model = h.make_model(
        h.make_graph([node], "g", ins, [h.make_tensor_value_info(o, TP.FLOAT, [None, 4]) for o in outs]),
        opset_imports=[h.make_opsetid("", 18)],
    )
    net, _ = _generate(model, tmp_path, "splitnum")
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    dev = ember.backend("numpy").device()
    for n in (6, 7, 9):
        data = np.arange(4 * n, dtype=np.float32).reshape(n, 4) * 0.25
        want = sess.run(None, {"x": data})
        got = net.forward(Tensor.from_data(data, dev))
        assert [g.to_numpy().shape for g in got] == [w.shape for w in want]
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g.to_numpy(), w)
