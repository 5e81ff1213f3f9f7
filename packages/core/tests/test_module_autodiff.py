"""Modules on an autodiff backend: tracked params, gradients per ParamId, valid(), no_grad(), fork()."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import Tensor
from ember.module import Module, Param, RunningState, ad_enabled

autodiff = pytest.importorskip("ember.autodiff")

INNER = ember.backend("numpy")


@pytest.fixture(scope="module")
def ad_dev():
    return autodiff.Autodiff(INNER).device()


class Affine(Module):
    weight: Param
    bias: Param
    stats: RunningState
    steps: Param


class Dropoutish(Module):
    """Train-only layer: active on an autodiff backend only (as Burn's Dropout)."""

    prob: float = 0.5

    def forward(self, x: Tensor) -> Tensor:
        if not ad_enabled(x):
            return x
        return x * 0.0


def make(dev) -> Affine:
    w = np.array([[1.0, -2.0], [0.5, 3.0], [2.0, 1.0]], np.float32)
    return Affine(
        weight=Param(Tensor.from_data(w, dev)),
        bias=Param(Tensor.from_data(np.array([0.1, -0.1], np.float32), dev)),
        stats=RunningState(Tensor.zeros([2], dev)),
        steps=Param(Tensor.from_data(np.array([3]), dev), require_grad=False),
    )


def test_params_are_tracked_and_gradients_match_hand_computation(ad_dev):
    m = make(ad_dev)
    assert m.weight.val().is_require_grad() and m.bias.val().is_require_grad()
    assert not m.stats.value().is_require_grad()
    x_np = np.array([[1.0, 2.0, 3.0], [-1.0, 0.0, 4.0]], np.float32)
    x = Tensor.from_data(x_np, ad_dev)
    y = x.matmul(m.weight.val()) + m.bias.val()
    grads = (y * y).sum().backward()
    # d/dW sum((xW+b)^2) = 2 x^T (xW+b); d/db = 2 sum_rows (xW+b)
    w = m.weight.val().inner().to_numpy().astype(np.float64)
    b = m.bias.val().inner().to_numpy().astype(np.float64)
    yv = x_np.astype(np.float64) @ w + b
    np.testing.assert_allclose(m.weight.val().grad(grads).to_numpy(), 2 * x_np.T @ yv, rtol=1e-5)
    np.testing.assert_allclose(m.bias.val().grad(grads).to_numpy(), 2 * yv.sum(0), rtol=1e-5)
    # gradients per ParamId, as an optimizer collects them
    by_id = {p.id: p.val().grad(grads) for p in m.params() if p.require_grad}
    assert set(by_id) == {m.weight.id, m.bias.id}


def test_valid_moves_to_inner_backend_and_keeps_ids(ad_dev):
    m = make(ad_dev)
    v = m.valid()
    assert v.devices() == [ad_dev.inner]
    assert not ad_enabled(v.weight.val())
    assert [p.id for p in v.params()] == [p.id for p in m.params()]
    np.testing.assert_array_equal(v.weight.val().to_numpy(), m.weight.val().inner().to_numpy())


def test_train_only_behaviour_follows_the_backend(ad_dev):
    drop = Dropoutish()
    x = Tensor.ones([2, 2], ad_dev)
    assert drop.forward(x).inner().to_numpy().sum() == 0.0  # training: active
    assert drop.valid().forward(x.inner()).to_numpy().sum() == 4.0  # after valid(): identity


def test_no_grad_and_fork(ad_dev):
    m = make(ad_dev)
    frozen = m.no_grad()
    assert not frozen.weight.val().is_require_grad() and not frozen.weight.require_grad
    forked = frozen.fork(ad_dev)
    assert not forked.weight.val().is_require_grad()
    again = m.fork(ad_dev)
    assert again.weight.val().is_require_grad() and again.weight.id == m.weight.id


def test_loaded_params_are_tracked_on_autodiff(ad_dev):
    m = make(ad_dev)
    plain = make(INNER.device()).map(lambda p: p.map(lambda x: x * 2.0) if p.require_grad else p)
    out = m.load_record(plain.into_record())
    assert out.weight.val().is_require_grad()
    np.testing.assert_allclose(out.weight.val().inner().to_numpy(), 2 * m.weight.val().inner().to_numpy())
    g = (out.weight.val() * 1.0).sum().backward()
    np.testing.assert_array_equal(out.weight.val().grad(g).to_numpy(), np.ones((3, 2)))
