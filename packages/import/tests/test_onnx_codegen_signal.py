"""ModelGen on the signal and sampling ops whose sizes are graph inputs (issue 30): the window ops' length,
``DFT``'s axis, ``STFT``'s frame step and length, ``MelWeightMatrix``'s five scalars, ``AffineGrid``'s size
list and ``Col2Im``'s image and block shapes.

The generated ``forward`` reads those inputs when it runs (``size = x.tolist()``) and builds its tensors with
Tensor-API calls taking them (``Tensor.arange(0, size, device)``), so one generated file must give the
independent answer (numpy float64: ``np.fft``, ``np.hanning``; torch's ``affine_grid``/``fold``; ONNX's
reference evaluator) for *several different* values of that input; the trace's own stand-in values differ
from them. A length the converter's method depends on with no bound (``DFT``'s ``dft_length`` read from the
data) is planned when the code runs, by the converter's own host rule (``rules.dft_split``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ember
from ember import Tensor

onnx = pytest.importorskip("onnx")
from _codegen_support import generate_numpy, one_node_model  # noqa: E402
from ember_import.onnx import load_model  # noqa: E402

h = onnx.helper
TP = onnx.TensorProto


_model = one_node_model


def _generate(model: Any, tmp: Path, tag: str) -> tuple[Any, str]:
    net, _, text = generate_numpy(model, tmp, tag, "_generated_signal")
    return net, text


def _call(net: Any, *arrays: np.ndarray) -> np.ndarray:
    dev = ember.backend("numpy").device()
    args = [Tensor.from_data(a, dev, dtype=str(a.dtype)) for a in arrays]
    return np.asarray(net(*args).to_data().to_numpy())


def _scalar(v: int | float, dtype: Any = np.int64) -> np.ndarray:
    return np.array(v, dtype=dtype)


# ---------------------------------------------------------------------------------------------- windows
def _window_ref(op: str, n: int, periodic: bool) -> np.ndarray:
    """The ONNX formulas in float64: ``N = n`` (periodic) or ``n - 1``."""
    big = n if periodic else n - 1
    x = 2.0 * np.pi * np.arange(n) / big
    if op == "HannWindow":
        return 0.5 - 0.5 * np.cos(x)
    if op == "HammingWindow":
        return 25.0 / 46.0 - 21.0 / 46.0 * np.cos(x)
    return 0.42 - 0.5 * np.cos(x) + 0.08 * np.cos(2.0 * x)


@pytest.mark.parametrize("op", ["HannWindow", "HammingWindow", "BlackmanWindow"])
@pytest.mark.parametrize("periodic", [0, 1])
def test_window_of_a_length_read_when_forward_runs(op: str, periodic: int, tmp_path: Path) -> None:
    node = h.make_node(op, ["size"], ["w"], periodic=periodic)
    model = _model(node, [("size", TP.INT64, [])], ("w", TP.FLOAT, 1), 17)
    net, src = _generate(model, tmp_path, f"{op}_{periodic}")
    assert "size.tolist()" in src and "Tensor.arange(0, " in src
    for n in (2, 3, 8, 17, 64):
        got = _call(net, _scalar(n))
        np.testing.assert_allclose(got, _window_ref(op, n, bool(periodic)), rtol=1e-6, atol=1e-6)
    if op != "HammingWindow":  # numpy's own windows (its Hamming has other coefficients than ONNX's 25/46)
        ref = np.hanning if op == "HannWindow" else np.blackman
        want = ref(10) if not periodic else ref(11)[:-1]
        np.testing.assert_allclose(_call(net, _scalar(10)), want, atol=1e-6)
    # lengths 0 and 1 give what load_model gives (an empty window; one sample of the cos(0) terms)
    module = load_model(model.SerializeToString(), ember.backend("numpy").device())
    for n in (0, 1):
        np.testing.assert_allclose(_call(net, _scalar(n)), _call(module, _scalar(n)), atol=1e-7)


def test_window_output_datatype_double(tmp_path: Path) -> None:
    node = h.make_node("HannWindow", ["size"], ["w"], output_datatype=TP.DOUBLE)
    model = _model(node, [("size", TP.INT32, [])], ("w", TP.DOUBLE, 1), 17)
    net, _ = _generate(model, tmp_path, "hann_double")
    for n in (4, 9):
        got = _call(net, _scalar(n, np.int32))
        assert got.dtype == np.float64
        np.testing.assert_allclose(got, np.hanning(n + 1)[:-1], rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------------------------------------- DFT
RNG = np.random.default_rng(7)
X_COMPLEX = RNG.standard_normal((2, 6, 5, 2)).astype(np.float32)
X_REAL = RNG.standard_normal((2, 6, 5, 1)).astype(np.float32)


def _complex(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    return x[..., 0] + 1j * x[..., 1] if x.shape[-1] == 2 else x[..., 0] + 0j


def _pack(c: np.ndarray) -> np.ndarray:
    return np.stack([c.real, c.imag], -1)


@pytest.mark.parametrize(("inverse", "onesided"), [(0, 0), (1, 0), (0, 1)])
def test_dft_axis_read_when_forward_runs(inverse: int, onesided: int, tmp_path: Path) -> None:
    node = h.make_node("DFT", ["x", "", "axis"], ["y"], inverse=inverse, onesided=onesided)
    x = X_REAL if onesided else X_COMPLEX
    model = _model(node, [("x", TP.FLOAT, list(x.shape)), ("axis", TP.INT64, [])], ("y", TP.FLOAT, 4), 20)
    net, src = _generate(model, tmp_path, f"dft_{inverse}_{onesided}")
    assert "axis.tolist()" in src
    for axis in (1, 2, -3, -2, 0):
        ax = axis % 4
        c = _complex(x)
        want = np.fft.ifft(c, axis=ax) if inverse else np.fft.fft(c, axis=ax)
        if onesided:
            want = np.take(want, np.arange(x.shape[ax] // 2 + 1), axis=ax)
        got = _call(net, x, _scalar(axis))
        assert got.shape == _pack(want).shape, (axis, got.shape)
        np.testing.assert_allclose(got, _pack(want), rtol=1e-4, atol=1e-4)


def test_irfft_axis_read_when_forward_runs(tmp_path: Path) -> None:
    node = h.make_node("DFT", ["x", "", "axis"], ["y"], inverse=1, onesided=1)
    model = _model(node, [("x", TP.FLOAT, [2, 4, 3, 2]), ("axis", TP.INT64, [])], ("y", TP.FLOAT, 4), 20)
    net, _ = _generate(model, tmp_path, "irfft")
    x = RNG.standard_normal((2, 4, 3, 2)).astype(np.float32)
    for axis in (1, 2, 0):  # the signal lengths 2 * (m - 1): 6, 4 and 2 (no mirrored bins)
        m = x.shape[axis]
        want = np.fft.irfft(_complex(x), n=2 * (m - 1), axis=axis)
        got = _call(net, x, _scalar(axis))
        np.testing.assert_allclose(got[..., 0], want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(("inverse", "onesided"), [(0, 0), (1, 0), (0, 1)])
def test_dft_length_read_when_forward_runs(inverse: int, onesided: int, tmp_path: Path) -> None:
    """``dft_length`` zero-pads or truncates; nothing bounds it, so the generated code plans the method when it
    runs (``rules.dft_split``): one direct product up to 2048, a four-step split above (4100 = 50 * 82)."""
    node = h.make_node("DFT", ["x", "n"], ["y"], axis=1, inverse=inverse, onesided=onesided)
    x = RNG.standard_normal((2, 8, 1 if onesided else 2)).astype(np.float32)
    model = _model(node, [("x", TP.FLOAT, list(x.shape)), ("n", TP.INT64, [])], ("y", TP.FLOAT, 3), 17)
    net, src = _generate(model, tmp_path, f"dft_n_{inverse}_{onesided}")
    assert "n.tolist()" in src and "rules.dft_split(" in src
    for n in (8, 5, 13, 1, 4100):
        c = _complex(x)
        want = np.fft.ifft(c, n=n, axis=1) if inverse else np.fft.fft(c, n=n, axis=1)
        if onesided:
            want = want[:, : n // 2 + 1]
        got = _call(net, x, _scalar(n))
        assert got.shape == _pack(want).shape, (n, got.shape)
        np.testing.assert_allclose(got, _pack(want), rtol=1e-4, atol=1e-4)


# ---------------------------------------------------------------------------------------------- STFT
SIGNAL = RNG.standard_normal((2, 64, 1)).astype(np.float32)


def _stft_ref(x: np.ndarray, step: int, length: int, window: np.ndarray | None) -> np.ndarray:
    frames = np.stack([x[:, i : i + length, 0] for i in range(0, x.shape[1] - length + 1, step)], 1).astype(np.float64)
    if window is not None:
        frames = frames * window
    return _pack(np.fft.rfft(frames, axis=-1))


def test_stft_step_and_length_read_when_forward_runs(tmp_path: Path) -> None:
    node = h.make_node("STFT", ["x", "step", "", "length"], ["y"])
    model = _model(
        node, [("x", TP.FLOAT, [2, 64, 1]), ("step", TP.INT64, []), ("length", TP.INT64, [])], ("y", TP.FLOAT, 4), 17
    )
    net, src = _generate(model, tmp_path, "stft")
    assert "step.tolist()" in src and "length.tolist()" in src
    for step, length in ((8, 16), (5, 12), (16, 32), (1, 3), (64, 64)):
        got = _call(net, SIGNAL, _scalar(step), _scalar(length))
        np.testing.assert_allclose(got, _stft_ref(SIGNAL, step, length, None), rtol=1e-4, atol=1e-4)


def test_stft_with_a_window_and_a_step_read_when_forward_runs(tmp_path: Path) -> None:
    node = h.make_node("STFT", ["x", "step", "w"], ["y"])
    model = _model(
        node, [("x", TP.FLOAT, [2, 64, 1]), ("step", TP.INT64, []), ("w", TP.FLOAT, [16])], ("y", TP.FLOAT, 4), 17
    )
    net, _ = _generate(model, tmp_path, "stft_w")
    w = np.hanning(16).astype(np.float32)
    for step in (4, 7, 16):
        got = _call(net, SIGNAL, _scalar(step), w)
        np.testing.assert_allclose(got, _stft_ref(SIGNAL, step, 16, w), rtol=1e-4, atol=1e-4)


# ---------------------------------------------------------------------------------------------- MelWeightMatrix
def test_mel_weight_matrix_of_scalars_read_when_forward_runs(tmp_path: Path) -> None:
    from onnx.reference import ReferenceEvaluator

    names = ["bins", "n_dft", "rate", "low", "high"]
    node = h.make_node("MelWeightMatrix", names, ["m"])
    types = [TP.INT64, TP.INT64, TP.INT64, TP.FLOAT, TP.FLOAT]
    model = _model(node, [(n, t, []) for n, t in zip(names, types)], ("m", TP.FLOAT, 2), 17)
    net, src = _generate(model, tmp_path, "mel")
    assert "bins.tolist()" in src and "n_dft.tolist()" in src
    ref = ReferenceEvaluator(model)
    for bins, n_dft, rate, low, high in (
        (8, 16, 8192, 0.0, 4096.0),
        (10, 64, 16000, 20.0, 7600.0),
        (3, 9, 1000, 100.0, 450.0),
        (40, 512, 22050, 0.0, 11025.0),
    ):
        feeds = [_scalar(bins), _scalar(n_dft), _scalar(rate), _scalar(low, np.float32), _scalar(high, np.float32)]
        want = ref.run(None, dict(zip(names, feeds)))[0]
        got = _call(net, *feeds)
        assert got.shape == (n_dft // 2 + 1, bins)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("backend", ["torch", "jax"])
def test_mel_weight_matrix_load_model_on_a_device_other_than_the_host(backend: str) -> None:
    """load_model reads the five scalars on the host (numpy) and the model runs on ``backend``: the matrix is
    built where the scalars are and moved to the model's device (it mixed the two devices before)."""
    pytest.importorskip({"torch": "ember_torch", "jax": "ember_jax"}[backend])
    from onnx.reference import ReferenceEvaluator

    names = ["bins", "n_dft", "rate", "low", "high"]
    node = h.make_node("MelWeightMatrix", names, ["m"])
    types = [TP.INT64, TP.INT64, TP.INT64, TP.FLOAT, TP.FLOAT]
    model = _model(node, [(n, t, []) for n, t in zip(names, types)], ("m", TP.FLOAT, 2), 17)
    dev = ember.backend(backend).device()
    net = load_model(model, dev)
    feeds = [_scalar(10), _scalar(64), _scalar(16000), _scalar(20.0, np.float32), _scalar(7600.0, np.float32)]
    want = ReferenceEvaluator(model).run(None, dict(zip(names, feeds)))[0]
    got = net(*[Tensor.from_data(a, dev, dtype=str(a.dtype)) for a in feeds])
    assert got.device == dev
    np.testing.assert_allclose(np.asarray(got.to_data().to_numpy()), want, rtol=1e-6, atol=1e-6)


