"""Initializers: statistics and bounds against their formulas (Burn's ``Initializer``), fan rules,
config round trips and errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ember
from ember import nn
from ember.config import config

SHAPE = [300, 200]


@pytest.fixture()
def dev() -> object:
    ember.backend("numpy").seed(1)
    return ember.backend("numpy").device()


def _np(t: ember.Tensor) -> np.ndarray:
    return np.asarray(t.to_numpy(), dtype=np.float64)


def test_constant_ones_zeros(dev: object) -> None:
    assert np.all(_np(nn.Constant(2.5).init([3, 4], dev)) == 2.5)
    assert np.all(_np(nn.Ones().init([5], dev)) == 1.0)
    assert np.all(_np(nn.Zeros().init([2, 2], dev)) == 0.0)


def test_uniform_and_normal(dev: object) -> None:
    u = _np(nn.Uniform(-2.0, 3.0).init(SHAPE, dev))
    assert u.min() >= -2.0 and u.max() < 3.0
    assert abs(u.mean() - 0.5) < 0.05 and abs(u.std() - 5 / math.sqrt(12)) < 0.03
    n = _np(nn.Normal(1.0, 0.5).init(SHAPE, dev))
    assert abs(n.mean() - 1.0) < 0.01 and abs(n.std() - 0.5) < 0.01


@pytest.mark.parametrize("fan_out_only", [False, True])
def test_kaiming_uniform_bound_and_std(dev: object, fan_out_only: bool) -> None:
    fan_in, fan_out = 300, 200
    w = _np(nn.KaimingUniform(gain=2.0, fan_out_only=fan_out_only).init_with(SHAPE, fan_in, fan_out, dev))
    fan = fan_out if fan_out_only else fan_in
    bound = 2.0 * math.sqrt(3.0 / fan)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.99 * bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.02 * bound


def test_kaiming_normal_std(dev: object) -> None:
    w = _np(nn.KaimingNormal(gain=math.sqrt(2.0)).init_with(SHAPE, 300, 200, dev))
    assert abs(w.std() - math.sqrt(2.0 / 300)) < 0.02 * math.sqrt(2.0 / 300)
    assert abs(w.mean()) < 0.01 * math.sqrt(2.0 / 300) * 10


def test_xavier_uniform_and_normal(dev: object) -> None:
    bound = 1.5 * math.sqrt(6.0 / 500)
    w = _np(nn.XavierUniform(gain=1.5).init_with(SHAPE, 300, 200, dev))
    assert np.abs(w).max() <= bound and abs(w.std() - bound / math.sqrt(3)) < 0.02 * bound
    std = math.sqrt(2.0 / 500)
    n = _np(nn.XavierNormal().init_with(SHAPE, 300, 200, dev))
    assert abs(n.std() - std) < 0.02 * std


@pytest.mark.parametrize("shape", [[4, 10], [10, 4], [6, 2, 3]])
def test_orthogonal(dev: object, shape: list[int]) -> None:
    w = _np(nn.Orthogonal(gain=2.0).init(shape, dev)).reshape(shape[0], -1)
    small = min(w.shape)
    gram = w @ w.T if w.shape[0] == small else w.T @ w
    np.testing.assert_allclose(gram, 4.0 * np.eye(small), atol=1e-5)


def test_missing_fan_is_an_error(dev: object) -> None:
    with pytest.raises(ValueError, match="KaimingUniform needs fan_in"):
        nn.KaimingUniform(gain=1.0).init([3, 3], dev)
    with pytest.raises(ValueError, match="XavierNormal needs fan_out"):
        nn.XavierNormal().init_with([3, 3], 3, None, dev)
    with pytest.raises(ValueError, match="rank >= 2"):
        nn.Orthogonal().init([5], dev)


def test_init_param_is_trainable_param(dev: object) -> None:
    p = nn.Normal(0.0, 0.02).init_param([4, 4], dev)
    assert isinstance(p, ember.Param) and p.require_grad and p.shape == (4, 4)


def test_initializer_fields_round_trip_json() -> None:
    @config
    class Holder:
        initializer: nn._initializer.AnyInitializer = nn.KaimingUniform(1.0)

    for init in (nn.Constant(3.0), nn.Ones(), nn.Uniform(-1.0, 1.0), nn.KaimingNormal(2.0, True), nn.Orthogonal(0.5)):
        h = Holder(init)
        back = Holder.from_dict(h.to_dict())
        assert back == h and type(back.initializer) is type(init)
    with pytest.raises(ember.ConfigError):
        Holder.from_dict({"initializer": {"kind": "Nope"}})
