"""ember.quantization on the numpy backend: the scheme API, argument checks and errors, QuantizedTensor's protocol
(repr, pickling, devices, refused ops), quantized tensors in modules and records (every recorder, sizes, precision
settings, mismatches and malformed files). The numerics on every backend are the conformance suite's
(``ember/testing/conformance/test_quantization.py``)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import ember
from ember import RecordError, Tensor, TensorData
from ember.autodiff import Autodiff
from ember.module import Module, Param, RunningState
from ember.nn import Linear, LinearConfig
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
    quantized_linear,
    quantized_matmul,
)
from ember.record import (
    BinFileRecorder,
    BinGzFileRecorder,
    CompactRecorder,
    JsonGzFileRecorder,
    NamedMpkFileRecorder,
    NamedMpkGzFileRecorder,
    PrettyJsonFileRecorder,
    SafetensorsFileRecorder,
    SensitiveCompactRecorder,
)

RECORDERS = [
    NamedMpkFileRecorder,
    NamedMpkGzFileRecorder,
    BinFileRecorder,
    BinGzFileRecorder,
    PrettyJsonFileRecorder,
    JsonGzFileRecorder,
    SafetensorsFileRecorder,
    CompactRecorder,
    SensitiveCompactRecorder,
]


@pytest.fixture
def dev():
    return ember.backend("numpy").device()


def floats(dev, shape, seed=0):
    return Tensor.from_data(np.random.default_rng(seed).normal(size=shape), dev)


# ---------------------------------------------------------------------------------------------------- scheme
def test_scheme_defaults_and_with_methods():
    s = QuantScheme()
    assert (s.value, s.level, s.param) == (QuantValue.Q8S, QuantLevel.tensor(), QuantParam.F32)
    t = s.with_value(QuantValue.Q4F).with_level(QuantLevel.block(32, axis=0)).with_param(QuantParam.F16)
    assert (t.value, t.level.kind, t.level.dim, t.level.size, t.param) == (
        QuantValue.Q4F,
        "block",
        0,
        32,
        QuantParam.F16,
    )
    assert s == QuantScheme() and s.value is QuantValue.Q8S  # with_* made new schemes
    with pytest.raises(AttributeError):
        s.value = QuantValue.Q8F  # type: ignore[misc]
    assert QuantScheme.from_dict(t.to_dict()) == t
    assert QuantScheme("q8f", QuantLevel.axis(1), "bfloat16").param is QuantParam.BF16


def test_value_types():
    assert [v.range for v in QuantValue] == [(-127, 127), (-128, 127), (-7, 7), (-8, 7)]
    assert [v.storage_dtype.value for v in QuantValue] == ["int8", "int8", "uint8", "uint8"]
    assert [v.symmetric for v in QuantValue] == [True, False, True, False]


@pytest.mark.parametrize(
    "make",
    [
        lambda: QuantScheme("q3s"),
        lambda: QuantScheme(param="float64"),
        lambda: QuantScheme(level="tensor"),  # type: ignore[arg-type]
        lambda: QuantLevel.block(0),
        lambda: QuantLevel.block(4, axis=1.5),  # type: ignore[arg-type]
        lambda: QuantLevel.axis(True),  # type: ignore[arg-type]
        lambda: QuantScheme.from_dict({"value": "q8s"}),
        lambda: QuantScheme.from_dict(
            {"value": "q8s", "level": "diagonal", "axis": None, "size": None, "param": "float32"}
        ),
    ],
)
def test_scheme_errors(make):
    with pytest.raises(QuantizationError):
        make()


def test_quantization_error_is_an_ember_error():
    assert issubclass(QuantizationError, ember.EmberError)


# ---------------------------------------------------------------------------------------------------- checks
def test_level_must_fit_the_shape(dev):
    x = floats(dev, (4, 6))
    with pytest.raises(QuantizationError, match="needs a dim 2"):
        x.quantize_dynamic(QuantScheme(level=QuantLevel.axis(2)))
    with pytest.raises(QuantizationError, match="does not divide"):
        x.quantize_dynamic(QuantScheme(level=QuantLevel.block(4)))
    with pytest.raises(QuantizationError, match="empty"):
        Tensor.zeros((0, 3), dev).quantize_dynamic(QuantScheme())


def test_qparams_are_checked(dev):
    x = floats(dev, (4, 6))
    s = Tensor.from_floats([0.1], dev)
    zp = Tensor.from_data(np.array([0], np.int8), dev, ember.Int, dtype="int8")
    with pytest.raises(QuantizationError, match=r"scales of shape \[4\]"):
        x.quantize(QuantScheme(level=QuantLevel.axis(0)), QParams(s))
    with pytest.raises(QuantizationError, match="symmetric"):
        x.quantize(QuantScheme(), QParams(s, zp))
    with pytest.raises(QuantizationError, match="affine"):
        x.quantize(QuantScheme(QuantValue.Q8F), QParams(s))
    with pytest.raises(QuantizationError, match="positive and finite"):
        x.quantize(QuantScheme(), QParams(Tensor.from_floats([0.0], dev)))
    with pytest.raises(QuantizationError, match="positive and finite"):
        x.quantize(QuantScheme(), QParams(Tensor.from_floats([-0.5], dev)))
    with pytest.raises(QuantizationError, match=r"in \[-8, 7\]"):
        x.quantize(QuantScheme(QuantValue.Q4F), QParams(s, zp + 9))
    with pytest.raises(QuantizationError, match="stores scales as float16"):
        x.quantize(QuantScheme(param=QuantParam.F16), QParams(s))
    with pytest.raises(QuantizationError, match="Float tensor"):
        x.int().quantize(QuantScheme(), QParams(s))
    with pytest.raises(QuantizationError, match="QParams"):
        x.quantize(QuantScheme(), (s, None))  # type: ignore[arg-type]


def test_compute_qparams_edges(dev):
    scheme = QuantScheme()
    with pytest.raises(QuantizationError, match="min > max"):
        compute_qparams(scheme, Tensor.from_floats([1.0], dev), Tensor.from_floats([0.0], dev))
    with pytest.raises(QuantizationError, match="NaN or infinite"):
        compute_qparams(scheme, Tensor.from_floats([float("-inf")], dev), Tensor.from_floats([0.0], dev))
    with pytest.raises(QuantizationError, match="must match"):
        compute_qparams(scheme, Tensor.from_floats([0.0, 1.0], dev), Tensor.from_floats([1.0], dev))
    # float16 scales: a zero range gives float16's smallest normal; a huge range overflows float16
    f16 = QuantScheme(param=QuantParam.F16)
    z = Tensor.from_floats([0.0], dev)
    assert compute_qparams(f16, z, z).scale.to_numpy()[0] == np.finfo(np.float16).tiny
    with pytest.raises(QuantizationError, match="beyond the largest float16"):
        compute_qparams(f16, Tensor.from_floats([-1e8], dev), Tensor.from_floats([1e8], dev))
    with pytest.raises(QuantizationError, match="need a backend that holds it"):
        compute_qparams(QuantScheme(param=QuantParam.BF16), z, z)


def test_compute_range_shapes(dev):
    x = floats(dev, (4, 6, 8))
    for level, shape in [
        (QuantLevel.tensor(), (1,)),
        (QuantLevel.axis(1), (6,)),
        (QuantLevel.axis(-1), (8,)),
        (QuantLevel.block(4, axis=2), (4, 6, 2)),
        (QuantLevel.block(2, axis=0), (2, 6, 8)),
    ]:
        lo, hi = compute_range(QuantScheme(level=level), x)
        assert lo.shape == shape and hi.shape == shape
    lo, hi = compute_range(QuantScheme(level=QuantLevel.block(4, axis=2)), x)
    xs = x.to_numpy().reshape(4, 6, 2, 4)
    assert np.array_equal(lo.to_numpy(), xs.min(-1)) and np.array_equal(hi.to_numpy(), xs.max(-1))


def test_matmul_and_linear_argument_errors(dev):
    a = floats(dev, (3, 4)).quantize_dynamic(QuantScheme())
    b = floats(dev, (5, 2)).quantize_dynamic(QuantScheme())
    with pytest.raises(QuantizationError, match=r"a \[\.\.\., m, k\]"):
        quantized_matmul(a, b)
    with pytest.raises(QuantizationError, match="must be a QuantizedTensor"):
        quantized_matmul(a, floats(dev, (4, 2)))  # type: ignore[arg-type]
    w = floats(dev, (4, 2)).quantize_dynamic(QuantScheme())
    with pytest.raises(QuantizationError, match=r"\[\.\.\., 4\]"):
        quantized_linear(floats(dev, (3, 5)), w)
    with pytest.raises(QuantizationError, match=r"bias must have shape \[2\]"):
        quantized_linear(floats(dev, (3, 4)), w, floats(dev, (3,)))


def _int_reference(a: QuantizedTensor, b: QuantizedTensor) -> np.ndarray:
    """``(qa - za) @ qb`` in int64 numpy: the exact accumulator, computed independently of Ember's kernels."""
    qa = a.int_values().to_numpy().astype(np.int64)
    za = a.qparams.zero_point.to_numpy().astype(np.int64)
    return (qa - za) @ b.int_values().to_numpy().astype(np.int64)


