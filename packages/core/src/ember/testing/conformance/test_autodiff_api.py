"""The autodiff API on the backend under test (Burn's ``AutodiffBackend``): hand-derived
gradients, accumulation, broadcasting, constants, graph freeing, ``Gradients``, errors, and the
coverage of the backend contract by ``Autodiff``."""

from __future__ import annotations

import gc
import inspect
import threading
import weakref
from typing import Any

import numpy as np
import pytest

import ember
from ember import BackendError, DeviceError, EmberError, Float, Int, KindError, Tensor
from ember.autodiff import HANDLED, Autodiff, AutodiffError, Gradients
from ember.backend import Backend


def test_autodiff_sum_of_squares(ad_device: Any) -> None:
    # the seed case: d(sum(x^2))/dx = 2x, on the inner device
    x = Tensor.from_floats([1.0, 2.0, 3.0], ad_device).require_grad()
    grads = x.powf_scalar(2.0).sum().backward()
    g = x.grad(grads)
    assert g is not None and g.device is ad_device.inner and g.kind is Float
    np.testing.assert_allclose(g.to_numpy(), [2.0, 4.0, 6.0])


def test_autodiff_squared_error_of_linear_model(ad_device: Any) -> None:
    # L = (w.x - y)^2: dL/dw = 2 (w.x - y) x, dL/dx = 2 (w.x - y) w
    wv, xv, yv = np.array([0.5, -1.0, 2.0]), np.array([1.5, 0.25, -0.75]), 0.3
    w = Tensor.from_floats(wv, ad_device).require_grad()
    x = Tensor.from_floats(xv, ad_device).require_grad()
    loss = (w.dot(x) - yv).powf_scalar(2.0)
    grads = loss.backward()
    r = wv @ xv - yv
    np.testing.assert_allclose(w.grad(grads).to_numpy(), 2 * r * xv, rtol=1e-12)
    np.testing.assert_allclose(x.grad(grads).to_numpy(), 2 * r * wv, rtol=1e-12)
    np.testing.assert_allclose(loss.to_numpy(), [r * r], rtol=1e-12)


def test_autodiff_accumulates_over_uses(ad_device: Any) -> None:
    xv = np.array([[0.5, -2.0], [1.0, 3.0]])
    x = Tensor.from_floats(xv, ad_device).require_grad()
    y = x * x + x * 3.0 - x.exp().sum_dim(1) * x
    g = x.grad(y.sum().backward()).to_numpy()
    s = np.exp(xv).sum(axis=1, keepdims=True)
    expected = 2 * xv + 3 - s - np.exp(xv) * xv.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(g, expected, rtol=1e-12)


def test_autodiff_broadcast_gradients_reduce_to_input_shapes(ad_device: Any) -> None:
    a = Tensor.from_floats(np.ones((3, 4)), ad_device).require_grad()
    b = Tensor.from_floats(np.arange(4.0), ad_device).require_grad()
    c = Tensor.from_floats(np.ones((3, 1)) * 2.0, ad_device).require_grad()
    grads = ((a + b) * c).sum().backward()
    assert a.grad(grads).shape == (3, 4) and b.grad(grads).shape == (4,) and c.grad(grads).shape == (3, 1)
    np.testing.assert_allclose(a.grad(grads).to_numpy(), np.full((3, 4), 2.0))
    np.testing.assert_allclose(b.grad(grads).to_numpy(), np.full(4, 6.0))
    np.testing.assert_allclose(c.grad(grads).to_numpy(), np.full((3, 1), 4.0 + 6.0))


def test_autodiff_non_scalar_backward_seeds_ones(ad_device: Any) -> None:
    x = Tensor.from_floats([1.0, -2.0, 4.0], ad_device).require_grad()
    np.testing.assert_allclose(x.grad((x * x).backward()).to_numpy(), [2.0, -4.0, 8.0])


def test_autodiff_int_and_bool_inputs_are_constants(ad_device: Any) -> None:
    x = Tensor.from_floats([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], ad_device).require_grad()
    idx = Tensor.from_ints([[2, 2], [0, 1]], ad_device)
    k = Tensor.from_ints([[1, 2, 3], [0, 1, 2]], ad_device)
    assert idx.device is ad_device and idx.ops is ad_device.inner.backend
    m = x.greater_elem(2.5)
    assert m.kind is ember.Bool
    loss = x.gather(1, idx).sum() + (x * k.float()).sum() + x.mask_fill(m, 0.0).sum() + x.powi(k).sum()
    g = x.grad(loss.backward()).to_numpy()
    xv = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    kv = np.array([[1, 2, 3], [0, 1, 2]])
    expected = np.array([[0, 0, 2], [1, 1, 0]]) + kv + (xv <= 2.5) + kv * xv ** (kv - 1)
    np.testing.assert_allclose(g, expected, rtol=1e-12)


