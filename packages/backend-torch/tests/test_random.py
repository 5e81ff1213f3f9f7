"""Seeded random generation: one torch.Generator per device and backend instance."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import Bool, Distribution, Int, Tensor

DISTS = [
    Distribution.default(),
    Distribution.uniform(-3.0, 5.0),
    Distribution.normal(2.0, 0.5),
    Distribution.bernoulli(0.3),
]


def _draw(device, dist, kind=None, shape=(64, 32)):
    args = (shape, dist, device) if kind is None else (shape, dist, device, kind)
    return Tensor.random(*args).to_numpy()


@pytest.mark.parametrize("dist", DISTS, ids=lambda d: d.kind)
def test_seed_makes_random_reproducible(dist):
    B = ember.backend("torch")
    dev = B.device()
    B.seed(1234)
    first = [_draw(dev, dist), _draw(dev, dist)]
    B.seed(1234)
    second = [_draw(dev, dist), _draw(dev, dist)]
    np.testing.assert_array_equal(first[0], second[0])
    np.testing.assert_array_equal(first[1], second[1])
    # consecutive draws differ, and another seed gives another stream
    assert not np.array_equal(first[0], first[1])
    B.seed(4321)
    assert not np.array_equal(_draw(dev, dist), first[0])


def test_backend_instances_have_their_own_generators():
    b64 = ember.backend("torch", float_dtype="float64")
    b32 = ember.backend("torch", float_dtype="float32")
    b64.seed(7)
    ref = _draw(b64.device(), Distribution.default())
    b64.seed(7)
    _draw(b32.device(), Distribution.default())  # drawing elsewhere does not advance b64's stream
    np.testing.assert_array_equal(_draw(b64.device(), Distribution.default()), ref)


@pytest.mark.parametrize("fd", ["float32", "float64", "float16", "bfloat16"])
def test_uniform_and_normal_statistics(fd):
    B = ember.backend("torch", float_dtype=fd)
    B.seed(0)
    u = _draw(B.device(), Distribution.uniform(-1.0, 3.0), shape=(200_000,)).astype(np.float64)
    assert u.min() >= -1.0 and u.max() <= 3.0  # [low, high) up to rounding to the dtype
    assert abs(u.mean() - 1.0) < 0.02 and abs(u.var() - 16.0 / 12.0) < 0.02  # var of U(a,b) = (b-a)^2/12
    z = _draw(B.device(), Distribution.normal(-2.0, 3.0), shape=(200_000,)).astype(np.float64)
    assert abs(z.mean() + 2.0) < 0.05 and abs(z.std() - 3.0) < 0.05


def test_int_uniform_draws_integers_in_range():
    B = ember.backend("torch", int_dtype="int32")
    B.seed(3)
    t = Tensor.random((10_000,), Distribution.uniform(-2, 3), B.device(), Int)
    assert t.dtype.value == "int32"
    assert set(np.unique(t.to_numpy()).tolist()) == {-2, -1, 0, 1, 2}


def test_bernoulli_rate_and_bool_kind():
    B = ember.backend("torch")
    B.seed(11)
    x = _draw(B.device(), Distribution.bernoulli(0.3), shape=(100_000,))
    assert set(np.unique(x).tolist()) <= {0.0, 1.0}
    assert abs(x.mean() - 0.3) < 0.01
    b = Tensor.random((1000,), Distribution.bernoulli(0.5), B.device(), Bool)
    assert b.kind is Bool and 0.4 < b.to_numpy().mean() < 0.6
    assert _draw(B.device(), Distribution.bernoulli(0.0)).sum() == 0
    assert _draw(B.device(), Distribution.bernoulli(1.0)).min() == 1.0