@pytest.mark.parametrize("tracked", [False, True])
def test_matmul_reuses_the_weight_column_sums(dev, tracked):
    d = Autodiff(dev.backend).device() if tracked else dev
    b = floats(d, (6, 5), 1).quantize_dynamic(QuantScheme(level=QuantLevel.axis(-1)))
    for seed in (2, 3):  # the second product reuses the column sums of b; a (and its zero point) changes
        a = floats(d, (4, 6), seed).quantize_dynamic(QuantScheme(QuantValue.Q8F))
        acc = quantized_matmul(a, b, accumulate=True).to_numpy()
        assert np.array_equal(acc, _int_reference(a, b))
        sa, sb = a.qparams.scale.to_numpy(), b.qparams.scale.to_numpy()
        expect = a.dequantize().to_numpy().astype(np.float64) @ b.dequantize().to_numpy().astype(np.float64)
        np.testing.assert_allclose(
            quantized_matmul(a, b).to_numpy(), expect, rtol=1e-5, atol=1e-6 * float(sa[0] * sb.max())
        )

    def fail():
        raise AssertionError("the column sums were recomputed")

    kept = b.derived("colsum", fail)  # kept from the products above
    assert np.array_equal(kept.to_numpy(), b.int_values().to_numpy().astype(np.int64).sum(0, keepdims=True))


