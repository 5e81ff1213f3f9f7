"""Untouched parameters (frozen, without gradient, Int, running states) and the optimizer's errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ember import ConfigError, ShapeError, Tensor
from ember.module import Module, Param, RunningState
from ember.optim import (
    AdamConfig,
    AdamWConfig,
    GradientClippingConfig,
    GradientsParams,
    MuonConfig,
    OptimizerError,
    SgdConfig,
    WeightDecayConfig,
)
from test_optim_problem import (  # noqa: F401 - dev_fixture is the `dev` fixture
    Lin,
    dev_fixture,
    loss_grads,
    make_model,
    params_np,
    problem,
)


class Mixed(Module):
    lin: Lin
    frozen: Param
    unused: Param
    counter: Param
    stats: RunningState
    scale: float = 2.0

    def loss(self, x: Tensor, y: Tensor) -> Tensor:
        out = self.lin.forward(x).mul(self.frozen.val())
        return out.sub(y).square().mean()


def mixed(dev, p) -> Mixed:
    return Mixed(
        lin=make_model(dev, p),
        frozen=Param(Tensor.from_data(np.full(3, 1.5, np.float32), dev), require_grad=False),
        unused=Param(Tensor.from_data(np.arange(3, dtype=np.float32), dev)),
        counter=Param(Tensor.from_data(np.array([7]), dev), require_grad=False),
        stats=RunningState(Tensor.from_data(np.ones(2, np.float32), dev)),
    )


def step_mixed(optim, m: Mixed, dev, p) -> tuple[Mixed, GradientsParams]:
    loss = m.loss(Tensor.from_data(p["x"], dev), Tensor.from_data(p["y"], dev))
    grads = GradientsParams.from_grads(loss.backward(), m)
    return optim.step(0.01, m, grads), grads


@pytest.mark.parametrize(
    "cfg", [AdamWConfig(weight_decay=0.5), SgdConfig(WeightDecayConfig(0.5))], ids=["adamw", "sgd"]
)
def test_frozen_gradless_int_params_and_states_are_untouched(dev, cfg):
    p = problem()
    m = mixed(dev, p)
    optim = cfg.init()
    for _ in range(3):
        new, grads = step_mixed(optim, m, dev, p)
        assert set(grads) == {m.lin.weight.id, m.lin.bias.id}
        for name in ("frozen", "unused", "counter"):
            before, after = getattr(m, name), getattr(new, name)
            assert after is before, f"{name} must be returned as is (weight decay must not touch it)"
        assert new.stats is m.stats and new.scale == 2.0
        assert not np.array_equal(params_np(new.lin)[0], params_np(m.lin)[0])
        m = new
    stateful = isinstance(cfg, AdamWConfig)
    assert len(optim) == (2 if stateful else 0)  # plain SGD keeps no state
    for name in ("frozen", "unused", "counter"):
        assert optim.state(getattr(m, name).id) is None
    assert (optim.state(m.lin.weight.id) is not None) == stateful


def test_updated_params_keep_ids_require_grad_and_device(dev):
    p = problem()
    model = make_model(dev, p)
    new = AdamConfig().init().step(0.01, model, loss_grads(model, dev, p))
    for old, nw in ((model.weight, new.weight), (model.bias, new.bias)):
        assert nw.id == old.id and nw.require_grad and nw.device is dev
        assert nw.val().is_require_grad()
    # the new model trains again (its params are fresh autodiff leaves)
    assert len(loss_grads(new, dev, p)) == 2


def test_grads_of_another_model_are_an_error(dev):
    p = problem()
    a, b = make_model(dev, p), make_model(dev, p)
    optim = AdamConfig().init()
    with pytest.raises(OptimizerError, match="none of the 2 gradients matches"):
        optim.step(0.01, b, loss_grads(a, dev, p))
    assert len(optim) == 0


@pytest.mark.parametrize("lr", [-1e-3, math.nan, math.inf])
def test_negative_or_nan_lr_is_an_error(dev, lr):
    p = problem()
    model = make_model(dev, p)
    with pytest.raises(OptimizerError, match="finite learning rate >= 0"):
        SgdConfig().init().step(lr, model, loss_grads(model, dev, p))


def test_nan_gradients_with_nan_check(dev):
    p = problem()
    model = make_model(dev, p)
    optim = AdamConfig(nan_check=True).init()
    optim.step(0.01, model, loss_grads(model, dev, p))
    state_before = _values(optim.state(model.weight.id))
    grads = loss_grads(model, dev, p)
    bad = grads.get(model.bias.id).to_numpy().copy()
    bad[1] = np.nan
    grads.register(model.bias.id, Tensor.from_data(bad, dev.inner))
    with pytest.raises(OptimizerError, match=r"gradient of 'bias' .* contains NaN"):
        optim.step(0.01, model, grads)
    assert _values(optim.state(model.weight.id)) == state_before  # nothing committed
    # without the check, NaN propagates silently (PyTorch's behaviour)
    out = AdamConfig().init().step(0.01, model, grads)
    assert np.isnan(out.bias.val().to_numpy()[1])
    # with_nan_check on the optimizer object
    with pytest.raises(OptimizerError):
        AdamConfig().init().with_nan_check(True).step(0.01, model, grads)


def test_gradient_with_a_wrong_shape_is_an_error(dev):
    p = problem()
    model = make_model(dev, p)
    grads = GradientsParams({model.bias.id: Tensor.zeros([5], dev.inner)})
    with pytest.raises(ShapeError, match="has shape \\[5\\], the parameter \\[3\\]"):
        SgdConfig().init().step(0.1, model, grads)


def test_muon_without_fallback_rejects_vectors(dev):
    p = problem()
    model = make_model(dev, p)
    with pytest.raises(ConfigError, match="Muon orthogonalizes 2-D"):
        MuonConfig(fallback=None).init().step(0.01, model, loss_grads(model, dev, p))


def test_config_errors():
    with pytest.raises(ConfigError, match="threshold"):
        GradientClippingConfig.norm(0.0)
    with pytest.raises(ConfigError, match="penalty"):
        WeightDecayConfig(-1.0)
    with pytest.raises(TypeError, match="GradientsParams"):
        SgdConfig().init().step(0.1, Lin(weight=None, bias=None), {})  # type: ignore[arg-type]


def test_configs_round_trip_through_json(tmp_path):
    cfg = MuonConfig(weight_decay=WeightDecayConfig(0.1)).with_grad_clipping(GradientClippingConfig.value(1.0))
    assert MuonConfig.load(cfg.save(tmp_path / "muon.json")) == cfg
    sgd = SgdConfig().with_gradient_clipping(GradientClippingConfig.norm(2.0))
    assert SgdConfig.from_dict(sgd.to_dict()) == sgd


def test_step_on_a_plain_backend_with_registered_gradients():
    # no autodiff: gradients registered by hand (e.g. computed by a jax.grad of a pure function)
    import ember

    dev = ember.backend("numpy").device()
    p = problem()
    model = make_model(dev, p)
    gw = np.full(p["w0"].shape, 0.5, np.float32)
    grads = GradientsParams()
    grads.register(model.weight.id, Tensor.from_data(gw, dev))
    new = SgdConfig().init().step(0.1, model, grads)
    np.testing.assert_array_equal(new.weight.val().to_numpy(), p["w0"] - np.float32(0.1) * gw)
    assert new.bias is model.bias and new.weight.id == model.weight.id


def _values(state):
    """A state's values as plain Python (tensors as nested lists), for equality checks."""
    return {k: v.to_numpy().tolist() if hasattr(v, "to_numpy") else v for k, v in state.items()}