def test_autodiff_argmax_and_comparisons_leave_the_graph(ad_device: Any) -> None:
    x = Tensor.from_floats([[1.0, 5.0, 2.0]], ad_device).require_grad()
    i = x.argmax(1)
    assert i.kind is Int and i.device is ad_device and not i.is_require_grad()
    np.testing.assert_array_equal(i.to_numpy(), [[1]])
    assert x.int().kind is Int and x.equal_elem(5.0).to_numpy().tolist() == [[False, True, False]]


def test_autodiff_detach_cuts_the_graph(ad_device: Any) -> None:
    xv = np.array([0.5, 1.5, -1.0])
    x = Tensor.from_floats(xv, ad_device).require_grad()
    g = x.grad((x.detach() * x).sum().backward())
    np.testing.assert_allclose(g.to_numpy(), xv)
    assert not x.detach().is_require_grad()
    assert not x.set_require_grad(False).is_require_grad()
    assert x.set_require_grad(True).is_require_grad()


def test_autodiff_tracking_flags(ad_device: Any) -> None:
    x = Tensor.from_floats([1.0, 2.0], ad_device)
    assert not x.is_require_grad()
    assert not (x * 2.0).is_require_grad()  # untracked in, untracked out: no graph recorded
    t = x.require_grad()
    assert t.is_require_grad() and (t * 2.0).is_require_grad()
    assert t.require_grad() is t  # already a leaf: same tensor, same gradient slot
    plain = Tensor.from_floats([1.0], ad_device.inner)
    assert not plain.is_require_grad()


def test_autodiff_unreached_leaf_has_no_gradient(ad_device: Any) -> None:
    a = Tensor.from_floats([1.0], ad_device).require_grad()
    b = Tensor.from_floats([2.0], ad_device).require_grad()
    grads = (a * 3.0).sum().backward()
    assert b.grad(grads) is None
    assert (a * b).grad(grads) is None  # not a leaf


def test_autodiff_inner_and_from_inner(ad_device: Any) -> None:
    x = Tensor.from_floats([1.0, 2.0], ad_device).require_grad()
    xi = x.inner()
    assert xi.device is ad_device.inner and xi.ops is ad_device.inner.backend
    np.testing.assert_array_equal(xi.to_numpy(), [1.0, 2.0])
    y = Tensor.from_inner(xi * 3.0, ad_device)
    assert y.device is ad_device and not y.is_require_grad()
    yl = y.require_grad()
    np.testing.assert_allclose(yl.grad((yl * yl).sum().backward()).to_numpy(), [6.0, 12.0])
    k = Tensor.from_inner(Tensor.from_ints([1, 2], ad_device.inner), ad_device)
    assert k.kind is Int and k.device is ad_device


def test_autodiff_gradients_container(ad_device: Any) -> None:
    w = Tensor.from_floats([[1.0, 2.0]], ad_device).require_grad()
    b = Tensor.from_floats([0.5], ad_device).require_grad()
    grads = (w * 2.0 + b).sum().backward()
    assert isinstance(grads, Gradients) and len(grads) == 2 and w in grads
    m = grads.to_map({"w": w, "b": b})
    np.testing.assert_allclose(m["w"].to_numpy(), [[2.0, 2.0]])
    np.testing.assert_allclose(m["b"].to_numpy(), [2.0])
    # replace, then remove
    w.grad_replace(grads, Tensor.from_floats([[7.0, 8.0]], ad_device.inner))
    np.testing.assert_allclose(w.grad(grads).to_numpy(), [[7.0, 8.0]])
    with pytest.raises(EmberError):
        w.grad_replace(grads, Tensor.from_floats([1.0], ad_device.inner))
    assert w.grad_remove(grads) is not None and w.grad(grads) is None and len(grads) == 1
    consumed = grads.to_map([("b", b)], remove=True)
    assert list(consumed) == ["b"] and len(grads) == 0


def test_autodiff_gradients_cross_threads(ad_device: Any) -> None:
    x = Tensor.from_floats([1.0, 2.0, 3.0], ad_device).require_grad()
    grads = (x * x).sum().backward()
    out: list[Any] = []
    th = threading.Thread(target=lambda: out.append(x.grad(grads).to_numpy()))
    th.start()
    th.join()
    np.testing.assert_allclose(out[0], [2.0, 4.0, 6.0])


def _weakref_of(p: Any) -> Any:
    try:
        return weakref.ref(p)
    except TypeError:
        return None


