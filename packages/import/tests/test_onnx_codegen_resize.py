"""ModelGen on ``Resize``/``Upsample`` whose ``scales``, ``sizes`` or ``roi`` are graph inputs (issue 30).

The output size and the sampling (source coordinates, neighbours, weights) depend on those values, so the
generated ``forward`` computes them with code when it runs. One generated file must give the answer of ONNX's
reference implementation (``onnx.reference``, float64 coordinates) for *several different* values of the input
(the trace's own stand-in values differ from all of them): every mode
(nearest with each rounding, linear, cubic), the coordinate transforms, ``keep_aspect_ratio_policy``, ``axes``,
``antialias`` (whose tap count depends on the scale), ``exclude_outside``, ``tf_crop_and_resize``'s ``roi``, the
legacy ``Upsample``/``Resize``-10, an integer input, and a U-Net-style upsample to a skip connection's size taken
with ``Shape`` on a dynamic input. ``load_model`` (the same converter) is checked on the same graphs.

The expectation is the reference's, not onnxruntime's: onnxruntime computes coordinates in float32 (``2 / 0.8f``
is ``2.5`` there, ``2.4999...`` in float64, so nearest picks another neighbour) and its ``align_corners`` divides
by ``n_out - 1`` rather than ``scale * n_in - 1``; ONNX's node suite follows the reference, as Ember does.
``Upsample``-9 and ``Resize``-10, which the reference does not implement for these scales, are checked against
onnxruntime (whose "simple" nearest rounding Ember follows there).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ember import Tensor

onnx = pytest.importorskip("onnx")
from onnx.reference import ReferenceEvaluator  # noqa: E402

from _codegen_support import generate_numpy, lint_generated  # noqa: E402
from ember_import.onnx import load_model  # noqa: E402

h = onnx.helper
TP = onnx.TensorProto
_TP = {np.dtype(np.float32): TP.FLOAT, np.dtype(np.int64): TP.INT64, np.dtype(np.uint8): TP.UINT8}
X = np.random.default_rng(0).standard_normal((1, 2, 5, 6)).astype(np.float32)


def _model(
    nodes: list[Any], inputs: dict[str, tuple[int, list[Any]]], out_type: int = TP.FLOAT, opset: int = 19
) -> Any:
    ins = [h.make_tensor_value_info(n, t, s) for n, (t, s) in inputs.items()]
    out = h.make_tensor_value_info("y", out_type, [None] * 4)  # sizes known when the model runs
    return h.make_model(h.make_graph(nodes, "g", ins, [out]), opset_imports=[h.make_opsetid("", opset)])


def _resize(inputs: list[str], **attrs: Any) -> Any:
    return h.make_node("Resize", inputs, ["y"], **attrs)


def _check(
    model: Any, tmp: Path, tag: str, feeds: list[dict[str, np.ndarray]], atol: float = 1e-5, expect: str = "reference"
) -> str:
    """Generate ``model`` once; its ``forward`` and ``load_model`` give the outputs of the ONNX reference
    implementation (``expect="ort"``: onnxruntime's) on every feed."""
    net, dev, text = generate_numpy(model, tmp, tag, "_generated_resize")
    if expect == "ort":
        ort = pytest.importorskip("onnxruntime")
        reference: Any = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    else:
        reference = ReferenceEvaluator(model)
    loaded = load_model(model, dev)
    shapes = set()
    for feed in feeds:
        want = reference.run(None, feed)[0]
        args = [Tensor.from_data(v, dev, dtype=str(v.dtype)) for v in feed.values()]
        for who, fn in (("generated", net), ("load_model", loaded)):
            got = np.asarray(fn(*args).to_data().to_numpy())
            assert got.shape == want.shape, (who, got.shape, want.shape, feed)
            np.testing.assert_allclose(
                got.astype(np.float64), want.astype(np.float64), rtol=1e-5, atol=atol, err_msg=f"{who} on {feed}"
            )
        shapes.add(want.shape)
    assert len(shapes) == len(feeds), f"the feeds must give different output shapes, got {shapes}"
    return text


def _f(*v: float) -> np.ndarray:
    return np.array(v, dtype=np.float32)


def _i(*v: int) -> np.ndarray:
    return np.array(v, dtype=np.int64)


SCALES = [_f(1, 1, 2.0, 1.5), _f(1, 1, 0.6, 0.8), _f(1, 1, 1.75, 0.5)]
SIZES = [_i(1, 2, 7, 3), _i(1, 2, 3, 9), _i(1, 2, 10, 10)]


@pytest.mark.parametrize(
    ("mode", "ctm", "extra"),
    [
        ("nearest", "half_pixel", {"nearest_mode": "round_prefer_floor"}),
        ("nearest", "asymmetric", {"nearest_mode": "round_prefer_ceil"}),
        ("nearest", "align_corners", {"nearest_mode": "floor"}),
        ("nearest", "pytorch_half_pixel", {"nearest_mode": "ceil"}),
        ("linear", "half_pixel", {}),
        ("linear", "align_corners", {}),
        ("linear", "pytorch_half_pixel", {}),
        ("linear", "half_pixel_symmetric", {}),
        ("cubic", "half_pixel", {}),
        ("cubic", "asymmetric", {"cubic_coeff_a": -0.5, "exclude_outside": 1}),
    ],
)
def test_scales_input(mode: str, ctm: str, extra: dict[str, Any], tmp_path: Path) -> None:
    node = _resize(["x", "", "scales"], mode=mode, coordinate_transformation_mode=ctm, **extra)
    model = _model([node], {"x": (TP.FLOAT, [1, 2, 5, 6]), "scales": (TP.FLOAT, [4])})
    text = _check(model, tmp_path, f"scales_{mode}_{ctm}", [{"x": X, "scales": s} for s in SCALES])
    assert "scales.tolist()" in text  # read when forward runs, not folded


@pytest.mark.parametrize(
    ("mode", "extra"),
    [
        ("nearest", {"nearest_mode": "round_prefer_ceil", "coordinate_transformation_mode": "asymmetric"}),
        ("linear", {"coordinate_transformation_mode": "pytorch_half_pixel"}),
        ("cubic", {"coordinate_transformation_mode": "align_corners"}),
    ],
)
def test_sizes_input(mode: str, extra: dict[str, Any], tmp_path: Path) -> None:
    node = _resize(["x", "", "", "sizes"], mode=mode, **extra)
    model = _model([node], {"x": (TP.FLOAT, [1, 2, 5, 6]), "sizes": (TP.INT64, [4])})
    _check(model, tmp_path, f"sizes_{mode}", [{"x": X, "sizes": s} for s in SIZES])


@pytest.mark.parametrize("policy", ["not_larger", "not_smaller"])
def test_keep_aspect_ratio_policy_with_axes(policy: str, tmp_path: Path) -> None:
    # the common scale is the min/max of the per-axis ratios, chosen when forward runs
    node = _resize(["x", "", "", "sizes"], mode="linear", axes=[3, 2], keep_aspect_ratio_policy=policy)
    model = _model([node], {"x": (TP.FLOAT, [1, 2, 5, 6]), "sizes": (TP.INT64, [2])})
    feeds = [{"x": X, "sizes": s} for s in (_i(12, 4), _i(3, 9), _i(8, 8))]
    _check(model, tmp_path, f"policy_{policy}", feeds)


def test_scales_on_axes_attribute(tmp_path: Path) -> None:
    node = _resize(["x", "", "scales"], mode="nearest", axes=[3, 2])
    model = _model([node], {"x": (TP.FLOAT, [1, 2, 5, 6]), "scales": (TP.FLOAT, [2])})
    _check(model, tmp_path, "axes", [{"x": X, "scales": s} for s in (_f(2.0, 1.5), _f(0.5, 0.6), _f(1.0, 3.0))])


def test_tf_crop_and_resize_roi_input(tmp_path: Path) -> None:
    node = _resize(
        ["x", "roi", "", "sizes"],
        mode="linear",
        axes=[2, 3],
        coordinate_transformation_mode="tf_crop_and_resize",
        extrapolation_value=10.0,
    )
    model = _model([node], {"x": (TP.FLOAT, [1, 2, 5, 6]), "roi": (TP.FLOAT, [4]), "sizes": (TP.INT64, [2])})
    feeds = [
        {"x": X, "roi": _f(0.4, 0.6, 0.6, 0.8), "sizes": _i(3, 3)},
        {"x": X, "roi": _f(-0.2, 0.0, 1.3, 0.7), "sizes": _i(4, 6)},  # outside [0, 1]: extrapolated
        {"x": X, "roi": _f(0.0, 0.1, 1.0, 0.9), "sizes": _i(1, 5)},  # one output row: the crop's centre
    ]
    _check(model, tmp_path, "crop", feeds)


@pytest.mark.parametrize("mode", ["linear", "cubic"])
def test_antialias_tap_count_follows_the_scale(mode: str, tmp_path: Path) -> None:
    # downsampling by 1/2 and 1/3 stretches the kernel over 4 and 6 (linear) taps: a count known when forward runs
    node = _resize(["x", "", "scales"], mode=mode, antialias=1, axes=[2, 3])
    x = np.random.default_rng(1).standard_normal((1, 1, 12, 12)).astype(np.float32)
    model = _model([node], {"x": (TP.FLOAT, [1, 1, 12, 12]), "scales": (TP.FLOAT, [2])})
    feeds = [{"x": x, "scales": s} for s in (_f(0.5, 0.5), _f(0.34, 0.6), _f(1.5, 0.25))]
    _check(model, tmp_path, f"aa_{mode}", feeds)


@pytest.mark.parametrize(
    ("op", "opset", "mode"), [("Upsample", 9, "nearest"), ("Resize", 10, "linear"), ("Resize", 10, "nearest")]
)
def test_legacy_scales_input(op: str, opset: int, mode: str, tmp_path: Path) -> None:
    node = h.make_node(op, ["x", "scales"], ["y"], mode=mode)
    model = _model([node], {"x": (TP.FLOAT, [1, 2, 5, 6]), "scales": (TP.FLOAT, [4])}, opset=opset)
    feeds = [{"x": X, "scales": s} for s in (_f(1, 1, 2.0, 3.0), _f(1, 1, 1.5, 2.5), _f(1, 2, 1.0, 2.0))]
    if op != "Upsample":
        feeds[2] = {"x": X, "scales": _f(1, 1, 0.6, 0.5)}  # Resize-10 downsamples too (ceil rounding)
    _check(model, tmp_path, f"legacy_{op}_{mode}", feeds, expect="ort")  # the reference lacks these opsets' rules


def test_integer_input_is_blended_and_saturated(tmp_path: Path) -> None:
    node = _resize(["x", "", "scales"], mode="cubic")
    x = np.random.default_rng(2).integers(0, 256, (1, 1, 4, 5)).astype(np.uint8)
    model = _model([node], {"x": (TP.UINT8, [1, 1, 4, 5]), "scales": (TP.FLOAT, [4])}, out_type=TP.UINT8)
    feeds = [{"x": x, "scales": s} for s in (_f(1, 1, 2.0, 1.5), _f(1, 1, 0.75, 2.5), _f(1, 1, 1.25, 1.0))]
    _check(model, tmp_path, "uint8", feeds, atol=1.0)  # a rounding tie may go either way


def _unet_model() -> Any:
    """A U-Net decoder step: ``x`` upsampled to ``skip``'s height and width (``Shape`` of a dynamic input),
    then added to it."""
    nodes = [
        h.make_node("Shape", ["x"], ["x_shape"], end=2),
        h.make_node("Shape", ["skip"], ["skip_hw"], start=2),
        h.make_node("Concat", ["x_shape", "skip_hw"], ["sizes"], axis=0),
        h.make_node("Resize", ["x", "", "", "sizes"], ["up"], mode="linear"),
        h.make_node("Add", ["up", "skip"], ["y"]),
    ]
    ins = [
        h.make_tensor_value_info("x", TP.FLOAT, ["N", 3, "h", "w"]),
        h.make_tensor_value_info("skip", TP.FLOAT, ["N", 3, "H", "W"]),
    ]
    out = h.make_tensor_value_info("y", TP.FLOAT, ["N", 3, "H", "W"])
    graph = h.make_graph(nodes, "unet", ins, [out])
    return h.make_model(graph, opset_imports=[h.make_opsetid("", 19)])


def test_unet_upsample_to_a_dynamic_skip_size(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    feeds = []
    for n, (hh, ww), (big_h, big_w) in ((1, (4, 5), (8, 10)), (2, (3, 3), (7, 6)), (1, (6, 4), (12, 9))):
        feeds.append(
            {
                "x": rng.standard_normal((n, 3, hh, ww)).astype(np.float32),
                "skip": rng.standard_normal((n, 3, big_h, big_w)).astype(np.float32),
            }
        )
    text = _check(_unet_model(), tmp_path, "unet", feeds)
    assert "skip.shape[2]" in text and "tolist" not in text  # sizes from the shapes: no host read of data


@pytest.mark.parametrize(
    ("mode", "ctm"), [("nearest", "half_pixel"), ("linear", "tf_crop_and_resize"), ("cubic", "half_pixel_symmetric")]
)
def test_constant_scales_on_dynamic_dims(mode: str, ctm: str, tmp_path: Path) -> None:
    # the output sizes are int(N * 1.5) and int(H * 2.0): code, not the trace's sizes (a float times a dim of the
    # trace would otherwise be a float of its value)
    scales = h.make_tensor("scales", TP.FLOAT, [4], [1.5, 1.0, 2.0, 1.5])
    roi = h.make_tensor("roi", TP.FLOAT, [8], [0.0, 0.0, 0.2, 0.1, 1.0, 1.0, 0.9, 0.8])
    node = _resize(
        ["x", "roi" if ctm == "tf_crop_and_resize" else "", "scales"], mode=mode, coordinate_transformation_mode=ctm
    )
    ins = [h.make_tensor_value_info("x", TP.FLOAT, ["N", 2, "H", 3])]
    graph = h.make_graph(
        [node], "g", ins, [h.make_tensor_value_info("y", TP.FLOAT, [None] * 4)], initializer=[scales, roi]
    )
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 19)])
    rng = np.random.default_rng(4)
    feeds = [{"x": rng.standard_normal((n, 2, hh, 3)).astype(np.float32)} for n, hh in ((2, 3), (3, 4), (5, 2))]
    text = _check(model, tmp_path, f"dyn_{mode}", feeds)
    assert "tolist" not in text


