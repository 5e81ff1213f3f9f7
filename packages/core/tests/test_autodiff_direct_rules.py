"""Backward rules written in the node's form (``direct=True``: the sweep calls them with no adapting frame) and
the tensor-level ``require_grad``, ``grad`` and ``backward`` (``backward`` checks inline): same gradients, bit for
bit, as the numpy formulas of the textbook derivatives, and the same errors."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import BackendError, Tensor
from ember.autodiff import Autodiff, Gradients, grad_ready_hook
from ember.autodiff._table import RULES
from ember.tensor import activation as A

DEV = Autodiff(ember.backend("numpy", float_dtype="float32")).device()
RNG = np.random.default_rng(0)
HOT = ("add", "sub", "mul", "matmul", "neg", "relu", "log_softmax", "mean", "gather")


def _t(a: np.ndarray) -> Tensor:
    return Tensor.from_data(a, DEV).require_grad()


def _np(t: Tensor | None) -> np.ndarray:
    assert t is not None
    return t.to_data().to_numpy()


def _same(got: Tensor | None, want: np.ndarray) -> None:
    g = _np(got)
    assert g.dtype == want.dtype and g.shape == want.shape
    assert g.tobytes() == want.tobytes()


def test_the_hot_rules_are_direct_and_are_the_nodes_own_rule() -> None:
    for name in HOT:
        assert RULES[name].direct, name
    x = _t(RNG.standard_normal((3, 4)).astype(np.float32))
    y = x + x
    assert y.primitive.node.rule is RULES["add"].backward  # no wrapper in between
    z = A.relu(x)
    assert z.primitive.node.rule is RULES["relu"].backward
    assert not RULES["exp"].direct and z.exp().primitive.node.rule is not RULES["exp"].backward


def test_add_sub_mul_with_broadcasting_and_constants() -> None:
    a = RNG.standard_normal((5, 3)).astype(np.float32)
    b = RNG.standard_normal((3,)).astype(np.float32)
    c = RNG.standard_normal((5, 1)).astype(np.float32)
    ta, tb, tc = _t(a), _t(b), _t(c)
    g = ((ta + tb) - tc).sum().backward()
    ones = np.ones((5, 3), np.float32)
    _same(ta.grad(g), ones)
    _same(tb.grad(g), np.add.reduce(ones, 0, np.float32))  # the bias case: a sum over the leading dim
    _same(tc.grad(g), -np.add.reduce(ones, 1, np.float32, keepdims=True))
    g = (ta * tb).sum().backward()
    _same(ta.grad(g), ones * b)
    _same(tb.grad(g), np.add.reduce(ones * a, 0, np.float32))
    g = ((ta * 2.0) - 1.0 + 0.5).sum().backward()  # Python-scalar constants: one parent
    _same(ta.grad(g), ones * np.float32(2.0))


def test_matmul_neg_mean_relu_log_softmax_gather_chain() -> None:
    x = RNG.standard_normal((8, 3)).astype(np.float32)
    w = RNG.standard_normal((3, 4)).astype(np.float32)
    idx = RNG.integers(0, 4, (8, 1))
    tx, tw = _t(x), _t(w)
    ti = Tensor.from_data(idx, DEV)
    logits = A.relu(tx @ tw)
    loss = A.log_softmax(logits, 1).gather(1, ti).mean().neg()
    g = loss.backward()
    # the same ufuncs, in the same order, by hand
    z = x @ w
    h = np.maximum(z, np.float32(0))
    s = h - np.maximum.reduce(h, 1, keepdims=True)
    lp = s - np.log(np.add.reduce(np.exp(s), 1, keepdims=True))
    gm = np.empty((8, 1), np.float32)
    gm[...] = (-np.ones(1, np.float32) / np.float32(8.0)).reshape(1, 1)
    gl = np.zeros((8, 4), np.float32)
    np.add.at(gl, (np.arange(8)[:, None], idx), gm)
    gl = gl - np.exp(lp) * np.add.reduce(gl, 1, np.float32, keepdims=True)
    gh = np.where(h <= 0, np.float32(0), gl)
    _same(tw.grad(g), x.T @ gh)
    _same(tx.grad(g), gh @ w.T)


def test_require_grad_grad_and_backward_fast_paths() -> None:
    x = Tensor.from_data(RNG.standard_normal((2, 3)).astype(np.float32), DEV)
    leaf = x.require_grad()
    assert leaf.require_grad() is leaf  # already a leaf
    assert leaf.primitive.p is x.primitive.p and leaf.primitive.node is not None
    y = leaf * 3.0
    again = y.require_grad()  # a computed tensor becomes a new leaf: the graph behind it is cut
    assert again.primitive.node is not y.primitive.node and again.primitive.node.parents == ()
    g = (again.sum() + y.sum()).backward()
    _same(again.grad(g), np.ones((2, 3), np.float32))
    _same(leaf.grad(g), np.full((2, 3), 3.0, np.float32))
    assert y.grad(g) is None and x.grad(g) is None  # not a leaf, untracked
    assert leaf.grad(Gradients()) is None
    assert leaf.grad(g).device is DEV.inner
    with pytest.raises(BackendError, match="not an autodiff backend"):
        leaf.inner().grad(g)
    seen = []
    with grad_ready_hook(lambda i, t: seen.append(i)):
        (leaf * 2.0).sum().backward()
    assert len(seen) == 1
    with pytest.raises(BackendError, match="does not record gradients"):
        leaf.inner().backward()
