"""Quantization (``ember.quantization``, the ``QuantOps`` primitives) against numpy float64 references.

References follow ONNX ``QuantizeLinear`` / ``DequantizeLinear`` written out with numpy in float64:
``q = clip(rint(x / scale) + zero_point, qmin, qmax)`` (``np.rint`` rounds half to even) and
``x = (q - zero_point) * scale``; products are numpy int64 matmuls. The scales given to ``quantize`` are computed
here, so the quantize checks do not depend on ``compute_qparams`` (checked on its own against the PyTorch/ONNX
formulas). Extremes: exact ties, saturation, zero range, NaN/inf input, ``-128`` in products, reductions longer
than float32 holds exactly.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import ember
from ember import Tensor
from ember.quantization import (
    QParams,
    QuantizationError,
    QuantizedTensor,
    QuantLevel,
    QuantParam,
    QuantScheme,
    QuantValue,
    compute_qparams,
    compute_range,
    fake_quantize,
    quantized_linear,
    quantized_matmul,
)
from ember.testing import assert_close, assert_equal

pytestmark = pytest.mark.filterwarnings("error")

LEVELS = {
    "tensor": QuantLevel.tensor(),
    "axis0": QuantLevel.axis(0),
    "axis-1": QuantLevel.axis(-1),
    "block4": QuantLevel.block(4, axis=1),
    "block2_axis0": QuantLevel.block(2, axis=0),
}


def _groups(level: QuantLevel, shape: tuple[int, int]) -> tuple[tuple[int, ...], Callable[[Any], Any]]:
    """(scale shape, a function mapping a [scale shape] array onto the [shape] grid), written out by hand for 2-D."""
    r, c = shape
    dim, n = level.dim, level.size
    if level.kind == "tensor":
        return (1,), lambda s: np.broadcast_to(s.reshape(1, 1), shape)
    if level.kind == "axis":
        assert dim is not None
        if dim % 2 == 0:
            return (r,), lambda s: np.broadcast_to(s.reshape(r, 1), shape)
        return (c,), lambda s: np.broadcast_to(s.reshape(1, c), shape)
    assert dim is not None and n is not None
    if dim % 2 == 1:
        return (r, c // n), lambda s: np.repeat(s, n, axis=1)
    return (r // n, c), lambda s: np.repeat(s, n, axis=0)


def _ref_q(x, s, zp, value):
    qmin, qmax = value.range
    return np.clip(np.rint(x / s) + zp, qmin, qmax)


def _near_tie(x, s):
    """Where ``x / s`` is within float32 rounding of a half-integer (float32 and float64 may round apart)."""
    v = np.abs(x / s)
    return np.abs(v - np.floor(v) - 0.5) < 1e-4


@pytest.mark.parametrize("value", list(QuantValue), ids=lambda v: v.name)
@pytest.mark.parametrize("level", list(LEVELS), ids=str)
def test_quantize_dequantize_match_onnx_reference(device, value, level):
    rng = np.random.default_rng(7)
    shape = (6, 8)
    lv = LEVELS[level]
    sshape, spread = _groups(lv, shape)
    x = rng.normal(0.0, 2.0, size=shape).astype(np.float32)
    x[0, 0], x[1, 1] = 50.0, -50.0  # beyond every group's range: saturate
    # scales smaller than the range needs, so some values saturate; positive, float32
    lo, hi = (0.01, 0.04) if value.bits == 8 else (0.3, 0.8)
    s = rng.uniform(lo, hi, size=sshape).astype(np.float32)
    qmin, qmax = value.range
    zp = None if value.symmetric else rng.integers(qmin, qmax + 1, size=sshape).astype(np.int8)
    scheme = QuantScheme(value, lv)
    qp = QParams(
        Tensor.from_data(s, device, dtype="float32"),
        None if zp is None else Tensor.from_data(zp, device, ember.Int, dtype="int8"),
    )
    qt = Tensor.from_data(x, device).quantize(scheme, qp)
    x64 = Tensor.from_data(x, device).to_numpy().astype(np.float64)
    s64 = spread(s.astype(np.float64))
    z64 = 0.0 if zp is None else spread(zp.astype(np.float64))
    ref = _ref_q(x64, s64, z64, value)
    got = qt.int_values().to_numpy().astype(np.float64)
    tie = _near_tie(x64, s64)
    assert np.array_equal(got[~tie], ref[~tie])
    assert np.all(np.abs(got[tie] - ref[tie]) <= 1)
    assert got.min() >= qmin and got.max() <= qmax
    assert (got == qmax).any() or (got == qmin).any(), "the case must saturate somewhere"
    assert qt.shape == shape and qt.device is device and qt.scheme == scheme
    assert qt.values.dtype is value.storage_dtype
    # dequantize is exact arithmetic on the stored integers
    assert_close(qt.dequantize(), (got - z64) * s64)


def test_round_half_to_even_on_exact_ties(device):
    # scale 0.5 is a power of two: x / scale is exact, so these are exact ties (Burn would round half away)
    x = Tensor.from_floats([0.25, 0.75, -0.25, -0.75, 1.25, -1.25, 0.0], device)
    qt = x.quantize(QuantScheme(), QParams(Tensor.from_floats([0.5], device)))
    assert_equal(qt.int_values().int(), [0, 2, 0, -2, 2, -2, 0])


@pytest.mark.parametrize("value", list(QuantValue), ids=lambda v: v.name)
def test_saturation_to_the_value_range(device, value):
    qmin, qmax = value.range
    zp = None if value.symmetric else Tensor.from_data(np.array([3], np.int8), device, ember.Int, dtype="int8")
    x = Tensor.from_floats([-1e6, -3.0e4, 3.0e4, 1e6, 0.0], device)
    qt = x.quantize(QuantScheme(value), QParams(Tensor.from_floats([0.1], device), zp))
    z = 0 if zp is None else 3
    assert_equal(qt.int_values().int(), [qmin, qmin, qmax, qmax, z])


@pytest.mark.parametrize("value", list(QuantValue), ids=lambda v: v.name)
def test_compute_qparams_match_torch_onnx_formulas(device, value):
    rng = np.random.default_rng(3)
    x = rng.normal(size=(5, 4)) * np.array([1.0, 0.0, 3.0, -2.0])  # column 1: zero range
    x[:, 3] = -np.abs(x[:, 3]) - 0.5  # column 3: all negative
    x[:, 2] = np.abs(x[:, 2]) + 0.5  # column 2: all positive
    scheme = QuantScheme(value, QuantLevel.axis(1))
    t = Tensor.from_data(x, device)
    lo, hi = compute_range(scheme, t)
    xs = t.to_numpy().astype(np.float64)
    assert_close(lo, xs.min(0))
    assert_close(hi, xs.max(0))
    qp = compute_qparams(scheme, lo, hi)
    qmin, qmax = value.range
    eps = float(np.finfo(np.float32).eps)
    mn, mx = xs.min(0), xs.max(0)
    if value.symmetric:
        want = np.maximum(np.maximum(np.abs(mn), np.abs(mx)) / qmax, eps)
        assert qp.zero_point is None
    else:
        mn, mx = np.minimum(mn, 0.0), np.maximum(mx, 0.0)
        want = np.maximum((mx - mn) / (qmax - qmin), eps)
        s32 = want.astype(np.float32).astype(np.float64)
        zp = np.clip(qmin - np.rint(mn / s32), qmin, qmax)
        assert_equal(qp.zero_point.int(), zp)
        assert qp.zero_point.dtype is ember.DType.INT8
    assert qp.scale.dtype is ember.DType.FLOAT32
    assert_close(qp.scale, want.astype(np.float32), atol=0.0, rtol=1e-6)
    # the zero column quantizes to the zero point and comes back as exact zeros
    back = t.quantize(scheme, qp).dequantize().to_numpy()
    assert np.all(back[:, 1] == 0.0)


def test_affine_range_always_holds_zero_exactly(device):
    x = Tensor.from_floats([0.3, 0.9, 2.0, 0.0], device)  # all >= 0: min widens to 0
    qt = x.quantize_dynamic(QuantScheme(QuantValue.Q8F))
    assert qt.qparams.zero_point.into_scalar() == -128
    assert qt.dequantize().to_numpy()[3] == 0.0


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
def test_nan_and_inf_input_raise(device, bad):
    x = Tensor.from_floats([1.0, bad, 2.0], device)
    with pytest.raises(QuantizationError, match="NaN or infinite"):
        x.quantize_dynamic(QuantScheme())
    with pytest.raises(QuantizationError, match="NaN or infinite"):
        x.quantize(QuantScheme(), QParams(Tensor.from_floats([0.1], device)))


def test_int4_packing_layout_low_nibble_first(device):
    # Q4F with scale 1, zero point 0: the integers are the inputs; ONNX int4 layout, first value in the low nibble
    x = Tensor.from_floats([-8.0, 7.0, 1.0, -1.0, 3.0], device)
    zp = Tensor.from_data(np.array([0], np.int8), device, ember.Int, dtype="int8")
    qt = x.quantize(QuantScheme(QuantValue.Q4F), QParams(Tensor.from_floats([1.0], device), zp))
    # byte 0: 8 | 7 << 4 = 120; byte 1: 1 | 15 << 4 = 241; byte 2: 3 (the pad nibble is 0)
    assert qt.values.dtype is ember.DType.UINT8
    assert_equal(qt.values.int(), [120, 241, 3])
    assert_equal(qt.int_values().int(), [-8, 7, 1, -1, 3])


@pytest.mark.parametrize("k", [37, 1100], ids=["k37", "k1100_beyond_f32_exact"])
def test_int_matmul_is_exact(device, k):
    rng = np.random.default_rng(11)
    a = rng.integers(-128, 128, size=(3, 5, k)).astype(np.int8)
    b = rng.integers(-128, 128, size=(k, 4)).astype(np.int8)
    a[0, 0, :] = -128  # the extreme products
    b[:, 0] = -128
    ta = Tensor.from_data(a, device, ember.Int, dtype="int8")
    tb = Tensor.from_data(b, device, ember.Int, dtype="int8")
    ops = device.ops[1]
    out = Tensor(ops.int_matmul(ta.primitive, tb.primitive), device, ember.Int)
    assert out.dtype is ember.DType.INT32
    assert_equal(out, a.astype(np.int64) @ b.astype(np.int64))
    # batched right operand
    b3 = np.stack([b, -b.clip(-127, 127)])
    tb3 = Tensor.from_data(b3, device, ember.Int, dtype="int8")
    out3 = Tensor(ops.int_matmul(ta[:2].primitive, tb3.primitive), device, ember.Int)
    assert_equal(out3, a[:2].astype(np.int64) @ b3.astype(np.int64))


def _qmm_case(device, a_scheme, b_scheme, seed=5):
    rng = np.random.default_rng(seed)
    a = Tensor.from_data(rng.normal(size=(6, 16)), device)
    b = Tensor.from_data(rng.normal(size=(16, 8)), device)
    return a.quantize_dynamic(a_scheme), b.quantize_dynamic(b_scheme)


def _deq64(qt: QuantizedTensor) -> np.ndarray:
    """``(q - zp) * scale`` in float64 from the stored parts, by hand."""
    q = qt.int_values().to_numpy().astype(np.float64)
    s: Any = qt.qparams.scale.float().to_numpy().astype(np.float64)
    z: Any = 0.0 if qt.qparams.zero_point is None else qt.qparams.zero_point.to_numpy().astype(np.float64)
    lv = qt.scheme.level
    dim, size = lv.dim or 0, lv.size or 1
    if lv.kind == "axis" and dim % q.ndim == q.ndim - 2:
        s, z = s.reshape(-1, 1), (z if np.isscalar(z) else z.reshape(-1, 1))
    elif lv.kind == "block":
        s, z = np.repeat(s, size, axis=dim), (z if np.isscalar(z) else np.repeat(z, size, axis=dim))
    return (q - z) * s


CASES = {
    "sym_tensor_x_sym_cols": (QuantScheme(), QuantScheme(level=QuantLevel.axis(-1))),
    "affine_rows_x_sym_tensor": (QuantScheme(QuantValue.Q8F, QuantLevel.axis(-2)), QuantScheme()),
    "affine_tensor_x_int4_cols": (QuantScheme(QuantValue.Q8F), QuantScheme(QuantValue.Q4S, QuantLevel.axis(1))),
    "fallback_blocks": (QuantScheme(level=QuantLevel.block(8)), QuantScheme(QuantValue.Q8F, QuantLevel.block(4, 0))),
}


@pytest.mark.parametrize("case", list(CASES), ids=str)
def test_quantized_matmul_matches_dequantized_product(device, case):
    qa, qb = _qmm_case(device, *CASES[case])
    y = quantized_matmul(qa, qb)
    assert y.kind is ember.Float and y.shape == (6, 8)
    assert_close(y, _deq64(qa) @ _deq64(qb))


def test_quantized_matmul_accumulator_is_exact_int32(device):
    qa, qb = _qmm_case(device, QuantScheme(QuantValue.Q8F), QuantScheme(level=QuantLevel.axis(1)))
    acc = quantized_matmul(qa, qb, accumulate=True)
    assert acc.dtype is ember.DType.INT32
    qa64 = qa.int_values().to_numpy().astype(np.int64) - int(qa.qparams.zero_point.into_scalar())
    assert_equal(acc, qa64 @ qb.int_values().to_numpy().astype(np.int64))
    fa, fb = _qmm_case(device, QuantScheme(level=QuantLevel.block(4)), QuantScheme())
    with pytest.raises(QuantizationError, match="accumulate=True"):
        quantized_matmul(fa, fb, accumulate=True)


@pytest.mark.parametrize("act", [None, QuantScheme(), QuantScheme(QuantValue.Q8F)], ids=["weight_only", "q8s", "q8f"])
def test_quantized_linear(device, act):
    rng = np.random.default_rng(2)
    x = Tensor.from_data(rng.normal(size=(2, 3, 16)), device)
    w = Tensor.from_data(rng.normal(size=(16, 8)), device)
    bias = Tensor.from_data(rng.normal(size=(8,)), device)
    wq = w.quantize_dynamic(QuantScheme(level=QuantLevel.axis(1)))
    y = quantized_linear(x, wq, bias, activation_scheme=act)
    assert y.shape == (2, 3, 8)
    x64 = x.to_numpy().astype(np.float64)
    if act is not None:  # the activations are quantized per tensor from their own range
        x64 = _deq64(x.reshape((6, 16)).quantize_dynamic(act)).reshape(2, 3, 16)
    assert_close(y, x64 @ _deq64(wq) + bias.to_numpy().astype(np.float64))


def test_fake_quantize_forward_and_straight_through_gradient(ad_device):
    s = 0.25
    # x / s: -40 (inside), 600 (saturates), 0.6 (inside), -600 (saturates), 126.8 and 127.2 (both round to 127)
    xv = np.array([-10.0, 150.0, 0.15, -150.0, 31.7, 31.8])
    x = Tensor.from_data(xv, ad_device).require_grad()
    qp = QParams(Tensor.from_floats([s], ad_device).cast("float32"))
    y = fake_quantize(x, QuantScheme(), qp)
    want = np.clip(np.rint(xv / s), -127, 127) * s
    assert_close(y, want)
    g = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    grads = (y * Tensor.from_data(g, ad_device)).sum().backward()
    # STE: the upstream gradient where -127 <= round(x / s) <= 127, else 0 (31.7/0.25 = 126.8 -> 127 inside,
    # 31.8/0.25 = 127.2 -> 127 inside: the clamp bound is on the rounded value, as torch's FakeQuantize)
    assert_close(x.grad(grads), [1.0, 0.0, 3.0, 0.0, 5.0, 6.0])


def test_fake_quantize_affine_blocks_gradient_mask(ad_device):
    xv = np.array([[0.0, 1.0, 2.0, 9.0], [-3.0, 0.5, -0.5, 0.2]])
    x = Tensor.from_data(xv, ad_device).require_grad()
    scheme = QuantScheme(QuantValue.Q4F, QuantLevel.block(2))
    s = np.array([[0.25, 0.5], [0.1, 0.1]])
    zp = np.array([[-8, 0], [2, -1]], np.int8)
    qp = QParams(
        Tensor.from_data(s, ad_device).cast("float32"), Tensor.from_data(zp, ad_device, ember.Int, dtype="int8")
    )
    y = fake_quantize(x, scheme, qp)
    s_full, z_full = np.repeat(s.astype(np.float32).astype(np.float64), 2, 1), np.repeat(zp.astype(np.float64), 2, 1)
    r = np.rint(xv / s_full) + z_full
    assert_close(y, (np.clip(r, -8, 7) - z_full) * s_full)
    grads = y.sum().backward()
    assert_close(x.grad(grads), ((r >= -8) & (r <= 7)).astype(np.float64))


def test_quantize_under_autodiff_keeps_the_device(ad_device):
    x = Tensor.from_floats([[1.0, -2.0], [0.5, 4.0]], ad_device).require_grad()
    qt = x.quantize_dynamic(QuantScheme(level=QuantLevel.axis(0)))
    assert qt.device is ad_device
    back = qt.dequantize()
    assert back.device is ad_device and not back.is_require_grad()
    assert_close(back, qt.inner().dequantize().to_numpy().astype(np.float64))


def test_float_dtypes_quantize_in_float32_or_wider(float_device):
    x = Tensor.from_floats([0.1, -0.7, 0.33, 1.0], float_device)
    qt = x.quantize_dynamic(QuantScheme())
    xs = x.to_numpy().astype(np.float64)
    s = np.float64(np.float32(np.abs(xs).max() / 127))
    assert_equal(qt.int_values().int(), np.clip(np.rint(xs / s), -127, 127))
    assert qt.dequantize().dtype is float_device.backend.float_dtype


@pytest.mark.parametrize("param", list(QuantParam), ids=lambda p: p.name)
def test_scale_types(device, param):
    x = Tensor.from_floats([[0.1, -0.7], [0.33, 1.0]], device)
    scheme = QuantScheme(param=param)
    if param.dtype not in device.backend.supported_dtypes:
        with pytest.raises(QuantizationError, match="need a backend"):
            x.quantize_dynamic(scheme)
        return
    qt = x.quantize_dynamic(scheme)
    assert qt.qparams.scale.dtype is param.dtype
    s = float(qt.qparams.scale.cast(device.backend.float_dtype).into_scalar())
    xs = x.to_numpy().astype(np.float64)
    assert_equal(qt.int_values().int(), np.clip(np.rint(xs / s), -127, 127))


def test_moves_across_backends(device):
    if not any(info.name == "numpy" and info.status == "ok" for info in ember.backends()):
        pytest.skip("the numpy backend is not installed (this session installs one backend)")
    x = Tensor.from_floats([[0.1, -0.7, 0.2], [0.33, 1.0, -1.0]], device)
    for scheme in (QuantScheme(QuantValue.Q8F, QuantLevel.axis(0)), QuantScheme(QuantValue.Q4S)):
        qt = x.quantize_dynamic(scheme)
        there = qt.to_device(ember.backend("numpy").device())
        back = there.to_device(device)
        assert back.device is device and there.scheme == scheme
        assert np.array_equal(there.values.to_numpy(), qt.values.to_numpy())
        assert np.array_equal(back.dequantize().to_numpy(), qt.dequantize().to_numpy())


def test_other_ops_raise_instead_of_computing(device):
    qt = Tensor.from_floats([1.0, 2.0], device).quantize_dynamic(QuantScheme())
    for call in (lambda: qt + 1.0, lambda: qt.sum(), lambda: qt.exp(), lambda: qt[0], lambda: qt.reshape((2, 1))):
        with pytest.raises(QuantizationError, match=r"dequantize\(\) first"):
            call()


def test_weight_only_linear_is_differentiable_in_x_and_bias(ad_device):
    rng = np.random.default_rng(4)
    x = Tensor.from_data(rng.normal(size=(3, 4)), ad_device).require_grad()
    bias = Tensor.from_data(rng.normal(size=(2,)), ad_device).require_grad()
    wq = Tensor.from_data(rng.normal(size=(4, 2)), ad_device).quantize_dynamic(QuantScheme(level=QuantLevel.axis(1)))
    g = rng.normal(size=(3, 2))
    grads = (quantized_linear(x, wq, bias) * Tensor.from_data(g, ad_device)).sum().backward()
    w64 = _deq64(wq)
    assert_close(x.grad(grads), g @ w64.T)  # d/dx of sum(g * (x @ W + b)) = g @ W^T
    assert_close(bias.grad(grads), g.sum(0))
