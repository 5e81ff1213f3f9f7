"""``ember_jax.jit(..., donate_argnums=(0,), copy_donated=True)`` (the Learner's training step): the module the
caller passes is copied once and the copy donated, so the caller's arrays are never deleted nor written (running
statistics included); the step's own result passed back is donated as it is (updated in place, no copy); the
results are bit for bit those of the step compiled without donation."""

from __future__ import annotations

import numpy as np
import pytest

import ember_jax
from ember.optim import AdamConfig
from ember_jax._private import private_copy
from test_jit import lr_tensor
from test_jit_donate import arrays, batch, make, state_arrays, step


def test_the_callers_module_is_copied_once_then_the_result_is_updated_in_place() -> None:
    plain = ember_jax.jit(step)
    owning = ember_jax.jit(step, donate_argnums=(0,), copy_donated=True)
    assert owning.copy_donated and owning.donate_argnums == frozenset({0})
    m_r, caller = make(), make()
    before = [a.copy() for a in arrays(caller)]
    o_r, o_d = AdamConfig().init(), AdamConfig().init()
    o_r.init_states(m_r)
    o_d.init_states(caller)
    m_d = caller
    for i in range(4):
        b, lr = batch(seed=i), lr_tensor(0.05)
        prev = m_d
        m_r, loss_r = plain(m_r, o_r, b, lr)
        m_d, loss_d = owning(m_d, o_d, b, lr)
        # the first call trains a copy; later calls get the step's own result back and update it in place
        assert (m_d is not caller) if i == 0 else (m_d is prev)
        np.testing.assert_array_equal(loss_d.to_numpy(), loss_r.to_numpy())
        for a, e in zip(arrays(m_d), arrays(m_r)):
            np.testing.assert_array_equal(a, e)
        for a, e in zip(state_arrays(o_d._states), state_arrays(o_r._states)):
            np.testing.assert_array_equal(a, e)
    # the caller's module: every array readable (none deleted) and unchanged, running statistics included
    for a, e in zip(arrays(caller), before):
        np.testing.assert_array_equal(a, e)
    assert owning.trace_count == 1


def test_a_module_that_is_not_the_last_result_is_copied_at_every_call() -> None:
    owning = ember_jax.jit(step, donate_argnums=(0,), copy_donated=True)
    caller = make()
    before = [a.copy() for a in arrays(caller)]
    optim = AdamConfig().init()
    optim.init_states(caller)
    first, _ = owning(caller, optim, batch(), lr_tensor(0.05))
    second, _ = owning(caller, optim, batch(), lr_tensor(0.05))  # the caller's again: a new copy
    assert second is not first and second is not caller
    for a, e in zip(arrays(caller), before):
        np.testing.assert_array_equal(a, e)
    arrays(first)  # the first result was not donated by the second call (not passed back): still readable
    owning.clear_cache()  # forgets the last results too: the next call copies the module it is given
    third, _ = owning(second, optim, batch(), lr_tensor(0.05))
    assert third is not second
    arrays(second)


def test_private_copy_keeps_structure_ids_and_values_with_new_buffers() -> None:
    m = make()
    c = private_copy(m)
    assert type(c) is type(m) and c is not m
    for (n1, p1), (n2, p2) in zip(m.named_params(), c.named_params()):
        assert n1 == n2 and p1.id == p2.id and p1.require_grad == p2.require_grad and p1 is not p2
        assert p1.val().is_require_grad() == p2.val().is_require_grad()
        a, b = p1.val().inner().primitive, p2.val().inner().primitive
        assert a is not b and a.unsafe_buffer_pointer() != b.unsafe_buffer_pointer()
        assert a.sharding == b.sharding
    assert c.bn.running_mean is not m.bn.running_mean and c.bn.running_mean.id == m.bn.running_mean.id
    for a, e in zip(arrays(c), arrays(m)):
        assert a.tobytes() == e.tobytes()


def test_copy_donated_goes_through_the_backend() -> None:
    import ember
    from ember.autodiff import Autodiff

    b = ember.backend("jax")
    assert b.capabilities.donates_args and Autodiff(b).capabilities.donates_args
    compiled = b.compile(step, donate_argnums=(0,), copy_donated=True)
    assert compiled.copy_donated
    with pytest.raises(TypeError, match="copy_donated"):
        b.compile(step, copy=True)
