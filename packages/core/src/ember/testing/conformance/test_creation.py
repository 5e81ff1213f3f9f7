"""Creation ops against numpy references."""

from __future__ import annotations

import numpy as np
import pytest

from ember import Bool, Distribution, Float, Int, Tensor
from ember.testing import assert_close, assert_equal


def test_from_data_infers_kind(device):
    assert Tensor.from_data([[1.0, 2.0]], device).kind is Float
    assert Tensor.from_data([0, 1, 2], device).kind is Int
    assert Tensor.from_data([True, False], device).kind is Bool


def test_from_data_uses_backend_dtype(float_device):
    t = Tensor.from_data([[1.5, -2.25], [3.0, 4.0]], float_device)
    assert t.dtype is float_device.backend.float_dtype
    assert_close(t, np.array([[1.5, -2.25], [3.0, 4.0]]))


def test_scalar_is_rank_zero(device):
    t = Tensor.from_data(3.5, device)
    assert t.shape == () and t.rank == 0
    assert t.into_scalar() == 3.5


def test_empty_shapes(device):
    t = Tensor.zeros([0, 3], device)
    assert t.shape == (0, 3) and t.num_elements() == 0


def test_full_zeros_ones(float_device):
    assert_close(Tensor.full([2, 3], 7.0, float_device), np.full((2, 3), 7.0))
    assert_close(Tensor.zeros([2], float_device), np.zeros(2))
    assert_close(Tensor.ones([1, 2], float_device), np.ones((1, 2)))


def test_arange(int_device):
    assert_equal(Tensor.arange(0, 5, int_device), np.arange(5), kind=Int)
    assert_equal(Tensor.arange_step(10, 0, -3, int_device), np.arange(10, 0, -3))


def test_random_is_seeded(B, device):
    B.seed(42)
    a = Tensor.random([3, 4], Distribution.uniform(-1.0, 1.0), device).to_numpy()
    B.seed(42)
    b = Tensor.random([3, 4], Distribution.uniform(-1.0, 1.0), device).to_numpy()
    np.testing.assert_array_equal(a, b)
    assert (a >= -1).all() and (a < 1).all()


def test_rng_state_restores_the_random_stream(B, device):
    """``rng_state()`` is plain JSON data; after ``set_rng_state`` the random ops draw what they drew after the
    state was taken (a checkpoint's resume relies on it), whatever ran or was seeded in between. A backend that
    cannot save its state returns ``None``."""
    import json

    B.seed(7)
    Tensor.random([5], Distribution.uniform(0.0, 1.0), device)
    state = B.rng_state()
    if state is None:
        pytest.skip(f"the {B.name} backend does not save its random state")
    state = json.loads(json.dumps(state))
    a = Tensor.random([3, 4], Distribution.uniform(-1.0, 1.0), device).to_numpy()
    k = Tensor.random([6], Distribution.bernoulli(0.5), device).to_numpy()
    B.seed(99)
    Tensor.random([7], Distribution.normal(0.0, 1.0), device)
    B.set_rng_state(state)
    np.testing.assert_array_equal(Tensor.random([3, 4], Distribution.uniform(-1.0, 1.0), device).to_numpy(), a)
    np.testing.assert_array_equal(Tensor.random([6], Distribution.bernoulli(0.5), device).to_numpy(), k)
    from ember import BackendError

    with pytest.raises(BackendError, match="set_rng_state"):
        B.set_rng_state({"kind": "another backend"})


@pytest.mark.parametrize("n", [20000])
def test_random_normal_moments(B, device, n):
    B.seed(0)
    x = Tensor.random([n], Distribution.normal(2.0, 3.0), device).to_numpy().astype(np.float64)
    assert abs(x.mean() - 2.0) < 0.1 and abs(x.std() - 3.0) < 0.1