def test_derived_values_are_not_kept_while_tracing(dev, monkeypatch):
    b = floats(dev, (6, 5)).quantize_dynamic(QuantScheme())
    monkeypatch.setattr(type(dev.backend), "is_concrete", lambda self, p: False)  # as inside a jax trace
    calls = []
    for _ in range(2):
        b.derived("colsum", lambda: calls.append(1) or b.int_values().cast("int32").sum_dim(-2))
    assert len(calls) == 2


# ---------------------------------------------------------------------------------------------------- protocol
def test_properties_repr_and_pickle(dev):
    x = floats(dev, (3, 5))
    qt = x.quantize_dynamic(QuantScheme(QuantValue.Q4F, QuantLevel.axis(0), QuantParam.F16))
    assert qt.shape == (3, 5) and qt.rank == 2 and qt.num_elements() == 15 and qt.device is dev
    assert qt.values.shape == (8,) and qt.dtype is ember.DType.UINT8
    assert qt.storage_bytes() == 8 + 3 * 2 + 3
    text = repr(qt)
    for part in ("QuantizedTensor", "Q4F", "QuantLevel.axis(0)", "float16", "uint8 [8]", "shape:  [3, 5]"):
        assert part in text
    back = pickle.loads(pickle.dumps(qt))
    assert back.scheme == qt.scheme and back.values.dtype is ember.DType.UINT8
    assert np.array_equal(back.dequantize().to_numpy(), qt.dequantize().to_numpy())