def test_autodiff_graph_is_freed_after_backward(ad_device: Any) -> None:
    gc.collect()
    gc.disable()
    try:
        x = Tensor.from_floats(np.linspace(0.1, 1.0, 6).reshape(2, 3), ad_device).require_grad()
        h = (x * 2.0).exp()
        z = h.sin()
        loss = (z * h).sum()
        node_refs = [weakref.ref(t.primitive.node) for t in (h, z, loss)]
        arr_refs = [r for r in (_weakref_of(h.primitive.p), _weakref_of(z.primitive.p)) if r is not None]
        del h, z
        assert all(r() is not None for r in node_refs)  # kept alive by the graph
        grads = loss.backward()
        assert all(r() is None for r in node_refs[:2]), "intermediate nodes survive backward()"
        assert all(r() is None for r in arr_refs), "saved intermediate tensors survive backward()"
        assert x.grad(grads) is not None
        # a second backward through the consumed graph is an error
        with pytest.raises(AutodiffError, match="consumed"):
            loss.backward()
    finally:
        gc.enable()


def test_autodiff_graph_without_backward_has_no_cycles(ad_device: Any) -> None:
    gc.collect()
    gc.disable()
    try:
        x = Tensor.from_floats([[1.0, 2.0]], ad_device).require_grad()
        loss = ((x * x).tanh() @ Tensor.from_floats([[1.0], [2.0]], ad_device)).sum()
        ref = weakref.ref(loss.primitive.node)
        del loss
        assert ref() is None, "the graph holds a reference cycle"
    finally:
        gc.enable()


def test_autodiff_errors(ad_device: Any, backend_name: str) -> None:
    x = Tensor.from_floats([1.0, 2.0], ad_device)
    with pytest.raises(AutodiffError, match="not tracked"):
        x.sum().backward()
    with pytest.raises(KindError, match="Float"):
        Tensor.from_ints([1, 2], ad_device).require_grad()
    plain = Tensor.from_floats([1.0], ad_device.inner)
    with pytest.raises(BackendError, match="autodiff"):
        plain.require_grad()
    with pytest.raises(BackendError, match="autodiff"):
        plain.backward()
    t = x.require_grad()
    grads = (t * 2.0).sum().backward()
    with pytest.raises(BackendError, match="not an autodiff backend"):
        t.inner().grad(grads)
    # two autodiff backends over different inner backends (other float dtype) do not mix
    other = ember.backend(backend_name, float_dtype="float32")
    y = Tensor.from_floats([1.0, 2.0], Autodiff(other).device()).require_grad()
    with pytest.raises(DeviceError, match="different backends"):
        t + y
    with pytest.raises(BackendError, match="already an autodiff"):
        Autodiff(ad_device.backend)


def test_autodiff_backend_identity(ad_device: Any) -> None:
    B = ad_device.backend
    inner = ad_device.inner.backend
    assert B.is_autodiff and not inner.is_autodiff
    assert Autodiff(inner) is B
    assert B.float_dtype is inner.float_dtype and B.int_dtype is inner.int_dtype
    assert B.name == f"autodiff({inner.name})"
    assert ad_device.ops == (B, inner, inner)
    assert ad_device.handle == ad_device.inner.handle


def test_autodiff_covers_the_whole_backend_contract(ad_device: Any) -> None:
    """Fails when a primitive of ``ember.backend.Backend`` has no autodiff implementation: every
    public method is in HANDLED (a rule, a delegation, a creation op, a differentiable
    composite, or a method of Autodiff), and nothing Autodiff calls falls back to a
    ``NotImplementedError`` stub."""
    public = {n for n, v in inspect.getmembers(Backend) if not n.startswith("_") and callable(v)}
    missing = sorted(public - HANDLED)
    assert not missing, f"Backend primitives without an autodiff implementation or rule: {missing}"
    B = ad_device.backend
    for name in sorted(public):
        assert callable(getattr(B, name)), name


def test_autodiff_creation_and_casts(ad_device: Any) -> None:
    r = Tensor.random([3, 2], ember.Distribution.uniform(0.0, 1.0), ad_device)
    assert r.kind is Float and not r.is_require_grad()
    z = Tensor.zeros([2], ad_device)
    assert z.dtype is ad_device.inner.backend.float_dtype
    k = Tensor.arange(0, 3, ad_device)
    kf = k.float()
    assert kf.kind is Float and kf.device is ad_device
    np.testing.assert_array_equal(kf.to_numpy(), [0.0, 1.0, 2.0])
    x = Tensor.from_floats([1.7, -2.2], ad_device).require_grad()
    np.testing.assert_array_equal(x.int().to_numpy(), [1, -2])