@pytest.mark.skipif(
    shutil.which("ruff") is None and importlib.util.find_spec("ruff") is None, reason="ruff is not installed"
)
def test_generated_resize_passes_ruff(tmp_path: Path) -> None:
    node = _resize(["x", "", "", "sizes"], mode="cubic", antialias=1, keep_aspect_ratio_policy="not_larger")
    model = _model([node], {"x": (TP.FLOAT, [1, 2, 5, 6]), "sizes": (TP.INT64, [4])})
    generate_numpy(model, tmp_path, "ruff", "_generated_resize")
    done = lint_generated("ruff", tmp_path / "ruff" / "model.py")
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.skipif(importlib.util.find_spec("mypy") is None, reason="mypy is not installed")
@pytest.mark.skipif(not os.environ.get("EMBER_SLOW_TESTS"), reason="mypy takes ~20 s: EMBER_SLOW_TESTS=1")
def test_generated_resize_passes_mypy(tmp_path: Path) -> None:
    node = _resize(["x", "roi", "scales"], mode="nearest", coordinate_transformation_mode="tf_crop_and_resize")
    model = _model([node], {"x": (TP.FLOAT, [1, 2, 5, 6]), "roi": (TP.FLOAT, [8]), "scales": (TP.FLOAT, [4])})
    generate_numpy(model, tmp_path, "typed", "_generated_resize")
    done = lint_generated("mypy", tmp_path / "typed" / "model.py")
    assert done.returncode == 0, done.stdout + done.stderr
