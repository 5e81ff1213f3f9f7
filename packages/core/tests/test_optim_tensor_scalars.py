"""Optimizer steps with tensor scalars, as a compiled training step (``ember_jax.jit``) runs them.

Inside a compiled step the learning rate is a Float tensor ``[1]`` and the Python numbers of every optimizer
state (step counters) arrive as tensors ``[1]``, which stay tensors afterwards. Every rule must give the
parameters of the Python-number path (to float32 rounding), keep the counters as tensors, save and load them in
records, and trace under ``jax.jit`` without reading values on the host.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import ember
from ember import Float, Int, ShapeError, Tensor
from ember._errors import DeviceError
from ember.module import Param
from ember.optim import (
    AdaGradConfig,
    AdamConfig,
    AdamWConfig,
    AdanConfig,
    AdjustLrFn,
    GradientClippingConfig,
    LionConfig,
    MuonConfig,
    OptimizerError,
    RmsPropConfig,
    SgdConfig,
    WeightDecayConfig,
)
from ember.optim._scalar import one_minus_pow
from ember.record import NamedMpkBytesRecorder
from test_optim_problem import Lin, ad_device, loss_grads, make_model, params_np, problem
from test_optim_records import CONFIGS

#: CONFIGS (every rule, with decay, AMSGrad, clipping) plus the branches they leave out
ALL = {
    **CONFIGS,
    "sgd": SgdConfig(),
    "adam": AdamConfig(),
    "adamw_amsgrad": AdamWConfig(weight_decay=0.05, amsgrad=True),
    "adagrad_plain": AdaGradConfig(),
    "rmsprop_momentum_decay": RmsPropConfig(momentum=0.5, weight_decay=WeightDecayConfig(0.1)),
    "adan_no_prox": AdanConfig(weight_decay=0.02, no_prox=True),
    "lion_plain": LionConfig(),
    "muon_match_rms": MuonConfig(adjust_lr_fn=AdjustLrFn.MatchRmsAdamW),
}
#: the rules whose state counts steps
COUNTED = {"adam", "adamw", "adagrad", "adan"}
STEPS = 6
LRS = [0.01, 0.02, 0.005, 0.01, 0.03, 0.001]
RTOL, ATOL = 1e-6, 1e-7


def tensorize(node, dev):
    """What a compiled step does to an optimizer state: Python ints/floats become Int/Float tensors [1]."""
    if isinstance(node, dict):
        return {k: tensorize(v, dev) for k, v in node.items()}
    if isinstance(node, bool) or node is None or isinstance(node, Tensor):
        return node
    if isinstance(node, int):
        return Tensor.from_data(np.array([node], np.int64), dev, Int)
    if isinstance(node, float):
        return Tensor.from_data(np.array([node], np.float32), dev, Float)
    return node


def tensorize_states(optim, dev):
    optim._states = {pid: tensorize(st, dev) for pid, st in optim._states.items()}


def lr_tensor(value, dev):
    return Tensor.from_data(np.array([value], np.float32), dev)


@pytest.fixture(params=["numpy", "jax"], name="ad")
def ad_fixture(request):
    """An autodiff device over numpy and over jax (skipped when jax is not installed)."""
    if request.param == "jax":
        pytest.importorskip("jax")
    return ad_device(request.param)


# ---------------------------------------------------------------------- the Python-number path is unchanged
def test_python_numbers_keep_python_arithmetic():
    # the eager path must compute what it computed before tensors were accepted: Python floats, same formula
    assert one_minus_pow(0.999, 3) == 1.0 - 0.999**3
    from ember.optim._adam import _bias_scalars

    factor, eps = _bias_scalars(0.9, 0.999, 1e-5, 7)
    bc2 = math.sqrt(1.0 - 0.999**7)
    assert factor == bc2 / (1.0 - 0.9**7) and eps == 1e-5 * bc2
    assert isinstance(factor, float) and isinstance(eps, float)


def test_one_minus_pow_of_a_tensor_count_is_accurate(ad):
    # 1 - beta^t loses digits in float32 when beta^t is close to 1 (beta_2 = 0.999, t = 1): the tensor form
    # must keep float32's relative accuracy against the float64 value
    dev = ad.inner
    for beta in (0.9, 0.92, 0.98, 0.99, 0.999, 0.9999):
        for t in (1, 2, 3, 10, 100, 1000, 100000):
            got = one_minus_pow(beta, Tensor.from_data(np.array([t], np.int64), dev, Int))
            assert got.kind is Float and got.shape == (1,)
            want = 1.0 - beta**t
            np.testing.assert_allclose(got.to_numpy(), [want], rtol=1e-6, err_msg=f"beta {beta}, t {t}")


# ---------------------------------------------------------------------- tensor lr and counters, every rule
@pytest.mark.parametrize("name", sorted(ALL))
def test_tensor_lr_and_counters_match_the_python_path(ad, name):
    p = problem()
    cfg = ALL[name]
    ref_optim, optim = cfg.init(), cfg.init()
    ref = model = make_model(ad, p)
    for i, lr in enumerate(LRS):
        ref = ref_optim.step(lr, ref, loss_grads(ref, ad, p))
        tensorize_states(optim, ad.inner)  # as the compiled step receives them
        # the lr on the autodiff device (taken as its inner tensor) and on the inner device
        lr_t = lr_tensor(lr, ad if i % 2 else ad.inner)
        model = optim.step(lr_t, model, loss_grads(model, ad, p))
        for got, want, what in zip(params_np(model), params_np(ref), ("weight", "bias")):
            np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL, err_msg=f"{name} {what}, step {i + 1}")
    base = name.split("_")[0]
    if base in COUNTED or name == "clipped_adam" or name.startswith("muon"):
        st = optim.state(model.bias.id)  # Muon's bias goes to its AdamW fallback
        assert isinstance(st["time"], Tensor) and st["time"].kind is Int and st["time"].shape == (1,)
        assert st["time"].to_numpy().tolist() == [STEPS]
        assert ref_optim.state(ref.bias.id)["time"] == STEPS  # the Python path keeps Python ints


def test_counter_stays_a_tensor_in_later_eager_steps(ad):
    p = problem()
    optim, ref_optim = AdamConfig().init(), AdamConfig().init()
    model = ref = make_model(ad, p)
    for i in range(5):
        if i == 1:
            tensorize_states(optim, ad.inner)  # one compiled step ...
        model = optim.step(0.01, model, loss_grads(model, ad, p))  # ... then eager steps with a float lr
        ref = ref_optim.step(0.01, ref, loss_grads(ref, ad, p))
    time = optim.state(model.weight.id)["time"]
    assert isinstance(time, Tensor) and time.kind is Int and time.to_numpy().tolist() == [5]
    for got, want in zip(params_np(model), params_np(ref)):
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)


def test_a_counter_shared_by_parameters_is_incremented_once_per_step(ad):
    # a compiled step shares one counter tensor between the parameters (ember_jax normalizes equal numbers to one
    # tensor): one step must increment it once and leave the states sharing the new one (one [1] array, not one
    # kernel and one output per parameter), with the values of the Python path
    p = problem()
    optim, ref_optim = AdamConfig().init(), AdamConfig().init()
    model = ref = make_model(ad, p)
    for _ in range(2):
        model = optim.step(0.01, model, loss_grads(model, ad, p))
        ref = ref_optim.step(0.01, ref, loss_grads(ref, ad, p))
    shared_t = Tensor.from_data(np.array([2], np.int64), ad.inner, Int)
    for st in optim._states.values():
        st["time"] = shared_t
    for _ in range(3):
        model = optim.step(lr_tensor(0.01, ad.inner), model, loss_grads(model, ad, p))
        ref = ref_optim.step(0.01, ref, loss_grads(ref, ad, p))
    w, b = optim._states[model.weight.id]["time"], optim._states[model.bias.id]["time"]  # not state(): it copies
    assert w is b and w.to_numpy().tolist() == [5]
    for got, want in zip(params_np(model), params_np(ref)):
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)


def test_shared_computes_once_per_scope_and_counter():
    from ember.optim._scalar import increment, shared, step_scope

    dev = ember.backend("numpy").device()
    a = Tensor.from_data(np.array([3], np.int64), dev, Int)
    other = Tensor.from_data(np.array([3], np.int64), dev, Int)
    calls = []

    def plus_one(t):
        calls.append(t)
        return t.add(1)

    assert shared("x", a, plus_one) is not shared("x", a, plus_one)  # no scope: computed at each call
    calls.clear()
    with step_scope():
        first = shared("x", a, plus_one)
        assert shared("x", a, plus_one) is first and len(calls) == 1
        assert shared("y", a, plus_one) is not first  # another tag
        assert shared("x", other, plus_one) is not first  # another counter array, even with an equal value
        assert increment(a) is increment(a) and increment(a).to_numpy().tolist() == [4]
        with step_scope():  # a nested step (an optimizer inside another's step) has its own memo
            assert shared("x", a, plus_one) is not first
        assert shared("x", a, plus_one) is first
    assert increment(a) is not increment(a)
    assert increment(3) == 4 and isinstance(increment(3), int)


@pytest.mark.parametrize("clip", [None, GradientClippingConfig.norm(100.0)], ids=["plain", "norm_clipped"])
def test_rank_0_parameter_keeps_its_rank_with_a_tensor_lr(clip):
    class Scalar(ember.module.Module):
        w: Param

    ad = ad_device("numpy")
    model = Scalar(w=Param(Tensor.from_data(np.float32(2.0), ad)))
    optim = AdamWConfig(weight_decay=0.1, grad_clipping=clip).init()
    for _ in range(2):
        loss = model.w.val().square().sum()
        grads = ember.optim.GradientsParams.from_grads(loss.backward(), model)
        tensorize_states(optim, ad.inner)
        model = optim.step(lr_tensor(0.1, ad), model, grads)
    assert model.w.val().shape == ()
    assert optim.state(model.w.id)["moment_1"].shape == ()  # the norm clipping keeps rank 0 too
    # two AdamW steps on w^2 from 2.0, in float64 (Loshchilov & Hutter's update, AdamWConfig's defaults)
    w, m, v = 2.0, 0.0, 0.0
    for t in (1, 2):
        g = 2 * w
        m, v = 0.9 * m + 0.1 * g, 0.999 * v + 0.001 * g * g
        w = w * (1 - 0.1 * 0.1) - 0.1 * (m / (1 - 0.9**t)) / (math.sqrt(v / (1 - 0.999**t)) + 1e-5)
    np.testing.assert_allclose(model.w.val().to_numpy(), w, rtol=1e-6)


# ---------------------------------------------------------------------- lr validation
def test_tensor_lr_must_be_a_float_tensor_of_shape_1():
    ad = ad_device("numpy")
    p = problem()
    model = make_model(ad, p)
    grads = loss_grads(model, ad, p)
    optim = AdamConfig().init()
    with pytest.raises(TypeError, match="Float tensor of shape \\[1\\].*Int"):
        optim.step(Tensor.from_data([1], ad.inner), model, grads)
    with pytest.raises(ShapeError, match="shape \\[1\\], got \\[2\\]"):
        optim.step(Tensor.from_data([0.1, 0.2], ad.inner), model, grads)
    with pytest.raises(ShapeError, match="got \\[1, 1\\]"):
        optim.step(Tensor.from_data([[0.1]], ad.inner), model, grads)
    with pytest.raises(TypeError, match="float or a Float tensor"):
        optim.step([0.1], model, grads)
    assert len(optim) == 0  # nothing was updated


def test_tensor_lr_on_another_device_is_an_error():
    pytest.importorskip("torch")
    ad = ad_device("numpy")
    p = problem()
    model = make_model(ad, p)
    with pytest.raises(DeviceError, match="learning rate tensor lives on"):
        AdamConfig().init().step(lr_tensor(0.1, ember.backend("torch").device()), model, loss_grads(model, ad, p))


# ---------------------------------------------------------------------- records
def test_record_round_trips_tensor_counters():
    ad = ad_device("numpy")
    p = problem()
    optim = AdanConfig(weight_decay=0.02).init()
    model = make_model(ad, p)
    for _ in range(3):
        tensorize_states(optim, ad.inner)
        model = optim.step(lr_tensor(0.01, ad), model, loss_grads(model, ad, p))
    rec = optim.to_record()
    saved = rec["state"][model.weight.id.serialize()]["time"]
    assert isinstance(saved, ember.TensorData) and saved.dtype.is_int and saved.to_numpy().tolist() == [3]
    loaded = AdanConfig(weight_decay=0.02).init().load_record(NamedMpkBytesRecorder().load(
        NamedMpkBytesRecorder().record(rec)))
    go_on, resumed = model, model
    for _ in range(3):
        go_on = optim.step(lr_tensor(0.01, ad), go_on, loss_grads(go_on, ad, p))
        resumed = loaded.step(lr_tensor(0.01, ad), resumed, loss_grads(resumed, ad, p))
        for a, b in zip(params_np(go_on), params_np(resumed)):
            assert np.array_equal(a, b)
    time = loaded.state(model.weight.id)["time"]
    assert isinstance(time, Tensor) and time.kind is Int and time.to_numpy().tolist() == [6]


def test_record_with_python_counters_still_loads():
    ad = ad_device("numpy")
    p = problem()
    optim = AdamConfig().init()
    model = make_model(ad, p)
    for _ in range(2):
        model = optim.step(0.01, model, loss_grads(model, ad, p))
    loaded = AdamConfig().init().load_record(NamedMpkBytesRecorder().load(
        NamedMpkBytesRecorder().record(optim.to_record())))
    loaded.step(0.01, model, loss_grads(model, ad, p))
    assert loaded.state(model.weight.id)["time"] == 3


# ---------------------------------------------------------------------- nan_check
def test_nan_check_inside_a_compiled_step_says_what_to_do(monkeypatch):
    ad = ad_device("numpy")
    p = problem()
    model = make_model(ad, p)
    grads = loss_grads(model, ad, p)
    optim = AdamConfig(nan_check=True).init()
    optim.step(0.01, model, grads)  # concrete values: checked, no NaN
    # inside a compiled step the backend reports traced (non-concrete) values
    monkeypatch.setattr(type(ad.inner.backend), "is_concrete", lambda self, p: False)
    with pytest.raises(OptimizerError, match="nan_check cannot run inside a compiled step.*nan_check=False"):
        optim.step(0.01, model, grads)


def test_nan_check_still_finds_nan_on_concrete_data():
    ad = ad_device("numpy")
    p = problem()
    model = make_model(ad, p)
    grads = loss_grads(model, ad, p)
    bad = grads.get(model.bias.id).mul_scalar(float("nan"))
    grads.register(model.bias.id, bad)
    with pytest.raises(OptimizerError, match="contains NaN"):
        AdamConfig(nan_check=True).init().step(0.01, model, grads)


# ---------------------------------------------------------------------- tracing under jax.jit
def _traced_step(cfg, ad, model: Lin, grads, optim, lr: float):
    """``optim.step`` inside ``jax.jit``: every tensor (params, grads, state, lr) enters as a jax tracer."""
    import jax

    dev = ad.inner
    ids = [model.weight.id, model.bias.id]
    kinds = {pid: {k: v.kind for k, v in (optim.state(pid) or {}).items()} for pid in ids}

    def fn(w, b, gw, gb, states, lr_p):
        def t(x, kind=Float):
            return Tensor.from_primitive(x, dev, kind)

        m = Lin(weight=model.weight.with_val(Tensor.from_inner(t(w), ad)),
                bias=model.bias.with_val(Tensor.from_inner(t(b), ad)))
        inner = cfg.init()
        inner._states = {pid: {k: t(v, kinds[pid][k]) for k, v in st.items()} for pid, st in zip(ids, states) if st}
        assert not dev.backend.is_concrete(w)  # traced: a host read would fail
        new = inner.step(t(lr_p), m, ember.optim.GradientsParams({ids[0]: t(gw), ids[1]: t(gb)}))
        out_states = [{k: v.primitive for k, v in (inner.state(pid) or {}).items()} for pid in ids]
        return new.weight.val().inner().primitive, new.bias.val().inner().primitive, out_states

    states = [{k: v.primitive for k, v in (optim.state(pid) or {}).items()} for pid in ids]
    w, b, out_states = jax.jit(fn)(
        model.weight.val().inner().primitive, model.bias.val().inner().primitive,
        grads.get(ids[0]).primitive, grads.get(ids[1]).primitive, states, lr_tensor(lr, dev).primitive,
    )
    return np.asarray(w), np.asarray(b), out_states


@pytest.mark.parametrize("name", sorted(ALL))
def test_every_rule_traces_under_jax_jit(name):
    pytest.importorskip("jax")
    ad = ad_device("jax")
    p = problem()
    cfg = ALL[name]
    eager = cfg.init()
    model = make_model(ad, p)
    model = eager.step(0.01, model, loss_grads(model, ad, p))  # a first step makes the states
    tensorize_states(eager, ad.inner)
    grads = loss_grads(model, ad, p)
    w, b, states = _traced_step(cfg, ad, model, grads, eager, 0.02)
    ref = eager.step(lr_tensor(0.02, ad.inner), model, grads)
    np.testing.assert_allclose(w, ref.weight.val().to_numpy(), rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(b, ref.bias.val().to_numpy(), rtol=RTOL, atol=ATOL)
    if "time" in (eager.state(model.weight.id) or {}):
        assert np.asarray(states[0]["time"]).tolist() == [2]


def test_nan_check_under_jax_jit_says_what_to_do():
    pytest.importorskip("jax")
    ad = ad_device("jax")
    p = problem()
    cfg = AdamConfig(nan_check=True)
    eager = cfg.init()
    model = make_model(ad, p)
    model = eager.step(0.01, model, loss_grads(model, ad, p))  # eager: checked, fine
    tensorize_states(eager, ad.inner)
    with pytest.raises(OptimizerError, match="nan_check cannot run inside a compiled step"):
        _traced_step(cfg, ad, model, loss_grads(model, ad, p), eager, 0.01)
