"""Static quantized convolutions (``Quantizer.prepare`` -> ``calibrate`` -> ``convert``) on the int8 convolution
kernel (``QuantOps.quantized_conv2d``) against numpy float64 references, on every installed backend."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from _nn_support import BACKENDS, plain_device, tensor, to_np
from ember import nn
from ember.quantization import (
    Calibration,
    QuantizedConv1d,
    QuantizedConv2d,
    Quantizer,
    QuantLevel,
    QuantScheme,
    QuantValue,
    calibrate,
)

rng = np.random.default_rng(331)
Q8_AXIS = QuantScheme(QuantValue.Q8S, QuantLevel.axis(0))


@pytest.fixture(params=BACKENDS)
def backend_name(request: pytest.FixtureRequest) -> str:
    return request.param  # type: ignore[no-any-return]


def _calls(monkeypatch: pytest.MonkeyPatch, dev: Any) -> list[int]:
    """Count the calls of the backend's int8 convolution primitive."""
    ops = dev.ops[0]
    orig = ops.quantized_conv2d  # bound (or a staticmethod's function)
    calls: list[int] = []

    def spy(*args: Any, **kw: Any) -> Any:
        calls.append(1)
        return orig(*args[1:], **kw)

    monkeypatch.setattr(type(ops), "quantized_conv2d", spy)
    return calls


def _w_fake(w: np.ndarray) -> np.ndarray:
    """Symmetric int8 per output channel (axis 0), quantized and dequantized in float64 (float32 scales)."""
    s = (np.abs(w).max(axis=tuple(range(1, w.ndim)), keepdims=True) / 127).astype(np.float32).astype(np.float64)
    return np.clip(np.rint(w / s), -127, 127) * s


def _x_fake(x: np.ndarray, layer: Any) -> np.ndarray:
    """``x`` quantized with the layer's calibrated input qparams and dequantized, in float64."""
    s = float(to_np(layer.input.scale.value())[0])
    zp = float(to_np(layer.input.zero_point.value())[0])
    return (np.clip(np.rint(x / s) + zp, -128, 127) - zp) * s


def _conv64(
    x: np.ndarray, w: np.ndarray, b: np.ndarray, stride: int, pads: tuple[int, int, int, int], groups: int
) -> np.ndarray:
    """Cross-correlation in float64 by kernel taps; ``pads`` = (top, bottom, left, right)."""
    x = np.pad(x, ((0, 0), (0, 0), pads[:2], pads[2:]))
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    ho, wo = (h - kh) // stride + 1, (wd - kw) // stride + 1
    out = np.zeros((n, o, ho, wo))
    og = o // groups
    for g in range(groups):
        for i in range(kh):
            for j in range(kw):
                patch = x[
                    :,
                    g * cg : (g + 1) * cg,
                    i : i + stride * (ho - 1) + 1 : stride,
                    j : j + stride * (wo - 1) + 1 : stride,
                ]
                out[:, g * og : (g + 1) * og] += np.einsum("nchw,oc->nohw", patch, w[g * og : (g + 1) * og, :, i, j])
    return out + b[None, :, None, None]


def _static(layer: Any, xs: list[np.ndarray], dev: Any) -> Any:
    q = Quantizer(Calibration.min_max(), Q8_AXIS)
    return q.convert(calibrate(q.prepare(layer), [tensor(x, dev) for x in xs]))


def test_static_conv2d_runs_the_int8_kernel(backend_name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    dev = plain_device(backend_name)
    conv = nn.Conv2dConfig((4, 6), (3, 2), stride=(1, 1), padding=nn.PaddingConfig2d.Same, groups=2).init(dev)
    xs = [rng.standard_normal((2, 4, 7, 6)) * (i + 1) for i in range(2)]
    q = _static(conv, xs, dev)
    assert isinstance(q, QuantizedConv2d) and q.padding != q.padding_right  # an even kernel: asymmetric Same
    calls = _calls(monkeypatch, dev)
    x = rng.standard_normal((3, 4, 7, 6)) * 3  # beyond the calibrated range: saturates
    got = to_np(q(tensor(x, dev)))
    assert calls == [1]
    w, b = _w_fake(to_np(conv.weight.val())), to_np(conv.bias.val())
    (pt, pl), (pb, pr) = q.padding, q.padding_right
    want = _conv64(_x_fake(x, q), w, b, 1, (pt, pb, pl, pr), 2)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_static_conv1d_runs_the_int8_kernel(backend_name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    dev = plain_device(backend_name)
    conv = nn.Conv1dConfig((3, 5), (3,), stride=(2,), padding=nn.PaddingConfig1d.Explicit(1)).init(dev)
    q = _static(conv, [rng.standard_normal((2, 3, 9))], dev)
    assert isinstance(q, QuantizedConv1d)
    calls = _calls(monkeypatch, dev)
    x = rng.standard_normal((2, 3, 9))
    got = to_np(q(tensor(x, dev)))
    assert calls == [1] and got.shape == (2, 5, 5)
    w = _w_fake(to_np(conv.weight.val()))[:, :, None, :]
    want = _conv64(_x_fake(x, q)[:, :, None, :], w, to_np(conv.bias.val()), 2, (0, 0, 1, 1), 1)[:, :, 0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_static_int4_conv_takes_the_float_fallback(backend_name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    dev = plain_device(backend_name)
    conv = nn.Conv2dConfig((2, 3), (3, 3)).init(dev)
    q4 = Quantizer(
        Calibration.min_max(), QuantScheme(QuantValue.Q4S, QuantLevel.axis(0)), activation=QuantScheme(QuantValue.Q8F)
    )
    xs = [rng.standard_normal((2, 2, 5, 5))]
    q = q4.convert(calibrate(q4.prepare(conv), [tensor(x, dev) for x in xs]))
    calls = _calls(monkeypatch, dev)
    x = rng.standard_normal((1, 2, 5, 5))
    got = to_np(q(tensor(x, dev)))
    assert calls == []
    w = to_np(conv.weight.val()).astype(np.float64)
    s = (np.abs(w).max(axis=(1, 2, 3), keepdims=True) / 7).astype(np.float32).astype(np.float64)
    want = _conv64(_x_fake(x, q), np.clip(np.rint(w / s), -7, 7) * s, to_np(conv.bias.val()), 1, (0, 0, 0, 0), 1)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.skipif("torch" not in BACKENDS, reason="torch not installed")
def test_torch_prepacks_the_weight_once_per_input_shape() -> None:
    dev = plain_device("torch")
    conv = nn.Conv2dConfig((3, 4), (3, 3)).init(dev)
    q = _static(conv, [rng.standard_normal((2, 3, 6, 6))], dev)
    cache = q.weight.val().kernel_cache()
    x = tensor(rng.standard_normal((2, 3, 6, 6)), dev)
    first = to_np(q(x))
    assert len(cache) == 1
    np.testing.assert_array_equal(to_np(q(x)), first)
    assert len(cache) == 1  # the second call reuses the packed weight
    q(tensor(rng.standard_normal((5, 3, 6, 6)), dev))
    assert len(cache) == 2  # oneDNN packs for the input's shape
