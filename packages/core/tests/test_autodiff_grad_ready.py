"""The gradient-ready hook of ``backward()`` (``on_grad_ready=`` and ``ember.autodiff.grad_ready_hook``)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import ember
from ember import Tensor
from ember.autodiff import Autodiff, grad_id, grad_ready_hook


@pytest.fixture
def dev() -> Any:
    return Autodiff(ember.backend("numpy", float_dtype="float64")).device()


def _leaf(dev: Any, shape: tuple[int, ...], seed: int) -> Tensor:
    return Tensor.from_data(np.random.default_rng(seed).normal(size=shape), dev).require_grad()


def _check_final(events: list[tuple[int, Any]], grads: Any) -> None:
    """Each gradient passed is the very one returned (same primitive, same values)."""
    for leaf_id, g in events:
        assert g.device.backend is not None and g.kind is ember.Float
        assert grads.primitive(leaf_id) is g.primitive
    assert len(events) == len(grads) and {i for i, _ in events} == set(grads.ids())


def test_chain_reports_leaves_in_reverse_order_of_use(dev: Any) -> None:
    x = Tensor.from_data(np.ones((4, 3)), dev)
    w1, w2, w3 = _leaf(dev, (3, 5), 1), _leaf(dev, (5, 5), 2), _leaf(dev, (5, 2), 3)
    loss = x.matmul(w1).exp().matmul(w2).tanh().matmul(w3).sum()
    events: list[tuple[int, Any]] = []
    grads = loss.backward(on_grad_ready=lambda i, g: events.append((i, g)))
    assert [i for i, _ in events] == [grad_id(w3), grad_id(w2), grad_id(w1)]
    _check_final(events, grads)
    # the values equal an ordinary backward's
    loss2 = x.matmul(w1).exp().matmul(w2).tanh().matmul(w3).sum()
    plain = loss2.backward()
    for w in (w1, w2, w3):
        np.testing.assert_array_equal(w.grad(plain).to_numpy(), w.grad(grads).to_numpy())


def test_a_leaf_used_twice_is_reported_once_after_both_consumers(dev: Any) -> None:
    a, b, c = _leaf(dev, (3,), 1), _leaf(dev, (3,), 2), _leaf(dev, (3,), 3)
    # a feeds the first op and the last one: it is final only after both, so after b (used once, late)
    # and after c, which is consumed only by the op that also consumes the first use of a
    h = a.mul(c)            # a, c
    k = h.exp().mul(b)      # b
    loss = k.add(a).sum()   # a again
    order: list[int] = []
    seen_at: dict[int, Any] = {}

    def hook(i: int, g: Tensor) -> None:
        order.append(i)
        seen_at[i] = g.to_numpy().copy()

    grads = loss.backward(on_grad_ready=hook)
    ia, ib, ic = grad_id(a), grad_id(b), grad_id(c)
    assert sorted(order) == sorted([ia, ib, ic]) and len(order) == 3
    assert order.index(ib) < order.index(ia) and order[0] == ib
    for t in (a, b, c):  # the gradient at report time is already the final one (the sum of both uses for a)
        np.testing.assert_array_equal(seen_at[grad_id(t)], t.grad(grads).to_numpy())
    av, bv, cv = (t.inner().to_numpy() for t in (a, b, c))
    np.testing.assert_allclose(seen_at[ia], cv * np.exp(av * cv) * bv + 1.0)


def test_context_manager_unreached_leaves_and_precedence(dev: Any) -> None:
    a, b, unused = _leaf(dev, (2,), 1), _leaf(dev, (2,), 2), _leaf(dev, (2,), 3)
    loss = a.mul(b).sum()
    outer: list[int] = []
    inner: list[int] = []
    with grad_ready_hook(lambda i, g: outer.append(i)):
        grads = loss.backward()
        assert sorted(outer) == sorted([grad_id(a), grad_id(b)]) and grad_id(unused) not in outer
        with grad_ready_hook(lambda i, g: inner.append(i)):
            a.mul(2.0).sum().backward()
            a.mul(3.0).sum().backward(on_grad_ready=lambda i, g: None)  # the argument wins
        assert inner == [grad_id(a)] and len(outer) == 2
    a.mul(4.0).sum().backward()  # outside the block: no hook
    assert len(outer) == 2 and len(inner) == 1 and len(grads) == 2
    # a leaf as the root: reported with its seed
    got: list[int] = []
    a.backward(on_grad_ready=lambda i, g: got.append(i))
    assert got == [grad_id(a)]
    with pytest.raises(TypeError, match="callable"), grad_ready_hook(3):  # type: ignore[arg-type]
        pass


def test_hook_on_a_module_graph_with_slices(dev: Any) -> None:
    """A leaf whose gradient comes from slices (a SliceGrad densified at the leaf) is reported dense and final."""
    w = _leaf(dev, (4, 3), 5)
    loss = w.slice([(0, 2)]).sum().add(w.slice([(2, 4)]).mul(2.0).sum())
    events: list[tuple[int, Any]] = []
    grads = loss.backward(on_grad_ready=lambda i, g: events.append((i, g)))
    _check_final(events, grads)
    np.testing.assert_array_equal(events[0][1].to_numpy(), [[1.0] * 3] * 2 + [[2.0] * 3] * 2)
