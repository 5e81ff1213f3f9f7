"""A function of Ember tensors traces under ``jax.jit`` when primitives are wrapped by hand: the
core's shape checks are Python-side and every primitive is traceable (groundwork for the
compiled training step)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

import ember
from ember import Float, Int, Tensor
from ember.autodiff import Autodiff
from ember.tensor import activation as act


def _dev():
    return ember.backend("jax").device()


def _t(p, dev, kind=Float):
    return Tensor.from_primitive(p, dev, kind)


def _compare(f, *args):
    compiled = jax.jit(f)(*args)
    eager = f(*args)
    for c, e in zip(jax.tree.leaves(compiled), jax.tree.leaves(eager)):
        np.testing.assert_allclose(np.asarray(c), np.asarray(e), rtol=1e-6, atol=1e-6)


def test_forward_ops_trace():
    dev = _dev()
    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.standard_normal((8, 4)), jnp.float32)
    w = jnp.asarray(rng.standard_normal((4, 3)), jnp.float32)

    def f(xp, wp):
        t = _t(xp, dev)
        h = act.relu(t @ _t(wp, dev))
        s = act.softmax(h, 1).mean_dim(0)
        k = t[1:5, ::2].sort(1).cumsum(1).var(0)
        m = t.mask_fill(t > 0.5, 0.0).topk(2, 1)
        return s.primitive, k.primitive, m.primitive

    _compare(f, x, w)


def test_autodiff_step_traces():
    B = ember.backend("jax")
    dev = B.device()
    adev = Autodiff(B).device(dev.name)
    rng = np.random.default_rng(1)
    x = jnp.asarray(rng.standard_normal((8, 4)), jnp.float32)
    w = jnp.asarray(rng.standard_normal((4, 3)), jnp.float32)
    y = jnp.asarray([0, 1, 2, 1, 0, 2, 1, 0], jnp.int32)

    def step(xp, wp, yp):
        wt = Tensor.from_inner(_t(wp, dev), adev).require_grad()
        logits = Tensor.from_inner(_t(xp, dev), adev) @ wt
        picked = act.log_softmax(logits, 1).gather(1, _t(yp, dev, Int).unsqueeze_dim(1))
        loss = (-picked).mean()
        g = wt.grad(loss.backward())
        return (wt.inner() - g * 0.1).primitive

    _compare(step, x, w, y)


def test_module_ops_and_their_gradients_trace():
    from ember.tensor import functional as M

    B = ember.backend("jax")
    dev = B.device()
    adev = Autodiff(B).device(dev.name)
    x = jnp.asarray(np.random.default_rng(2).random((1, 2, 6, 6)), jnp.float32)

    def f(xp):
        w = Tensor.from_inner(Tensor.ones([3, 2, 3, 3], dev), adev).require_grad()
        t = Tensor.from_inner(_t(xp, dev), adev)
        y = M.max_pool2d(M.conv2d(t, w, None, M.ConvOptions(padding=1)), 2)
        loss = M.avg_pool2d(y, 3).sum()
        return loss.inner().primitive, w.grad(loss.backward()).primitive

    _compare(f, x)