def test_immutable_and_refused_ops(dev):
    x = floats(dev, (2, 2))
    qt = x.quantize_dynamic(QuantScheme())
    with pytest.raises(AttributeError):
        qt.values = x  # type: ignore[misc]
    with pytest.raises(QuantizationError, match=r"this tensor op: a QuantizedTensor .* \.dequantize\(\) first"):
        x + qt  # noqa: B018
    with pytest.raises(QuantizationError, match=r"matmul: .*\.dequantize\(\) first"):
        qt.matmul(x)
    with pytest.raises(QuantizationError):
        float(qt)
    with pytest.raises(AttributeError, match="no attribute 'nonsense'"):
        qt.nonsense  # noqa: B018


def test_parts_are_checked_on_construction(dev):
    qt = floats(dev, (2, 4)).quantize_dynamic(QuantScheme())
    with pytest.raises(QuantizationError, match="stores values as int8"):
        QuantizedTensor(qt.values.cast("int32"), (2, 4), qt.scheme, qt.qparams)
    with pytest.raises(QuantizationError, match=r"have shape \[2, 4\]"):
        QuantizedTensor(qt.values.reshape((8,)), (2, 4), qt.scheme, qt.qparams)
    with pytest.raises(QuantizationError, match=r"shape \[4\]"):
        QuantizedTensor(qt.values.cast("uint8"), (2, 4), QuantScheme(QuantValue.Q4S), qt.qparams)


def test_autodiff_devices_and_module_moves(dev):
    ad = Autodiff(dev.backend).device()
    lin = LinearConfig(4, 3).init(dev)
    q = _quantize_linear(lin, QuantScheme(level=QuantLevel.axis(1)))
    on_ad = q.to_device(ad)
    w = on_ad.weight.val()
    assert isinstance(w, QuantizedTensor) and w.device is ad and w.values.device is ad
    assert on_ad.valid().weight.val().device is dev
    assert q.fork(dev).weight.val().device is dev
    assert q.num_params() == lin.num_params()
    assert "int8" in repr(q)


# ---------------------------------------------------------------------------------------------------- records
class MLP(Module):
    a: Linear
    b: Linear
    stats: RunningState | None = None

    def forward(self, x):
        return self.b(self.a(x))


def _quantize_linear(lin: Linear, scheme: QuantScheme) -> Linear:
    w = lin.weight
    return lin.replace(weight=Param(w.val().quantize_dynamic(scheme), w.id, False))


def _model(dev, d=256, out=64):
    return MLP(a=LinearConfig(d, d).init(dev), b=LinearConfig(d, out).init(dev))


def _quantized(model: MLP, scheme: QuantScheme) -> MLP:
    return model.replace(a=_quantize_linear(model.a, scheme), b=_quantize_linear(model.b, scheme))


SCHEMES = {
    "q8s_axis": QuantScheme(level=QuantLevel.axis(1)),
    "q8f_tensor": QuantScheme(QuantValue.Q8F),
    "q4s_block": QuantScheme(QuantValue.Q4S, QuantLevel.block(32, axis=0), QuantParam.F16),
    "q4f_axis": QuantScheme(QuantValue.Q4F, QuantLevel.axis(1)),
}


@pytest.mark.parametrize("scheme", list(SCHEMES), ids=str)
@pytest.mark.parametrize("recorder", RECORDERS, ids=lambda r: r.__name__)
def test_every_recorder_stores_quantized_tensors_as_they_are(tmp_path, dev, recorder, scheme):
    model = _model(dev, 64, 16)
    q = _quantized(model, SCHEMES[scheme])
    rec = recorder()
    path = q.save_file(tmp_path / "q", rec)
    positional = recorder in (BinFileRecorder, BinGzFileRecorder, SensitiveCompactRecorder)
    item = rec.load(path, q.record_template()) if positional else rec.load(path)
    # a float model of the same structure takes the quantized tensors
    loaded = model.load_record(item)
    for name in ("a", "b"):
        want, got = getattr(q, name).weight.val(), getattr(loaded, name).weight.val()
        assert isinstance(got, QuantizedTensor) and got.scheme == want.scheme
        assert got.values.dtype is want.values.dtype
        assert np.array_equal(got.values.to_numpy(), want.values.to_numpy())
        assert got.qparams.scale.dtype is want.qparams.scale.dtype
        assert np.array_equal(got.qparams.scale.to_numpy(), want.qparams.scale.to_numpy())
        assert getattr(loaded, name).weight.id == getattr(q, name).weight.id
        # the float bias follows the recorder's precision settings as before
        assert getattr(loaded, name).bias.val().kind is ember.Float


