"""``Optimizer.init_states``: the rule's state before the first step (what a compiled step needs to be traced once).

The initial states (Adam/AdamW: zero moments and count 0; AdaGrad: zero sum; RMSProp: zero averages and
momentum; Lion: zero momentum) must give the very values of a first step without state, bit for bit, on every
installed backend; rules that cannot write such a state (SGD's momentum and Adan's gradient difference start from
the first gradient) leave the states empty; existing states and frozen parameters are left alone.
"""

from __future__ import annotations

import numpy as np
import pytest

from ember import Tensor
from ember.module import Param
from ember.optim import (
    AdaGradConfig,
    AdamConfig,
    AdamWConfig,
    AdanConfig,
    LionConfig,
    MomentumConfig,
    RmsPropConfig,
    SgdConfig,
    WeightDecayConfig,
)
from test_optim_problem import BACKENDS, Lin, ad_device, loss_grads, make_model, params_np, problem

WITH_INITIAL_STATE = {
    "adam": AdamConfig(),
    "adam_amsgrad": AdamConfig(amsgrad=True),
    "adamw": AdamWConfig(weight_decay=0.05),
    "adamw_amsgrad_cautious": AdamWConfig(weight_decay=0.05, amsgrad=True, cautious_weight_decay=True),
    "adagrad_decay": AdaGradConfig(lr_decay=0.1, weight_decay=WeightDecayConfig(0.01)),
    "rmsprop": RmsPropConfig(),
    "rmsprop_centered_no_momentum": RmsPropConfig(centered=True, momentum=0.0),
    "lion": LionConfig(weight_decay=0.1),
}


@pytest.fixture(params=BACKENDS + ["jax"], name="ad")
def ad_fixture(request):
    pytest.importorskip({"numpy": "ember_numpy", "torch": "torch", "jax": "jax"}[request.param])
    return ad_device(request.param)


@pytest.mark.parametrize("name", sorted(WITH_INITIAL_STATE))
def test_initial_state_gives_the_stateless_first_steps_bit_for_bit(ad, name):
    p = problem()
    cfg = WITH_INITIAL_STATE[name]
    fresh, primed = cfg.init(), cfg.init()
    a = b = make_model(ad, p)
    assert primed.init_states(b) is primed
    st = primed.state(b.weight.id)
    tensors = [v for v in st.values() if isinstance(v, Tensor)]
    assert st.get("time", 0) == 0 and tensors
    for t in tensors:
        assert t.shape == b.weight.val().shape and t.device is ad.inner
        np.testing.assert_array_equal(t.to_numpy(), 0.0)
    assert len({id(t) for t in tensors}) == len(tensors)  # one array each (no aliases)
    for step, lr in enumerate([0.05, 0.01, 0.02], 1):
        a = fresh.step(lr, a, loss_grads(a, ad, p))
        b = primed.step(lr, b, loss_grads(b, ad, p))
        for x, y in zip(params_np(a), params_np(b)):
            np.testing.assert_array_equal(x, y, err_msg=f"{name}, step {step}")
        for pid in (a.weight.id, a.bias.id):
            sa, sb = fresh.state(pid), primed.state(pid)
            assert set(sa) == set(sb), "the initial state has the layout of the later ones"
            if step == 1:
                assert set(sb) == set(st)
            for k, va in sa.items():
                if isinstance(va, Tensor):
                    np.testing.assert_array_equal(va.to_numpy(), sb[k].to_numpy(), err_msg=f"{name} {k}")
                else:
                    assert va == sb[k] == step, k


def test_rules_without_an_initial_state_leave_the_states_empty():
    ad = ad_device("numpy")
    model = make_model(ad, problem())
    for cfg in (SgdConfig(), SgdConfig(momentum=MomentumConfig()), AdanConfig()):
        optim = cfg.init().init_states(model)
        assert len(optim) == 0, cfg


def test_existing_states_and_frozen_parameters_are_left_alone():
    ad = ad_device("numpy")
    p = problem()
    optim = AdamConfig().init()
    model = make_model(ad, p)
    model = optim.step(0.01, model, loss_grads(model, ad, p))
    state = optim.state(model.weight.id)
    before = {k: np.array(v.to_numpy()) if hasattr(v, "to_numpy") else v for k, v in state.items()}
    frozen = Lin(weight=model.weight, bias=Param(model.bias.val().detach(), model.bias.id, False))
    fresh = AdamConfig().init().init_states(frozen)
    assert fresh.state(frozen.bias.id) is None and fresh.state(frozen.weight.id) is not None
    optim.init_states(model)
    after = optim.state(model.weight.id)
    assert after["time"] == 1 and sorted(after) == sorted(before)
    for k, v in before.items():  # the existing state was left alone
        np.testing.assert_array_equal(np.array(after[k].to_numpy()) if hasattr(after[k], "to_numpy") else after[k], v)


def test_init_states_needs_a_module():
    with pytest.raises(TypeError, match="init_states: expected a Module, got list"):
        AdamConfig().init().init_states([])
