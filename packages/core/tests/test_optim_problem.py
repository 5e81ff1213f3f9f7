"""The small regression problem shared by the optimizer tests, and the GradientsParams / accumulator tests.

A ``Lin`` module (weight ``[d_in, d_out]`` + bias ``[d_out]``) fits ``y = x W* + b*`` with the mean squared
error. Other ``test_optim_*`` files import the helpers from here.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import Tensor
from ember.autodiff import Autodiff
from ember.module import Module, Param
from ember.optim import GradientsAccumulator, GradientsParams, OptimizerError

D_IN, D_OUT, N = 4, 3, 8
BACKENDS = ["numpy", "torch"]


class Lin(Module):
    weight: Param
    bias: Param

    def forward(self, x: Tensor) -> Tensor:
        return x.matmul(self.weight.val()).add(self.bias.val())


def problem(seed: int = 0) -> dict[str, np.ndarray]:
    """Inputs ``x [N, D_IN]``, targets ``y [N, D_OUT]`` and the initial ``w0 [D_IN, D_OUT]``, ``b0 [D_OUT]``."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(N, D_IN)).astype(np.float32)
    w_true = rng.normal(size=(D_IN, D_OUT))
    y = (x @ w_true + rng.normal(size=D_OUT) + 0.1 * rng.normal(size=(N, D_OUT))).astype(np.float32)
    return {
        "x": x,
        "y": y,
        "w0": (0.5 * rng.normal(size=(D_IN, D_OUT))).astype(np.float32),
        "b0": (0.5 * rng.normal(size=D_OUT)).astype(np.float32),
    }


def ad_device(name: str):
    """The autodiff device over backend ``name`` (skips when the backend does not load)."""
    try:
        inner = ember.backend(name)
    except Exception as exc:  # noqa: BLE001 - any load failure means "not installed here"
        pytest.skip(f"backend {name!r} unavailable: {exc}")
    return Autodiff(inner).device()


def make_model(dev, p: dict[str, np.ndarray]) -> Lin:
    return Lin(weight=Param(Tensor.from_data(p["w0"], dev)), bias=Param(Tensor.from_data(p["b0"], dev)))


def loss_grads(model: Lin, dev, p: dict[str, np.ndarray]) -> GradientsParams:
    x = Tensor.from_data(p["x"], dev)
    y = Tensor.from_data(p["y"], dev)
    loss = model.forward(x).sub(y).square().mean()
    return GradientsParams.from_grads(loss.backward(), model)


def params_np(model: Lin) -> tuple[np.ndarray, np.ndarray]:
    return model.weight.val().to_numpy().copy(), model.bias.val().to_numpy().copy()


def run_ember(optim, dev, p, steps: int = 20, lr=0.05, model: Lin | None = None):
    """``(model, [(W, b) after each step])``; ``lr`` is a float or a callable of the step index."""
    model = make_model(dev, p) if model is None else model
    out = []
    for i in range(steps):
        grads = loss_grads(model, dev, p)
        model = optim.step(lr(i) if callable(lr) else lr, model, grads)
        out.append(params_np(model))
    return model, out


def np_grads(w: np.ndarray, b: np.ndarray, p: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The exact MSE gradients in float64: ``dW = 2/(N D_OUT) x^T r``, ``db = 2/(N D_OUT) sum_rows r``."""
    x = p["x"].astype(np.float64)
    r = x @ w + b - p["y"].astype(np.float64)
    scale = 2.0 / r.size
    return scale * x.T @ r, scale * r.sum(0)


@pytest.fixture(params=BACKENDS, name="dev")
def dev_fixture(request):
    """An autodiff device over each installed backend (numpy, torch)."""
    return ad_device(request.param)


# ---------------------------------------------------------------------- GradientsParams / accumulator
def test_from_grads_holds_the_exact_gradients_by_param_id(dev):
    p = problem()
    model = make_model(dev, p)
    grads = loss_grads(model, dev, p)
    assert len(grads) == 2 and not grads.is_empty()
    assert set(grads) == {model.weight.id, model.bias.id}
    dw, db = np_grads(p["w0"].astype(np.float64), p["b0"].astype(np.float64), p)
    gw = grads.get(model.weight.id)
    assert gw.device is dev.inner  # gradients live on the inner backend
    np.testing.assert_allclose(gw.to_numpy(), dw, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(grads.remove(model.bias.id).to_numpy(), db, rtol=1e-5, atol=1e-6)
    assert len(grads) == 1 and grads.get(model.bias.id) is None


def test_from_module_removes_and_splits_between_sub_modules(dev):
    class Two(Module):
        a: Lin
        b: Lin

    p = problem()
    m = Two(a=make_model(dev, p), b=make_model(dev, p))
    x = Tensor.from_data(p["x"], dev)
    raw = m.a.forward(x).add(m.b.forward(x)).sum().backward()
    n = len(raw)
    ga = GradientsParams.from_module(raw, m.a)
    assert len(ga) == 2 and len(raw) == n - 2
    gb = GradientsParams.from_params(raw, m.b, [m.b.weight.id])
    assert gb.ids() == [m.b.weight.id]
    # d/dW sum(xW + b) = x^T 1
    np.testing.assert_allclose(gb.get(m.b.weight.id).to_numpy(), p["x"].sum(0)[:, None].repeat(D_OUT, 1), rtol=1e-6)


def test_accumulator_sums_the_gradients_of_several_passes(dev):
    p = problem()
    q = problem(seed=1)
    q["w0"], q["b0"] = p["w0"], p["b0"]
    model = make_model(dev, p)
    acc = GradientsAccumulator()
    g1 = loss_grads(model, dev, p)
    acc.accumulate(model, g1)
    assert g1.is_empty()  # consumed, as Burn
    acc.accumulate(model, loss_grads(model, dev, q))
    summed = acc.grads()
    assert len(acc) == 0 and len(summed) == 2
    w, b = p["w0"].astype(np.float64), p["b0"].astype(np.float64)
    dw = np_grads(w, b, p)[0] + np_grads(w, b, q)[0]
    np.testing.assert_allclose(summed.get(model.weight.id).to_numpy(), dw, rtol=1e-5, atol=1e-6)


def test_from_grads_of_another_model_is_an_error(dev):
    p = problem()
    a, b = make_model(dev, p), make_model(dev, p)
    x = Tensor.from_data(p["x"], dev)
    raw = a.forward(x).sum().backward()
    with pytest.raises(OptimizerError, match="none of the 2 gradients belongs"):
        GradientsParams.from_grads(raw, b)


def test_from_grads_needs_an_autodiff_module():
    p = problem()
    plain = make_model(ember.backend("numpy").device(), p)
    ad = ad_device("numpy")
    raw = make_model(ad, p).forward(Tensor.from_data(p["x"], ad)).sum().backward()
    with pytest.raises(OptimizerError, match="not an autodiff backend"):
        GradientsParams.from_grads(raw, plain)
