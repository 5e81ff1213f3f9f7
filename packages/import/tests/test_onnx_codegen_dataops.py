"""ModelGen on operators whose output size or rule the data decides (issue 30): ``NonMaxSuppression``, ``Unique``,
``Compress``, ``Dropout`` with ``ratio``/``training_mode`` inputs, and the ``T > 0`` rule of ``Adam``/``Momentum``.

The data-dependent part is one Tensor-API call in the generated ``forward`` (``functional.non_max_suppression``,
``x.unique``, ``condition.argwhere``) and a rule picked by ``mask_where`` instead of a host branch, so one
generated file must give onnxruntime's (or the onnx reference's) answer for *several different* inputs: different
numbers of boxes kept, of unique values, of true mask entries, ``T`` zero and positive.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ember
from ember import Tensor

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx.reference import ReferenceEvaluator  # noqa: E402

from _codegen_support import generate_numpy  # noqa: E402

h = onnx.helper
TP = onnx.TensorProto
_TRAINING = "ai.onnx.preview.training"
ROOT = Path(__file__).resolve().parents[3]


def _model(
    node: Any,
    inputs: list[tuple[str, int, list[Any]]],
    outputs: list[tuple[str, int, int]],
    opset: int = 18,
    training: bool = False,
) -> Any:
    """A one-node model; outputs as (name, element type, rank) with unknown dims (they depend on the data)."""
    ins = [h.make_tensor_value_info(n, t, s) for n, t, s in inputs]
    outs = [h.make_tensor_value_info(n, t, [None] * r) for n, t, r in outputs]
    opsets = [h.make_opsetid("", opset)] + ([h.make_opsetid(_TRAINING, 1)] if training else [])
    return h.make_model(h.make_graph([node], "g", ins, outs), opset_imports=opsets)


def _generate(model: Any, tmp: Path, tag: str) -> tuple[Any, str]:
    net, _, text = generate_numpy(model, tmp, tag, "_generated_dataops")
    return net, text


def _outputs(net: Any, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    dev = ember.backend("numpy").device()
    got = net(*[Tensor.from_data(v, dev, dtype=str(v.dtype)) for v in feeds.values()])
    return [np.asarray(t.to_data().to_numpy()) for t in (got if isinstance(got, tuple) else (got,))]


def _check(net: Any, model: Any, feeds: dict[str, np.ndarray], reference: bool = False) -> list[np.ndarray]:
    """The generated module's outputs equal onnxruntime's (or onnx's reference evaluator's) on ``feeds``."""
    if reference:
        want = ReferenceEvaluator(model).run(None, feeds)
    else:
        want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    got = _outputs(net, feeds)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape, (g.shape, w.shape, feeds)
        np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=1e-5, atol=1e-6)
    return got


# ---------------------------------------------------------------------- NonMaxSuppression
@pytest.mark.parametrize("center", [0, 1])
def test_non_max_suppression_keeps_a_data_dependent_number_of_boxes(center: int, tmp_path: Path) -> None:
    node = h.make_node(
        "NonMaxSuppression",
        ["boxes", "scores", "max_out", "iou", "score_threshold"],
        ["selected"],
        center_point_box=center,
    )
    model = _model(
        node,
        [
            ("boxes", TP.FLOAT, [2, 10, 4]),
            ("scores", TP.FLOAT, [2, 3, 10]),
            ("max_out", TP.INT64, [1]),
            ("iou", TP.FLOAT, [1]),
            ("score_threshold", TP.FLOAT, [1]),
        ],
        [("selected", TP.INT64, 2)],
        opset=11,
    )
    net, src = _generate(model, tmp_path, f"nms_{center}")
    assert "functional.non_max_suppression(" in src
    rng = np.random.default_rng(center)
    counts = set()
    for iou, thr, limit in ((0.5, 0.0, 10), (0.1, 0.3, 4), (0.9, 0.6, 2), (0.3, 0.0, 0), (0.0, -1.0, 10)):
        xy = rng.uniform(0, 3, (2, 10, 2))
        boxes = (
            np.concatenate([xy, xy + rng.uniform(0.5, 2.0, (2, 10, 2))], -1)
            if not center
            else np.concatenate([xy, rng.uniform(0.5, 2.0, (2, 10, 2))], -1)
        )
        feeds = {
            "boxes": boxes.astype(np.float32),
            "scores": rng.uniform(0, 1, (2, 3, 10)).astype(np.float32),
            "max_out": np.array([limit], np.int64),
            "iou": np.array([iou], np.float32),
            "score_threshold": np.array([thr], np.float32),
        }
        counts.add(_check(net, model, feeds)[0].shape[0])
    assert len(counts) >= 4  # really different numbers of boxes kept by the one generated file


# ---------------------------------------------------------------------- Unique
@pytest.mark.parametrize(("axis", "sorted_"), [(None, 1), (None, 0), (0, 1), (1, 0), (-1, 1)])
def test_unique_gives_as_many_values_as_the_data_holds(axis: int | None, sorted_: int, tmp_path: Path) -> None:
    attrs = {"sorted": sorted_} | ({} if axis is None else {"axis": axis})
    node = h.make_node("Unique", ["x"], ["y", "indices", "inverse", "counts"], **attrs)
    y_rank = 1 if axis is None else 2
    model = _model(
        node,
        [("x", TP.FLOAT, [6, 4])],
        [("y", TP.FLOAT, y_rank), ("indices", TP.INT64, 1), ("inverse", TP.INT64, 1), ("counts", TP.INT64, 1)],
        opset=11,
    )
    net, src = _generate(model, tmp_path, f"unique_{axis}_{sorted_}")
    assert ".unique(" in src
    rng = np.random.default_rng(3)
    sizes = set()
    for high in (1, 2, 3, 50):
        x = rng.integers(0, high, (6, 4)).astype(np.float32)
        sizes.add(_check(net, model, {"x": x})[0].shape[0 if axis is None else (axis % 2)])
    assert len(sizes) >= 3


# ---------------------------------------------------------------------- Compress
@pytest.mark.parametrize(("axis", "length"), [(None, 12), (0, 3), (1, 4), (-1, 2)])
def test_compress_keeps_the_true_entries_of_each_mask(axis: int | None, length: int, tmp_path: Path) -> None:
    node = h.make_node("Compress", ["x", "condition"], ["y"], **({} if axis is None else {"axis": axis}))
    model = _model(
        node,
        [("x", TP.FLOAT, [3, 4]), ("condition", TP.BOOL, [length])],
        [("y", TP.FLOAT, 1 if axis is None else 2)],
        opset=11,
    )
    net, src = _generate(model, tmp_path, f"compress_{axis}_{length}")
    assert ".argwhere()" in src
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    rng = np.random.default_rng(length)
    for mask in (np.zeros(length, bool), np.ones(length, bool), rng.random(length) > 0.5, rng.random(length) > 0.5):
        _check(net, model, {"x": x, "condition": mask})


# ---------------------------------------------------------------------- Dropout
def test_dropout_ratio_and_training_mode_from_the_data(tmp_path: Path) -> None:
    node = h.make_node("Dropout", ["x", "r", "t"], ["y", "mask"])
    model = _model(
        node,
        [("x", TP.FLOAT, [40, 50]), ("r", TP.FLOAT, []), ("t", TP.BOOL, [])],
        [("y", TP.FLOAT, 2), ("mask", TP.BOOL, 2)],
        opset=13,
    )
    net, src = _generate(model, tmp_path, "dropout")
    assert "random_like(" in src and "Tensor.random(" not in src  # drawn when forward runs, never a constant
    x = np.random.default_rng(0).standard_normal((40, 50)).astype(np.float32) + 5.0  # no zero
    for r, t in ((0.5, False), (0.0, True), (0.9, False)):  # outputs known: x and an all-true mask
        _check(net, model, {"x": x, "r": np.array(r, np.float32), "t": np.array(t)})
    masks = []
    for r in (0.25, 0.75):
        y, mask = _outputs(net, {"x": x, "r": np.array(r, np.float32), "t": np.array(True)})
        np.testing.assert_allclose(y, np.where(mask, x / (1.0 - r), 0.0), rtol=1e-6)
        assert abs(mask.mean() - (1.0 - r)) < 0.05  # 2,000 draws: the kept fraction is 1 - ratio
        masks.append(mask)
    assert not np.array_equal(masks[0], masks[1])


def test_dropout_ratio_input_in_inference(tmp_path: Path) -> None:
    node = h.make_node("Dropout", ["x", "r"], ["y"])
    model = _model(node, [("x", TP.FLOAT, [3, 4]), ("r", TP.FLOAT, [])], [("y", TP.FLOAT, 2)], opset=13)
    net, _ = _generate(model, tmp_path, "dropout_inference")
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    for r in (0.1, 0.5, 0.99):
        _check(net, model, {"x": x, "r": np.array(r, np.float32)})


# ---------------------------------------------------------------------- Adam / Momentum
def _optimizer(op: str, states: str, **attrs: Any) -> Any:
    ins = ["R", "T", "X1", "X2", "G1", "G2"] + [f"{s}{i}" for s in states for i in (1, 2)]
    outs = ["X1_new", "X2_new"] + [f"{s}{i}_new" for s in states for i in (1, 2)]
    node = h.make_node(op, ins, outs, domain=_TRAINING, **attrs)
    return _model(
        node,
        [("R", TP.FLOAT, []), ("T", TP.INT64, [])] + [(n, TP.FLOAT, [3]) for n in ins[2:]],
        [(n, TP.FLOAT, 1) for n in outs],
        training=True,
    )


@pytest.mark.parametrize(
    ("op", "states", "attrs"),
    [
        (
            "Adam",
            "VH",
            {"alpha": 0.9, "beta": 0.999, "epsilon": 1e-6, "norm_coefficient": 0.01, "norm_coefficient_post": 0.02},
        ),
        ("Momentum", "V", {"alpha": 0.9, "beta": 0.5, "mode": "standard", "norm_coefficient": 0.01}),
        ("Momentum", "V", {"alpha": 0.8, "beta": 0.3, "mode": "nesterov", "norm_coefficient": 0.0}),
    ],
)
def test_optimizer_step_count_rule_is_data(op: str, states: str, attrs: dict[str, Any], tmp_path: Path) -> None:
    model = _optimizer(op, states, **attrs)
    net, src = _generate(model, tmp_path, f"{op}_{attrs.get('mode', '')}")
    assert "mask_" in src  # the T > 0 rule picked by the data, in forward
    rng = np.random.default_rng(1)
    for t in (0, 1, 7, 0, 100):
        feeds = {"R": np.array(0.1, np.float32), "T": np.array(t, np.int64)}
        for name in ["X1", "X2", "G1", "G2"] + [f"{s}{i}" for s in states for i in (1, 2)]:
            feeds[name] = rng.uniform(0.1, 1.0, 3).astype(np.float32)
        _check(net, model, feeds, reference=True)


# ---------------------------------------------------------------------- generated code is lint-clean
def test_generated_data_op_files_pass_ruff_and_mypy(tmp_path: Path) -> None:
    models = {
        "nms": _model(
            h.make_node("NonMaxSuppression", ["b", "s", "k", "iou", "t"], ["sel"]),
            [
                ("b", TP.FLOAT, [1, 4, 4]),
                ("s", TP.FLOAT, [1, 2, 4]),
                ("k", TP.INT64, [1]),
                ("iou", TP.FLOAT, [1]),
                ("t", TP.FLOAT, [1]),
            ],
            [("sel", TP.INT64, 2)],
            opset=11,
        ),
        "unique": _model(
            h.make_node("Unique", ["x"], ["y", "i", "v", "c"], axis=0),
            [("x", TP.FLOAT, [4, 2])],
            [("y", TP.FLOAT, 2), ("i", TP.INT64, 1), ("v", TP.INT64, 1), ("c", TP.INT64, 1)],
            opset=11,
        ),
        "dropout": _model(
            h.make_node("Dropout", ["x", "r", "t"], ["y", "m"]),
            [("x", TP.FLOAT, [2, 3]), ("r", TP.FLOAT, []), ("t", TP.BOOL, [])],
            [("y", TP.FLOAT, 2), ("m", TP.BOOL, 2)],
            opset=13,
        ),
        "momentum": _optimizer("Momentum", "V", alpha=0.9, beta=0.5, mode="nesterov", norm_coefficient=0.0),
    }
    lint = tmp_path / "lint"
    lint.mkdir()
    files = []
    for name, model in models.items():  # one module name each: mypy refuses two modules named ``model``
        _, src = _generate(model, tmp_path, name)
        files.append(lint / f"{name}.py")
        files[-1].write_text(src)
    for tool in (["ruff", "check", "--no-cache"], ["mypy"]):
        if importlib.util.find_spec(tool[0]) is None:
            continue
        flag = "--config-file" if tool[0] == "mypy" else "--config"
        done = subprocess.run(
            [sys.executable, "-m", *tool, flag, str(ROOT / "pyproject.toml"), *map(str, files)],
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stdout + done.stderr