@pytest.mark.parametrize(
    ("scheme", "limit"),
    [
        (QuantScheme(level=QuantLevel.axis(1)), 0.27),
        (QuantScheme(QuantValue.Q4S, QuantLevel.axis(1)), 0.15),
        (QuantScheme(QuantValue.Q4F, QuantLevel.block(128, axis=0), QuantParam.F16), 0.15),
    ],
    ids=["int8_per_channel", "int4_per_channel", "int4_block128_f16"],
)
@pytest.mark.parametrize(
    "recorder", [NamedMpkFileRecorder, SafetensorsFileRecorder, BinFileRecorder], ids=lambda r: r.__name__
)
def test_record_size_of_a_linear_dominated_model(tmp_path, dev, scheme, limit, recorder):
    model = _model(dev, 512, 512)
    f = model.save_file(tmp_path / "f", recorder()).stat().st_size
    q = _quantized(model, scheme).save_file(tmp_path / "q", recorder()).stat().st_size
    assert q / f <= limit, f"{q} / {f} = {q / f:.3f} > {limit}"


def test_running_state_holds_a_quantized_tensor(tmp_path, dev):
    model = _model(dev, 8, 4)
    qt = floats(dev, (3, 4)).quantize_dynamic(QuantScheme(QuantValue.Q8F))
    m = model.replace(stats=RunningState(qt))
    path = m.save_file(tmp_path / "s")
    back = m.load_file(path)
    assert isinstance(back.stats.value(), QuantizedTensor)
    assert np.array_equal(back.stats.value().dequantize().to_numpy(), qt.dequantize().to_numpy())


def test_load_mismatches_are_reported(dev):
    model = _model(dev, 8, 4)
    q = _quantized(model, SCHEMES["q8s_axis"])
    # a float record into a quantized module: refused, named
    with pytest.raises(RecordError, match="holds a quantized tensor"):
        q.load_record(model.into_record())
    # a quantized record of another shape
    other = _quantized(_model(dev, 8, 6), SCHEMES["q8s_axis"])
    with pytest.raises(RecordError, match=r"shape \[8, 6\] in the record \(quantized\), \[8, 4\]"):
        model.load_record(other.into_record())


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda n: n.pop("scale"), "has keys"),
        (lambda n: n.update(shape=[8, "x"]), "invalid shape"),
        (lambda n: n.update(values=TensorData(np.zeros((8, 4), np.int64))), "stores values as int8"),
        (lambda n: n.update(values=5), "values must be a tensor"),
        (lambda n: n.update(scheme={"value": "q9"}), "invalid"),
        (lambda n: n.update(scale=TensorData(np.array([-1.0] * 4, np.float32))), "positive and finite"),
    ],
)
def test_malformed_quantized_records_raise_record_errors(dev, edit, message):
    model = _model(dev, 8, 4)
    q = _quantized(model, SCHEMES["q8s_axis"])
    record = q.into_record()
    node = record["b"]["weight"]["param"]["quantized"]
    edit(node)
    with pytest.raises(RecordError, match=message):
        model.load_record(record)


def test_precision_settings_leave_quantized_parts_alone(tmp_path, dev):
    q = _quantized(_model(dev, 16, 8), SCHEMES["q8f_tensor"])
    rec = CompactRecorder()  # half precision: float16 floats, int16 ints
    item = rec.load(q.save_file(tmp_path / "c", rec))
    node = item["a"]["weight"]["param"]["quantized"]
    assert node["values"].dtype is ember.DType.INT8
    assert node["scale"].dtype is ember.DType.FLOAT32
    assert node["zero_point"].dtype is ember.DType.INT8
    assert item["a"]["bias"]["param"].dtype is ember.DType.FLOAT16
