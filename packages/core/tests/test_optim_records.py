"""Optimizer state as a record: save mid-training with a recorder, load into a fresh optimizer, continue —
the parameters are bitwise those of an uninterrupted run (numpy backend)."""

from __future__ import annotations

import numpy as np
import pytest

from ember import RecordError
from ember.optim import (
    AdaGradConfig,
    AdamConfig,
    AdamWConfig,
    AdanConfig,
    GradientClippingConfig,
    LionConfig,
    MomentumConfig,
    MuonConfig,
    RmsPropConfig,
    SgdConfig,
    WeightDecayConfig,
)
from ember.optim.lr_scheduler import (
    CosineAnnealingLrSchedulerConfig,
    LinearLrSchedulerConfig,
    SequentialLrSchedulerConfig,
)
from ember.record import NamedMpkBytesRecorder, NamedMpkFileRecorder, SafetensorsFileRecorder
from test_optim_problem import Lin, ad_device, loss_grads, make_model, params_np, problem, run_ember

CONFIGS = {
    "sgd_momentum": SgdConfig(WeightDecayConfig(0.01), MomentumConfig(momentum=0.9, dampening=0.0, nesterov=True)),
    "adam_amsgrad": AdamConfig(amsgrad=True, weight_decay=WeightDecayConfig(0.01)),
    "adamw": AdamWConfig(weight_decay=0.1, cautious_weight_decay=True),
    "adagrad": AdaGradConfig(lr_decay=0.01),
    "rmsprop_centered": RmsPropConfig(centered=True),
    "adan": AdanConfig(weight_decay=0.02),
    "lion": LionConfig(weight_decay=0.1),
    "muon": MuonConfig(weight_decay=WeightDecayConfig(0.1)),
    "clipped_adam": AdamConfig().with_grad_clipping(GradientClippingConfig.norm(0.5)),
}


def schedule():
    return SequentialLrSchedulerConfig(
        [LinearLrSchedulerConfig(0.001, 0.01, 5), CosineAnnealingLrSchedulerConfig(0.01, 10, min_lr=0.001)], [5]
    ).init()


# the loaded tensors are read-only arrays the numpy backend adopts without a copy: training must go on
@pytest.mark.parametrize("recorder", [NamedMpkFileRecorder, SafetensorsFileRecorder], ids=lambda r: r.__name__)
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_resume_from_a_saved_record_is_bitwise_identical(tmp_path, name, recorder):
    dev = ad_device("numpy")
    p = problem()
    cfg = CONFIGS[name]

    # uninterrupted: 20 steps
    optim, sched = cfg.init(), schedule()
    model = make_model(dev, p)
    straight = []
    for _ in range(20):
        model = optim.step(sched.step(), model, loss_grads(model, dev, p))
        straight.append(params_np(model))

    # 8 steps, save model + optimizer + scheduler, drop everything, load, 12 more steps
    optim, sched = cfg.init(), schedule()
    model = make_model(dev, p)
    for _ in range(8):
        model = optim.step(sched.step(), model, loss_grads(model, dev, p))
    rec = recorder()
    model_path = model.save_file(tmp_path / "model", rec)
    optim_path = rec.record(optim.to_record(), tmp_path / "optim")
    sched_bytes = NamedMpkBytesRecorder().record(sched.to_record())
    del optim, sched

    model = make_model(dev, problem(seed=5)).load_file(model_path, rec)  # other init values, same structure
    assert isinstance(model, Lin)
    optim = cfg.init().load_record(rec.load(optim_path))
    sched = schedule().load_record(NamedMpkBytesRecorder().load(sched_bytes))
    resumed = []
    for _ in range(12):
        model = optim.step(sched.step(), model, loss_grads(model, dev, p))
        resumed.append(params_np(model))

    for i, ((w, b), (rw, rb)) in enumerate(zip(straight[8:], resumed)):
        assert np.array_equal(w, rw) and np.array_equal(b, rb), f"step {i + 9} differs after resuming"


def test_record_layout_and_ids():
    dev = ad_device("numpy")
    p = problem()
    optim = AdamConfig().init()
    model, _ = run_ember(optim, dev, p, steps=3, lr=0.01)
    rec = optim.to_record()
    assert rec["optimizer"] == "adam" and rec["version"] == 1
    assert set(rec["state"]) == {model.weight.id.serialize(), model.bias.id.serialize()}
    st = rec["state"][model.weight.id.serialize()]
    assert st["time"] == 3 and list(st["moment_1"].shape) == list(model.weight.shape)
    assert optim.state(model.weight.id)["time"] == 3


def test_loading_the_record_of_another_optimizer_is_an_error():
    dev = ad_device("numpy")
    optim = AdamConfig().init()
    run_ember(optim, dev, problem(), steps=1, lr=0.01)
    with pytest.raises(RecordError, match="saved by the 'adam' optimizer"):
        SgdConfig().init().load_record(optim.to_record())
    with pytest.raises(RecordError, match="expected a record made by optim.to_record"):
        AdamConfig().init().load_record({"weight": 1})


def test_state_follows_the_parameter_to_another_device_backend():
    # state saved on numpy resumes on torch: tensors are placed on the parameter's device at the next step
    pytest.importorskip("torch")
    src, dst = ad_device("numpy"), ad_device("torch")
    p = problem()
    optim = AdamConfig().init()
    model, _ = run_ember(optim, src, p, steps=4, lr=0.01)
    moved = model.fork(dst)
    resumed = AdamConfig().init().load_record(optim.to_record())
    _, on_torch = run_ember(resumed, dst, p, steps=3, lr=0.01, model=moved)
    _, on_numpy = run_ember(optim, src, p, steps=3, lr=0.01, model=model)
    for (w, b), (tw, tb) in zip(on_numpy, on_torch):
        np.testing.assert_allclose(tw, w, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(tb, b, rtol=1e-5, atol=1e-6)