# ---------------------------------------------------------------------------------------------- AffineGrid
@pytest.mark.parametrize("align", [0, 1])
@pytest.mark.parametrize("nd", [2, 3])
def test_affine_grid_size_read_when_forward_runs(align: int, nd: int, tmp_path: Path) -> None:
    """Against ONNX's reference evaluator (torch's ``affine_grid`` differs on purpose for unit sizes with
    ``align_corners``: it gives 0 where ONNX gives -1), and torch where they agree."""
    from onnx.reference import ReferenceEvaluator

    torch = pytest.importorskip("torch")
    node = h.make_node("AffineGrid", ["theta", "size"], ["grid"], align_corners=align)
    model = _model(
        node, [("theta", TP.FLOAT, [2, nd, nd + 1]), ("size", TP.INT64, [nd + 2])], ("grid", TP.FLOAT, nd + 2), 20
    )
    net, src = _generate(model, tmp_path, f"affine_{nd}_{align}")
    assert "size.tolist()" in src
    theta = RNG.standard_normal((2, nd, nd + 1)).astype(np.float32)
    sizes = ([2, 3, 4, 5], [2, 1, 1, 7], [2, 2, 6, 1]) if nd == 2 else ([2, 1, 2, 3, 4], [2, 3, 1, 5, 1])
    ref = ReferenceEvaluator(model)
    for size in sizes:
        got = _call(net, theta, np.array(size, np.int64))
        with np.errstate(divide="ignore"):  # the reference's step 2 / (n - 1) of a unit size (its arange keeps -1)
            want = ref.run(None, {"theta": theta, "size": np.array(size, np.int64)})[0]
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
        if not align or min(size[2:]) > 1:
            t = torch.nn.functional.affine_grid(torch.from_numpy(theta).double(), size, align_corners=bool(align))
            np.testing.assert_allclose(got, t.numpy(), rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------------------------------------- Col2Im
@pytest.mark.parametrize(
    ("attrs", "tag"),
    [({}, "plain"), ({"strides": [2, 1], "pads": [1, 0, 0, 2]}, "pads"), ({"dilations": [1, 2]}, "dil")],
)
def test_col2im_shapes_read_when_forward_runs(attrs: dict[str, Any], tag: str, tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    node = h.make_node("Col2Im", ["x", "image", "block"], ["y"], **attrs)
    model = _model(
        node,
        [("x", TP.FLOAT, ["n", "ck", "l"]), ("image", TP.INT64, [2]), ("block", TP.INT64, [2])],
        ("y", TP.FLOAT, 4),
        18,
    )
    net, src = _generate(model, tmp_path, f"col2im_{tag}")
    assert "image.tolist()" in src and "block.tolist()" in src
    stride = attrs.get("strides", [1, 1])
    dil = attrs.get("dilations", [1, 1])
    pads = attrs.get("pads", [0, 0, 0, 0])
    for c, image, block in ((1, [5, 5], [1, 3]), (2, [6, 4], [2, 2]), (3, [4, 7], [3, 1]), (1, [5, 6], [2, 3])):
        eff = [d * (b - 1) + 1 for d, b in zip(dil, block)]
        counts = [(n + pads[i] + pads[i + 2] - e) // s + 1 for i, (n, e, s) in enumerate(zip(image, eff, stride))]
        x = RNG.standard_normal((2, c * block[0] * block[1], counts[0] * counts[1])).astype(np.float32)
        # the blocks summed into the image padded by ONNX's pads (begin, end), then the pads cropped
        padded = [n + pads[i] + pads[i + 2] for i, n in enumerate(image)]
        full = torch.nn.functional.fold(
            torch.from_numpy(x).double(), padded, block, dilation=dil, stride=stride
        ).numpy()
        want = full[:, :, pads[0] : pads[0] + image[0], pads[1] : pads[1] + image[1]]
        got = _call(net, x, np.array(image, np.int64), np.array(block, np.int64))
        assert got.shape == (2, c, *image)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
