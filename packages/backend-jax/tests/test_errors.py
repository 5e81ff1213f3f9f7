"""Index values are checked eagerly (jax would clamp them silently); errors under jax.jit say
what to do instead."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import ember
from ember import BackendError, Int, Tensor


def _dev():
    return ember.backend("jax").device()


def _ints(dev, v):
    return Tensor.from_data(v, dev, Int)


def test_out_of_range_indices_raise_ember_index_error():
    dev = _dev()
    x = Tensor.from_data(np.arange(12, dtype=np.float32).reshape(3, 4), dev)
    cases = [
        ("gather", lambda: x.gather(1, _ints(dev, [[0], [4], [1]]))),
        ("gather", lambda: x.gather(0, _ints(dev, [[0, 1, 3, 0]]))),
        ("select", lambda: x.select(0, [3])),
        ("select_assign", lambda: x.select_assign(1, _ints(dev, [0, 4]), Tensor.ones([3, 2], dev))),
        ("scatter", lambda: x.scatter(0, _ints(dev, [[0, 1, 3, 0]]), Tensor.ones([1, 4], dev))),
    ]
    for op, f in cases:
        with pytest.raises(ember.IndexError, match=op):
            f()


def test_index_checks_are_skipped_under_jit_where_jax_fills():
    dev = _dev()

    def f(xp, ip):
        x, i = Tensor.from_primitive(xp, dev), Tensor.from_primitive(ip, dev, Int)
        return x.gather(0, i).primitive

    out = jax.jit(f)(jnp.arange(3.0), jnp.array([0, 5], jnp.int32))
    assert np.asarray(out)[0] == 0.0 and np.isnan(np.asarray(out)[1])  # jax's "fill" mode


def test_reading_values_under_jit_says_what_to_do():
    dev = _dev()

    def f(xp):
        return Tensor.from_primitive(xp, dev).sum().into_scalar()

    with pytest.raises(BackendError, match="compiled.*outside"):
        jax.jit(f)(jnp.ones(3))


def test_nonzero_under_jit_is_a_backend_error():
    dev = _dev()

    def f(xp):
        return Tensor.from_primitive(xp, dev).greater_elem(0.5).argwhere().primitive

    with pytest.raises(BackendError, match="argwhere.*data-dependent"):
        jax.jit(f)(jnp.ones(3))


def test_int_division_by_zero_is_zero():
    dev = _dev()
    a = _ints(dev, [7, -7, 0])
    assert (a // 0).to_data().to_numpy().tolist() == [0, 0, 0]
    assert (a % 0).to_data().to_numpy().tolist() == [0, 0, 0]
    assert (a // _ints(dev, [2, 2, 0])).to_data().to_numpy().tolist() == [3, -4, 0]
    assert (a % _ints(dev, [-3, 3, 5])).to_data().to_numpy().tolist() == [-2, 2, 0]
