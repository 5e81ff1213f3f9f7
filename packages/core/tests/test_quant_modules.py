"""Quantizing modules (``ember.quantization.Quantizer``): weight-only, dynamic, static (prepare / calibrate /
convert) and quantization-aware layers against numpy float64 references, on every installed backend; records
and layer selection."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
from _nn_support import BACKENDS, ad_device, ints, plain_device, tensor, to_np
from ember import ConfigError, nn
from ember.module import Module, Param
from ember.quantization import (
    Calibration,
    FakeQuantized,
    QuantizationError,
    QuantizedConv1d,
    QuantizedConv2d,
    QuantizedEmbedding,
    QuantizedLinear,
    Quantizer,
    QuantLevel,
    QuantParam,
    QuantScheme,
    QuantValue,
    calibrate,
)
from ember.record import NamedMpkFileRecorder, SafetensorsFileRecorder
from ember.tensor import activation as A

rng = np.random.default_rng(330)
Q8_AXIS = QuantScheme(QuantValue.Q8S, QuantLevel.axis(0))
Q4_BLOCK = QuantScheme(QuantValue.Q4S, QuantLevel.block(4))
ACT = QuantScheme(QuantValue.Q8F, QuantLevel.tensor())


@pytest.fixture(params=BACKENDS)
def backend_name(request: pytest.FixtureRequest) -> str:
    return request.param  # type: ignore[no-any-return]


# ---------------------------------------------------------------------------------------------------- references
def sym_fake(w: np.ndarray, qmax: int, axis: int | None = None, block: tuple[int, int] | None = None) -> np.ndarray:
    """Symmetric quantize-dequantize in float64: ``scale = max|w| / qmax`` per tensor, per index of ``axis`` or per
    block ``(dim, size)``; ``round half to even`` (numpy's ``rint``), clipped to ``[-qmax, qmax]``."""
    w = np.asarray(w, dtype=np.float64)
    if block is not None:
        dim, size = block
        v = np.moveaxis(w, dim, -1)
        v = v.reshape(*v.shape[:-1], v.shape[-1] // size, size)
        s = np.abs(v).max(axis=-1, keepdims=True) / qmax
        s = s.astype(np.float32).astype(np.float64)
        out = np.clip(np.rint(v / s), -qmax, qmax) * s
        return np.moveaxis(out.reshape(*out.shape[:-2], -1), -1, dim)
    if axis is None:
        s = np.float64(np.float32(np.abs(w).max() / qmax))
    else:
        dims = tuple(d for d in range(w.ndim) if d != axis)
        s = (np.abs(w).max(axis=dims, keepdims=True) / qmax).astype(np.float32).astype(np.float64)
    return np.clip(np.rint(w / s), -qmax, qmax) * s


def affine_fake(x: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """int8 affine quantize-dequantize (torch.ao ``MinMaxObserver`` qparams with qmin -128, qmax 127: the range
    widened to hold 0, ``scale = (hi - lo) / 255``, ``zp = clamp(-128 - round(lo / scale))``)."""
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    s = np.float64(np.float32((hi - lo) / 255.0))
    zp = np.clip(-128 - np.rint(lo / s), -128, 127)
    return (np.clip(np.rint(x / s) + zp, -128, 127) - zp) * s


def _np(p: object) -> np.ndarray:
    return to_np(p.val())  # type: ignore[attr-defined]


class Net(Module):
    """A small model with every quantizable layer but Conv2d: an embedding, a conv1d and two linears."""

    emb: nn.Embedding
    conv: nn.Conv1d
    head: list[nn.Linear]

    def forward(self, idx: ember.Tensor) -> ember.Tensor:
        x = self.emb(idx).swap_dims(1, 2)  # [b, 8, seq]
        x = self.conv(x)  # [b, 8, seq - 2]
        x = x.flatten(1, 2)
        return self.head[1](A.relu(self.head[0](x)))


def net(dev: object) -> Net:
    return Net(emb=nn.EmbeddingConfig(20, 8).init(dev), conv=nn.Conv1dConfig((8, 8), (3,)).init(dev),
               head=[nn.LinearConfig(8 * 4, 16).init(dev), nn.LinearConfig(16, 5).init(dev)])


# ---------------------------------------------------------------------------------------------------- weight-only
def test_weight_only_linear_int8_per_channel(backend_name: str) -> None:
    dev = plain_device(backend_name)
    layer = nn.LinearConfig(12, 6).init(dev)
    q = Quantizer(Calibration.min_max(), Q8_AXIS).quantize_weights(layer)
    assert isinstance(q, QuantizedLinear) and q.weight.id == layer.weight.id
    qt = q.weight.val()
    assert qt.scheme.level == QuantLevel.axis(1) and qt.values.dtype == ember.DType.INT8  # per output channel
    x = rng.standard_normal((5, 12))
    want = x @ sym_fake(_np(layer.weight), 127, axis=1) + _np(layer.bias)
    np.testing.assert_allclose(to_np(q(tensor(x, dev))), want, rtol=1e-5, atol=1e-5)
    # the integers themselves: round(w / scale) with scale = max|w| per column / 127
    w = _np(layer.weight)
    s = (np.abs(w).max(axis=0) / 127).astype(np.float32)
    np.testing.assert_array_equal(to_np(qt.int_values()), np.rint(w / s))


def test_weight_only_int4_blocks_linear_conv_embedding(backend_name: str) -> None:
    dev = plain_device(backend_name)
    model = net(dev)
    q = Quantizer(Calibration.min_max(), Q4_BLOCK).quantize_weights(model)
    assert isinstance(q.emb, QuantizedEmbedding) and isinstance(q.conv, QuantizedConv1d)
    assert all(isinstance(h, QuantizedLinear) for h in q.head)
    assert q.head[0].weight.val().scheme.level == QuantLevel.block(4, 0)  # along d_input
    assert q.conv.weight.val().shape == (8, 24)  # [c_out, c_in * k], blocks along fan-in
    idx = rng.integers(0, 20, (3, 6))
    # float64 reference: the same forward with every weight fake-quantized by blocks of 4 along the inputs
    emb_w = sym_fake(_np(model.emb.weight), 7, block=(1, 4))
    cw = _np(model.conv.weight)
    conv_w = sym_fake(cw.reshape(8, 24), 7, block=(1, 4)).reshape(cw.shape)
    h0 = sym_fake(_np(model.head[0].weight), 7, block=(0, 4))
    h1 = sym_fake(_np(model.head[1].weight), 7, block=(0, 4))
    e = emb_w[idx].transpose(0, 2, 1)  # [3, 8, 6]
    c = np.stack([sum(e[:, :, t + k] @ conv_w[:, :, k].T for k in range(3)) for t in range(4)], axis=2)
    c = c + _np(model.conv.bias)[None, :, None]
    hid = np.maximum(c.reshape(3, -1) @ h0 + _np(model.head[0].bias), 0)
    want = hid @ h1 + _np(model.head[1].bias)
    np.testing.assert_allclose(to_np(q(ints(idx, dev))), want, rtol=1e-4, atol=1e-4)


def test_conv2d_block_falls_back_to_per_channel(backend_name: str) -> None:
    dev = plain_device(backend_name)
    conv = nn.Conv2dConfig((1, 4), (3, 3)).init(dev)  # fan-in 9: blocks of 4 do not divide it
    quantizer = Quantizer(Calibration.min_max(), Q4_BLOCK)
    assert quantizer.weight_scheme(conv).level == QuantLevel.axis(0)
    q = quantizer.quantize_weights(conv)
    assert isinstance(q, QuantizedConv2d)
    x = rng.standard_normal((2, 1, 5, 5))
    w = sym_fake(_np(conv.weight), 7, axis=0)
    want = np.zeros((2, 4, 3, 3))
    for i in range(3):
        for j in range(3):
            want[:, :, i, j] = np.einsum("bchw,ochw->bo", x[:, :, i:i + 3, j:j + 3], w)
    want += _np(conv.bias)[None, :, None, None]
    np.testing.assert_allclose(to_np(q(tensor(x, dev))), want, rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------------------------------------------- dynamic
def test_dynamic_linear_quantizes_each_input_with_its_range(backend_name: str) -> None:
    dev = plain_device(backend_name)
    layer = nn.LinearConfig(16, 4).init(dev)
    q = Quantizer(Calibration.min_max(), Q8_AXIS, activation=ACT).quantize_dynamic(layer)
    w = sym_fake(_np(layer.weight), 127, axis=1)
    for scale in (1.0, 10.0):  # two inputs of different ranges: each gets its own qparams
        x = rng.standard_normal((3, 16)) * scale + 0.5
        want = affine_fake(x, x.min(), x.max()) @ w + _np(layer.bias)
        np.testing.assert_allclose(to_np(q(tensor(x, dev))), want, rtol=1e-4, atol=1e-4 * scale)


def _product_error_bound(x: np.ndarray, w: np.ndarray, dx: float, dw: float) -> np.ndarray:
    """The largest ``|x_q @ w_q - x @ w|`` over every ``x_q``, ``w_q`` within ``dx`` / ``dw`` of ``x`` / ``w``
    elementwise (``x`` ``[b, k]``, ``w`` ``[k, n]``): ``sum_k |x| dw + dx |w| + dx dw``, per output ``[b, n]``."""
    ax, aw = np.abs(x), np.abs(w)
    return ax.sum(1)[:, None] * dw + dx * aw.sum(0)[None, :] + x.shape[1] * dx * dw


def test_dynamic_linear_against_torch_ao() -> None:
    """Ember's dynamic int8 linear and ``torch.ao``'s both stay within the rounding bound of their own
    quantization grids from the float product, so they are within the sum of the two bounds of each other.

    Ember: weight Q8S per tensor, ``sw = max|w| / 127``; input Q8F over ``[min(x, 0), max(x, 0)]``,
    ``sx = range / 255``; every value inside its grid's range, so each rounds by at most half a step. torch.ao
    (fbgemm): weight qint8 per-tensor symmetric (its scale read back from the module), input quint8 with
    ``reduce_range`` (``range / 127``); its zero point is rounded to an integer, which can push one end of the range
    half a step outside the grid, so a full step bounds its input error. Seeded (weights, bias and input), so the
    outputs are the same on every run; the bounds hold for any data."""
    torch = pytest.importorskip("torch")
    dev = plain_device("torch") if "torch" in BACKENDS else plain_device("numpy")
    local = np.random.default_rng(2033)
    w = (local.standard_normal((32, 8)) * 0.2).astype(np.float32)
    b = (local.standard_normal(8) * 0.1).astype(np.float32)
    x = local.standard_normal((6, 32)).astype(np.float32)
    base = nn.LinearConfig(32, 8).init(dev)
    layer = base.replace(weight=Param(tensor(w, dev), base.weight.id), bias=Param(tensor(b, dev), base.bias.id))
    ref = torch.nn.Linear(32, 8)
    with torch.no_grad():
        ref.weight.copy_(torch.from_numpy(w.T.copy()))
        ref.bias.copy_(torch.from_numpy(b))
    with warnings.catch_warnings():  # torch 2.13 deprecates torch.ao.quantization (moved to torchao)
        warnings.simplefilter("ignore")
        ref_q = torch.ao.quantization.quantize_dynamic(torch.nn.Sequential(ref), {torch.nn.Linear},
                                                       dtype=torch.qint8)
    ours = Quantizer(Calibration.min_max(), QuantScheme(QuantValue.Q8S, QuantLevel.tensor()),
                     activation=ACT).quantize_dynamic(layer)
    got = to_np(ours(tensor(x, dev)))
    want = ref_q(torch.from_numpy(x)).double().numpy()
    x64, w64 = x.astype(np.float64), w.astype(np.float64)
    exact = x64 @ w64 + b
    span = max(float(x64.max()), 0.0) - min(float(x64.min()), 0.0)
    ours_bound = _product_error_bound(x64, w64, span / 255 / 2, np.abs(w64).max() / 127 / 2) + 1e-5
    torch_sw = float(ref_q[0].weight().q_scale())
    torch_bound = _product_error_bound(x64, w64, span / 127, torch_sw / 2) + 1e-5
    assert (np.abs(got - exact) <= ours_bound).all()
    assert (np.abs(want - exact) <= torch_bound).all()
    assert (np.abs(got - want) <= ours_bound + torch_bound).all()
    # the worst case adds every rounding error with the same sign; independent roundings (uniform, variance
    # step^2 / 12) add as a random walk: standard deviation sqrt(sum x^2 sw^2 + w^2 sx^2) / sqrt(12) per output
    # and grid. 6 of those deviations are 0.10 to 0.14 here (the worst-case sum 0.46); the seeded data differ by
    # 0.038 at most, which the former fixed 0.03 would have refused: that tolerance was below the noise.
    def sigma(sx: float, sw: float) -> np.ndarray:
        return np.sqrt((x64**2).sum(1)[:, None] * sw**2 + sx**2 * (w64**2).sum(0)[None, :]) / np.sqrt(12)

    spread = np.hypot(sigma(span / 255, np.abs(w64).max() / 127), sigma(span / 127, torch_sw))
    assert (np.abs(got - want) <= 6 * spread).all()


# ---------------------------------------------------------------------------------------------------- static
def test_static_prepare_calibrate_convert(backend_name: str) -> None:
    dev = plain_device(backend_name)
    layer = nn.LinearConfig(10, 3).init(dev)
    quantizer = Quantizer(Calibration.min_max(), Q8_AXIS, activation=ACT)
    prepared = quantizer.prepare(layer)
    xs = [rng.standard_normal((4, 10)) * (i + 1) for i in range(3)]
    outs = [to_np(prepared(tensor(x, dev))) for x in xs]  # the prepared model computes the float outputs
    np.testing.assert_allclose(outs[0], xs[0] @ _np(layer.weight) + _np(layer.bias), rtol=1e-5, atol=1e-5)
    lo, hi = min(float(x.astype(np.float32).min()) for x in xs), max(float(x.astype(np.float32).max()) for x in xs)
    q = quantizer.convert(prepared)
    assert isinstance(q, QuantizedLinear) and q.input is not None and q.input.static
    scale = float(to_np(q.input.scale.value())[0])
    assert scale == pytest.approx((max(hi, 0) - min(lo, 0)) / 255, rel=1e-6)
    w = sym_fake(_np(layer.weight), 127, axis=1)
    x = rng.standard_normal((5, 10)) * 5  # beyond the calibrated range: saturates
    want = affine_fake(x, lo, hi) @ w + _np(layer.bias)
    np.testing.assert_allclose(to_np(q(tensor(x, dev))), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("qat", [False, True])
def test_static_layers_converted_under_autodiff_take_autodiff_inputs(backend_name: str, qat: bool) -> None:
    """Static quantized layers (calibrated, or QAT) converted on an ``Autodiff`` device keep their input qparams
    on that device: called with the device's tensors they compute what the same layers converted on the plain
    device compute (regression: the qparams were stored on the inner device and ``quantize`` refused the input)."""
    dev, ad = plain_device(backend_name), ad_device(backend_name)
    quantizer = Quantizer(Calibration.min_max(), Q8_AXIS, activation=ACT)
    cases = [(nn.LinearConfig(10, 3), (4, 10)), (nn.Conv1dConfig((3, 4), (3,)), (2, 3, 9)),
             (nn.Conv2dConfig([3, 4], [3, 3]), (2, 3, 6, 6))]
    for cfg, shape in cases:
        layer = cfg.init(dev)
        prepared = (quantizer.prepare_qat if qat else quantizer.prepare)(layer.fork(ad))
        for i in range(2):  # calibration (QAT observers learn on autodiff devices only)
            prepared(tensor(rng.standard_normal(shape) * (i + 1), ad))
        # the same calibrated model converted on the Autodiff device and on its inner (plain) one
        converted = [quantizer.convert(prepared.valid()), quantizer.convert(prepared)]
        for q, d in zip(converted, (dev, ad)):
            assert q.input is not None and q.input.static
            assert q.input.scale.value().device is d and q.weight.val().device is d  # the layer's device
        x = rng.standard_normal(shape) * 2
        got = converted[1](tensor(x, ad))
        assert got.device is ad
        np.testing.assert_allclose(to_np(got), to_np(converted[0](tensor(x, dev))), rtol=1e-6, atol=1e-6)
    if qat:
        return
    # a whole model (embedding, conv1d, linears) the same way
    prepared = quantizer.prepare(net(dev).fork(ad))
    for _ in range(2):
        prepared(ints(rng.integers(0, 20, (3, 6)), ad))
    idx = rng.integers(0, 20, (2, 6))
    got = quantizer.convert(prepared)(ints(idx, ad))
    want = quantizer.convert(prepared.valid())(ints(idx, dev))
    assert got.device is ad
    np.testing.assert_allclose(to_np(got), to_np(want), rtol=1e-6, atol=1e-6)


def test_static_with_calibrate_over_a_data_loader(backend_name: str) -> None:
    from ember.data import DataLoaderBuilder, InMemDataset

    dev = plain_device(backend_name)
    model = net(dev)
    items = [rng.integers(0, 20, 6) for _ in range(12)]

    class Batcher:
        def batch(self, xs: list[np.ndarray], device: object) -> ember.Tensor:
            return ints(np.stack(xs), device)

    loader = DataLoaderBuilder(Batcher()).batch_size(4).set_device(dev).build(InMemDataset(items))
    quantizer = Quantizer(Calibration.moving_average(0.5), Q8_AXIS)
    prepared = quantizer.prepare(model)
    calibrate(prepared, loader)
    assert prepared.head[0].observer.count == 3 and prepared.conv.observer.count == 3
    q = quantizer.convert(prepared)
    assert q.head[0].input.static and q.conv.input.static and isinstance(q.emb, QuantizedEmbedding)
    idx_np = np.stack(items[:4])

    def fq(x: np.ndarray, layer: object) -> np.ndarray:  # the input quantized with the layer's stored qparams
        s = float(to_np(layer.input.scale.value())[0])  # type: ignore[attr-defined]
        zp = float(to_np(layer.input.zero_point.value())[0])  # type: ignore[attr-defined]
        return (np.clip(np.rint(x / s) + zp, -128, 127) - zp) * s

    e = sym_fake(_np(model.emb.weight), 127, axis=0)[idx_np].transpose(0, 2, 1)
    e = fq(e, q.conv)
    cw = sym_fake(_np(model.conv.weight), 127, axis=0)
    c = np.stack([sum(e[:, :, t + k] @ cw[:, :, k].T for k in range(3)) for t in range(4)], axis=2)
    c = (c + _np(model.conv.bias)[None, :, None]).reshape(4, -1)
    hid = np.maximum(fq(c, q.head[0]) @ sym_fake(_np(model.head[0].weight), 127, axis=1) + _np(model.head[0].bias), 0)
    want = fq(hid, q.head[1]) @ sym_fake(_np(model.head[1].weight), 127, axis=1) + _np(model.head[1].bias)
    np.testing.assert_allclose(to_np(q(ints(idx_np, dev))), want, rtol=1e-4, atol=1e-4)


def test_convert_before_calibration_says_so() -> None:
    dev = plain_device("numpy")
    q = Quantizer()
    with pytest.raises(QuantizationError, match="no tensor was observed"):
        q.convert(q.prepare(nn.LinearConfig(3, 2).init(dev)))


# ---------------------------------------------------------------------------------------------------- selection
def test_selection_by_path_and_type() -> None:
    dev = plain_device("numpy")
    model = net(dev)
    only_head0 = Quantizer(include=["head.0"]).quantize_weights(model)
    assert isinstance(only_head0.head[0], QuantizedLinear) and isinstance(only_head0.head[1], nn.Linear)
    assert isinstance(only_head0.emb, nn.Embedding) and only_head0.conv is model.conv  # untouched: shared
    no_head = Quantizer(exclude=["head.*"]).quantize_weights(model)
    assert isinstance(no_head.emb, QuantizedEmbedding) and isinstance(no_head.head[1], nn.Linear)
    linears = Quantizer(types=[nn.Linear]).quantize_weights(model)
    assert isinstance(linears.conv, nn.Conv1d) and all(isinstance(h, QuantizedLinear) for h in linears.head)
    assert isinstance(model.head[0], nn.Linear)  # the input model is unchanged
    with pytest.raises(ConfigError, match="types must be among"):
        Quantizer(types=[nn.LayerNorm])
    with pytest.raises(ConfigError, match="per tensor"):
        Quantizer(activation=QuantScheme(QuantValue.Q8F, QuantLevel.axis(0)))
    with pytest.raises(TypeError, match="fnmatch"):
        Quantizer(include="head.0")


# ---------------------------------------------------------------------------------------------------- records
@pytest.mark.parametrize("recorder", [NamedMpkFileRecorder, SafetensorsFileRecorder])
def test_quantized_records_round_trip_and_are_small(tmp_path, recorder) -> None:  # type: ignore[no-untyped-def]
    dev = plain_device("numpy")
    model = nn.LinearConfig(256, 256).init(dev)
    float_size = model.save_file(tmp_path / "f", recorder()).stat().st_size
    # int4 by blocks of 32 takes 4 + 16 / 32 = 4.5 bits a weight with float16 scales (5 with float32 ones: > 0.15x)
    int4 = QuantScheme(QuantValue.Q4S, QuantLevel.block(32), QuantParam.F16)
    for scheme, limit in ((Q8_AXIS, 0.27), (int4, 0.15)):
        quantizer = Quantizer(Calibration.min_max(), scheme, activation=ACT)
        q = quantizer.quantize_dynamic(model)
        path = q.save_file(tmp_path / f"q{scheme.value.bits}", recorder())
        assert path.stat().st_size <= limit * float_size
        template = quantizer.quantize_dynamic(nn.LinearConfig(256, 256).init(dev))
        loaded = template.load_file(path, recorder())
        x = tensor(rng.standard_normal((2, 256)), dev)
        np.testing.assert_array_equal(to_np(loaded(x)), to_np(q(x)))
        np.testing.assert_array_equal(to_np(loaded.weight.val().values), to_np(q.weight.val().values))


# ---------------------------------------------------------------------------------------------------- QAT
def test_qat_gradients_are_straight_through(backend_name: str) -> None:
    dev = ad_device(backend_name)
    layer = nn.LinearConfig(6, 4).init(dev)
    quantizer = Quantizer(Calibration.moving_average(1.0), QuantScheme(QuantValue.Q8S, QuantLevel.axis(0)),
                          activation=ACT)
    qat = quantizer.prepare_qat(layer)
    assert isinstance(qat, FakeQuantized) and qat.layer.weight.id == layer.weight.id
    x_np = rng.standard_normal((3, 6))
    qat(tensor(x_np, dev))  # sets the input range (momentum 1: the last batch's min/max)
    x_np2 = x_np * 1.5  # some values beyond that range: their input gradient is zero
    x = tensor(x_np2, dev).require_grad()
    g = rng.standard_normal((3, 4))
    y = qat(x)
    (y * tensor(g, dev)).sum().backward()  # warm-up graph
    y = qat(x)
    grads = (y * tensor(g, dev)).sum().backward()
    w = _np(layer.weight)
    wq = sym_fake(w, 127, axis=1)
    lo, hi = float(x_np2.astype(np.float32).min()), float(x_np2.astype(np.float32).max())
    xq = affine_fake(x_np2, lo, hi)  # momentum 1: the range of the previous call, x_np2's own
    np.testing.assert_allclose(to_np(y.inner()), xq @ wq + _np(layer.bias), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(to_np(layer.weight.val().grad(grads)), xq.T @ g, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(to_np(x.grad(grads)), g @ wq.T, rtol=1e-4, atol=1e-4)


def test_qat_train_then_convert(backend_name: str) -> None:
    from ember.optim import AdamConfig

    dev = ad_device(backend_name)
    model = net(dev)
    quantizer = Quantizer(Calibration.moving_average(), Q4_BLOCK)
    qat = quantizer.prepare_qat(model)
    idx = ints(rng.integers(0, 20, (8, 6)), dev)
    target = tensor(rng.standard_normal((8, 5)), dev)
    optim = AdamConfig().init()
    losses = []
    for _ in range(15):
        loss = ((qat(idx) - target) ** 2).mean()
        losses.append(float(loss.into_scalar()))
        from ember.optim import GradientsParams

        qat = optim.step(1e-2, qat, GradientsParams.from_grads(loss.backward(), qat))
    assert losses[-1] < 0.7 * losses[0]
    q = quantizer.convert(qat)
    assert isinstance(q.head[0], QuantizedLinear) and q.head[0].weight.val().scheme.value is QuantValue.Q4S
    # the converted model computes what the trained QAT model computed (same fake-quantized numbers)
    # on the QAT model's (Autodiff) device; .valid() gives the inner-device model, as for any module
    inner_idx = ints(to_np(idx).astype(np.int64), dev.inner)
    want = to_np(qat.valid()(inner_idx))
    np.testing.assert_allclose(to_np(q(idx)), want, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(to_np(q.valid()(inner_idx)), want, rtol=1e-4, atol=1e-4)
