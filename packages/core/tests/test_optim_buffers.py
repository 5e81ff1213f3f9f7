"""The buffer rule of the fused optimizer updates (issue 22), on every installed backend.

``optim.step`` never writes the parameters of the module it is given nor the gradients: a module the user keeps
still holds its old values, and the same gradients can be applied again. The optimizer's own state buffers are
updated in place (numpy, torch) or donated (jax): ``Optimizer.state`` and ``to_record`` hand out copies, and a loaded
record is never written.
"""

from __future__ import annotations

import numpy as np
import pytest

from ember.optim import AdamConfig, AdamWConfig, LionConfig, MomentumConfig, RmsPropConfig, SgdConfig
from ember.record import FullPrecisionSettings, NamedMpkBytesRecorder
from test_optim_problem import BACKENDS, ad_device, loss_grads, make_model, params_np, problem

RULES = {
    "adam_amsgrad": AdamConfig(amsgrad=True),
    "adamw": AdamWConfig(weight_decay=0.1),
    "sgd_momentum": SgdConfig(momentum=MomentumConfig(dampening=0.0)),
    "rmsprop_centered": RmsPropConfig(centered=True),
    "lion": LionConfig(weight_decay=0.1),
}


@pytest.fixture(params=BACKENDS + ["jax"], name="ad")
def ad_fixture(request):
    pytest.importorskip({"numpy": "ember_numpy", "torch": "torch", "jax": "jax"}[request.param])
    return ad_device(request.param)


def _grads_np(grads, model) -> list[np.ndarray]:
    return [grads.get(p.id).to_numpy().copy() for p in (model.weight, model.bias)]


@pytest.mark.parametrize("name", sorted(RULES))
def test_a_kept_module_and_the_gradients_are_not_changed_by_later_steps(ad, name):
    p = problem()
    optim = RULES[name].init()
    model = make_model(ad, p)
    kept = []  # every module the loop produced, with the values it had when it was made
    for _ in range(4):
        grads = loss_grads(model, ad, p)
        before = _grads_np(grads, model)
        kept.append((model, params_np(model)))
        model = optim.step(0.05, model, grads)
        for got, want in zip(_grads_np(grads, kept[-1][0]), before):
            np.testing.assert_array_equal(got, want, err_msg=f"{name}: the step wrote a gradient")
    moved = np.abs(params_np(model)[0] - kept[0][1][0]).max()
    assert moved > 1e-3, "the parameters did not move: the check would be vacuous"
    for i, (old, values) in enumerate(kept):
        for got, want in zip(params_np(old), values):
            np.testing.assert_array_equal(got, want, err_msg=f"{name}: the module of step {i} was changed")


@pytest.mark.parametrize("name", sorted(RULES))
def test_records_are_snapshots_and_a_loaded_record_is_not_written(ad, name):
    p = problem()
    optim = RULES[name].init()
    model = make_model(ad, p)
    for _ in range(2):
        model = optim.step(0.05, model, loss_grads(model, ad, p))
    rec = NamedMpkBytesRecorder(FullPrecisionSettings())
    blob = rec.record(optim.to_record())
    record = rec.load(blob)  # read-only arrays a backend may share instead of copying

    def flat(r):
        return {f"{pid}.{k}": np.array(v.to_numpy()) for pid, st in r["state"].items() for k, v in st.items()
                if hasattr(v, "to_numpy")}

    saved = flat(record)
    assert saved, "the record holds state tensors"
    resumed = RULES[name].init().load_record(record)
    twin = model
    for _ in range(3):
        model = optim.step(0.05, model, loss_grads(model, ad, p))
        twin = resumed.step(0.05, twin, loss_grads(twin, ad, p))
    for k, v in flat(record).items():
        np.testing.assert_array_equal(v, saved[k], err_msg=f"{name}: the loaded record's {k} was written")
    for got, want in zip(params_np(twin), params_np(model)):
        np.testing.assert_array_equal(got, want, err_msg=f"{name}: the resumed run differs")


@pytest.mark.parametrize("name", sorted(RULES))
def test_a_state_handed_out_is_not_changed_by_later_steps(ad, name):
    p = problem()
    optim = RULES[name].init()
    model = make_model(ad, p)
    model = optim.step(0.05, model, loss_grads(model, ad, p))
    state = optim.state(model.weight.id)
    held = {k: np.array(v.to_numpy()) for k, v in state.items() if hasattr(v, "to_numpy")}
    assert held, "the rule keeps state tensors: the check would be vacuous"
    for _ in range(2):
        model = optim.step(0.05, model, loss_grads(model, ad, p))
    later = optim.state(model.weight.id)
    assert any(not np.array_equal(np.array(later[k].to_numpy()), v) for k, v in held.items()), "the state moved"
    for k, v in held.items():
        np.testing.assert_array_equal(state[k].to_numpy(), v, err_msg=f"{name}: the handed-out {k} was written")
