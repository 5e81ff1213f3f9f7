"""The int8 convolution (``QuantOps.quantized_conv2d``, ``ember.quantization.quantized_conv2d``) against numpy
int64 / float64 references.

References follow ONNX ``ConvInteger`` / ``QLinearConv`` written out with numpy: the input padded with its zero
point, ``acc = sum((x - zx) * w)`` in int64 over each window (a loop over the kernel taps), then
``y = sx * sw[o] * acc + bias[o]`` in float64 and, for a requantized result, ``clip(rint(y / sy) + zy, -128,
127)``. Extremes: ``-128`` activations against ``+-127`` weights, zero points at both ends of the range, results
that saturate, reductions longer than float32 holds exactly, groups, strides, dilations, asymmetric sizes.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import ember
from ember import Tensor
from ember.backend.contract import QuantOps
from ember.quantization import (
    QParams,
    QuantizationError,
    QuantizedTensor,
    QuantLevel,
    QuantScheme,
    QuantValue,
    quantized_conv2d,
)
from ember.tensor.functional import ConvOptions
from ember.testing import assert_close, assert_equal

pytestmark = pytest.mark.filterwarnings("error")


def _acc64(
    x: np.ndarray,
    zx: int,
    w: np.ndarray,
    stride: tuple[int, int],
    padding: tuple[int, int],
    dilation: tuple[int, int],
    groups: int,
) -> np.ndarray:
    """ONNX ConvInteger in int64: ``sum((x_pad - zx) * w)`` over each window, by kernel taps."""
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    ph, pw = padding
    xp = np.full((n, c, h + 2 * ph, wd + 2 * pw), zx, np.int64)
    xp[:, :, ph : ph + h, pw : pw + wd] = x
    xp -= zx
    ho = (h + 2 * ph - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    wo = (wd + 2 * pw - dilation[1] * (kw - 1) - 1) // stride[1] + 1
    out = np.zeros((n, o, ho, wo), np.int64)
    og = o // groups
    for g in range(groups):
        xs = xp[:, g * cg : (g + 1) * cg]
        ws = w[g * og : (g + 1) * og].astype(np.int64)
        for i in range(kh):
            for j in range(kw):
                r0, c0 = i * dilation[0], j * dilation[1]
                patch = xs[
                    :, :, r0 : r0 + stride[0] * (ho - 1) + 1 : stride[0], c0 : c0 + stride[1] * (wo - 1) + 1 : stride[1]
                ]
                out[:, g * og : (g + 1) * og] += np.einsum("nchw,oc->nohw", patch, ws[:, :, i, j])
    return out


def _i8(a: Any, device: Any) -> Tensor:
    return Tensor.from_data(np.asarray(a, np.int8), device, ember.Int, dtype="int8")


def _f32(a: Any, device: Any) -> Tensor:
    return Tensor.from_data(np.asarray(a, np.float32), device)


CASES = {
    # name: (n, c, h, w, o, k, stride, padding, dilation, groups, zx)
    "plain": (2, 3, 7, 6, 4, (3, 3), (1, 1), (0, 0), (1, 1), 1, 0),
    "pad_zp": (2, 4, 6, 7, 5, (3, 3), (1, 1), (1, 1), (1, 1), 1, -37),
    "stride_dil_groups": (2, 6, 9, 8, 4, (3, 2), (2, 1), (1, 2), (1, 2), 2, 19),
    "zp_min": (1, 3, 5, 5, 2, (2, 2), (1, 2), (1, 0), (1, 1), 1, -128),
    "zp_max": (1, 3, 5, 5, 2, (3, 1), (2, 2), (2, 1), (2, 1), 1, 127),
    "depthwise_1x1": (3, 4, 4, 4, 4, (1, 1), (1, 1), (0, 0), (1, 1), 4, 5),
}


def _case(name: str, seed: int = 3) -> dict[str, Any]:
    n, c, h, wd, o, k, stride, padding, dilation, groups, zx = CASES[name]
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, (n, c, h, wd)).astype(np.int8)
    x.reshape(-1)[:5] = -128  # the extreme products
    w = rng.integers(-127, 128, (o, c // groups, *k)).astype(np.int8)
    w[0] = 127
    w[-1, 0] = -127
    return dict(
        x=x,
        zx=zx,
        w=w,
        sx=np.float32(0.031),
        sw=(rng.random(o) * 0.02 + 0.001).astype(np.float32),
        b=rng.standard_normal(o).astype(np.float32),
        stride=stride,
        padding=padding,
        dilation=dilation,
        groups=groups,
    )


def _ref(cs: dict[str, Any], bias: bool) -> np.ndarray:
    acc = _acc64(cs["x"], cs["zx"], cs["w"], cs["stride"], cs["padding"], cs["dilation"], cs["groups"])
    y = acc * (np.float64(cs["sx"]) * cs["sw"].astype(np.float64)).reshape(1, -1, 1, 1)
    return y + cs["b"].astype(np.float64).reshape(1, -1, 1, 1) if bias else y


def _prim(device: Any, cs: dict[str, Any], bias: bool, out: tuple[float, int | None] | None = None) -> Any:
    return device.ops[0].quantized_conv2d(*_args(device, cs, bias, out))


def _args(device: Any, cs: dict[str, Any], bias: bool, out: tuple[float, int | None] | None = None) -> tuple:
    """The positional arguments of ``quantized_conv2d`` for case ``cs`` (an empty kernel cache last)."""
    zx = None if cs["zx"] == 0 else _i8([cs["zx"]], device).primitive
    sy = zy = None
    if out is not None:
        sy = _f32([out[0]], device).primitive
        zy = None if out[1] is None else _i8([out[1]], device).primitive
    return (
        _i8(cs["x"], device).primitive,
        _f32([cs["sx"]], device).primitive,
        zx,
        _i8(cs["w"], device).primitive,
        _f32(cs["sw"], device).primitive,
        _f32(cs["b"], device).primitive if bias else None,
        cs["stride"],
        cs["padding"],
        cs["dilation"],
        cs["groups"],
        device.backend.float_dtype,
        sy,
        zy,
        {},
    )


@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no_bias"])
@pytest.mark.parametrize("name", list(CASES))
def test_quantized_conv2d_float_result(device, name, bias):
    cs = _case(name)
    y = Tensor(_prim(device, cs, bias), device, ember.Float)
    assert y.dtype is device.backend.float_dtype
    want = _ref(cs, bias)
    assert_close(y, want, rtol=1e-5, atol=1e-5 * float(np.abs(want).max()))


def _assert_requantized(got: np.ndarray, y64: np.ndarray, sy: float, zy: int) -> None:
    r = y64 / np.float64(np.float32(sy))
    want = np.clip(np.rint(r) + zy, -128, 127)
    frac = np.abs(r - np.floor(r) - 0.5)
    near_tie = frac < 1e-3  # float32 rescaling may round these either way
    assert got.dtype == np.int8
    np.testing.assert_array_equal(got[~near_tie].astype(np.int64), want[~near_tie])
    assert np.abs(got.astype(np.int64) - want).max() <= 1


@pytest.mark.parametrize("zy", [None, -20, 127], ids=["zy_none", "zy-20", "zy127"])
@pytest.mark.parametrize("name", ["pad_zp", "stride_dil_groups", "zp_max"])
def test_quantized_conv2d_requantized_result_saturates(device, name, zy):
    cs = _case(name)
    y64 = _ref(cs, True)
    sy = float(np.abs(y64).max()) / 600.0  # a range too small: many results saturate
    got = np.asarray(Tensor(_prim(device, cs, True, (sy, zy)), device, ember.Int).to_numpy())
    _assert_requantized(got, y64, sy, 0 if zy is None else zy)
    assert (got == 127).any()
    assert zy == 127 or (got == -128).any()


def test_quantized_conv2d_long_reduction(device):
    # c * kh * kw = 4608: partial sums beyond float32's exact integers (2**24); the int32 accumulation is exact
    rng = np.random.default_rng(8)
    x = rng.integers(-128, 128, (1, 512, 3, 3)).astype(np.int8)
    w = rng.integers(-127, 128, (3, 512, 3, 3)).astype(np.int8)
    x[0, :, :, :] = 127
    w[0] = 127
    cs = dict(
        x=x,
        zx=-128,
        w=w,
        sx=np.float32(1.0),
        sw=np.ones(3, np.float32),
        b=np.zeros(3, np.float32),
        stride=(1, 1),
        padding=(0, 0),
        dilation=(1, 1),
        groups=1,
    )
    want = _ref(cs, False)
    assert want[0, 0, 0, 0] == 4608 * 255 * 127  # above 2**24
    # the contract's default accumulates exactly (float64 beyond float32's exact integers): the float result's
    # rounding only
    default = QuantOps.quantized_conv2d(device.ops[0], *_args(device, cs, False))
    np.testing.assert_allclose(np.asarray(Tensor(default, device, ember.Float).to_numpy()), want, rtol=1e-7)
    # the backend's kernel: exact on the int8 kernels (torch CPU, jax); a float32 fallback (numpy) rounds these
    # sums to about 1e-7 * sqrt(k)
    y = np.asarray(Tensor(_prim(device, cs, False), device, ember.Float).to_numpy()).astype(np.float64)
    np.testing.assert_allclose(y, want, rtol=2e-5)


# ---------------------------------------------------------------------------------------------------- core API
def _qt(device: Any, q: np.ndarray, scheme: QuantScheme, scale: Any, zp: Any = None) -> QuantizedTensor:
    z = None if zp is None else _i8(np.atleast_1d(zp), device)
    return QuantizedTensor(_i8(q, device), q.shape, scheme, QParams(_f32(np.atleast_1d(scale), device), z))


def test_quantized_conv2d_of_quantized_tensors(device):
    cs = _case("stride_dil_groups")
    x = _qt(device, cs["x"], QuantScheme(QuantValue.Q8F), cs["sx"], cs["zx"])
    w = _qt(device, cs["w"], QuantScheme(QuantValue.Q8S, QuantLevel.axis(0)), cs["sw"])
    opts = ConvOptions(cs["stride"], cs["padding"], cs["dilation"], cs["groups"])
    y = quantized_conv2d(x, w, _f32(cs["b"], device), opts)
    want = _ref(cs, True)
    assert_close(y, want, rtol=1e-5, atol=1e-5 * float(np.abs(want).max()))
    sy = float(np.abs(want).max()) / 100.0
    yq = quantized_conv2d(x, w, _f32(cs["b"], device), opts, output=QParams(_f32([sy], device)))
    assert isinstance(yq, QuantizedTensor) and yq.scheme == QuantScheme(QuantValue.Q8F)
    assert_equal(yq.qparams.zero_point, [0])
    _assert_requantized(np.asarray(yq.int_values().to_numpy()), want, sy, 0)
    # per-tensor weight scale: the same as a per-channel one repeated
    w1 = _qt(device, cs["w"], QuantScheme(QuantValue.Q8S), np.float32(0.004))
    cs1 = dict(cs, sw=np.full(cs["w"].shape[0], np.float32(0.004)))
    want1 = _ref(cs1, False)
    assert_close(quantized_conv2d(x, w1, None, opts), want1, rtol=1e-5, atol=1e-5 * float(np.abs(want1).max()))


def test_quantized_conv2d_fallback_schemes(device):
    # an int4 block-quantized weight takes the float fallback: dequantize both, convolve
    rng = np.random.default_rng(4)
    xf = rng.standard_normal((2, 4, 5, 5))
    wf = rng.standard_normal((3, 4, 2, 2))
    x = Tensor.from_data(xf, device).quantize_dynamic(QuantScheme(QuantValue.Q8F))
    w = Tensor.from_data(wf, device).quantize_dynamic(QuantScheme(QuantValue.Q4S, QuantLevel.block(2, axis=1)))
    y = quantized_conv2d(x, w, None, ConvOptions(1, 1))
    cs = dict(x=np.zeros((2, 4, 5, 5), np.int8), zx=0, w=np.zeros((3, 4, 2, 2), np.int8))
    xd = np.asarray(x.dequantize().to_numpy(), np.float64)
    wd = np.asarray(w.dequantize().to_numpy(), np.float64)
    want = np.zeros((2, 3, 6, 6))
    xp = np.pad(xd, ((0, 0), (0, 0), (1, 1), (1, 1)))
    for i in range(2):
        for j in range(2):
            want += np.einsum("nchw,oc->nohw", xp[:, :, i : i + 6, j : j + 6], wd[:, :, i, j])
    assert_close(y, want, rtol=1e-5, atol=1e-5)
    assert cs  # (the reference above is the float conv of the dequantized values)


def test_quantized_conv2d_errors(device):
    cs = _case("plain")
    x = _qt(device, cs["x"], QuantScheme(QuantValue.Q8F), cs["sx"], 3)
    w = _qt(device, cs["w"], QuantScheme(QuantValue.Q8S, QuantLevel.axis(0)), cs["sw"])
    with pytest.raises(QuantizationError, match="rank-4 QuantizedTensor"):
        quantized_conv2d(_f32(cs["x"], device), w)  # type: ignore[arg-type]
    with pytest.raises(QuantizationError, match="channels"):
        quantized_conv2d(x, w, None, ConvOptions(groups=3))
    with pytest.raises(QuantizationError, match=r"bias must be a Float tensor of shape \[4\]"):
        quantized_conv2d(x, w, _f32(np.zeros(3), device))
    with pytest.raises(QuantizationError, match="positive"):
        quantized_conv2d(x, w, None, output=QParams(_f32([0.0], device)))
    with pytest.raises(ember.ShapeError, match="larger than the padded input"):
        quantized_conv2d(x, w, None, ConvOptions(dilation=4))
