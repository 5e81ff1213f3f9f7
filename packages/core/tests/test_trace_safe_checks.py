"""Code a training step runs must trace under ``jax.jit``: value checks run on concrete data only, and the
backward rules never branch on values (``one_hot_fill``'s range check, the ``cumprod`` rule, ``CTCLoss``'s
length check).

"Traced" is simulated on numpy by making the backend report non-concrete values
(``Backend.is_concrete``), and checked for real under ``jax.jit`` when jax is installed.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import Float, Int, Tensor
from ember.autodiff import Autodiff
from ember.nn import loss as L
from ember.tensor import activation as A


@pytest.fixture(name="traced")
def traced_fixture(monkeypatch):
    """The numpy backend reporting traced values, and any host read failing the test."""
    backend = type(ember.backend("numpy"))
    monkeypatch.setattr(backend, "is_concrete", lambda self, p: False)

    def no_host_read(self, p):
        raise AssertionError("a host read (to_numpy) happened under tracing")

    monkeypatch.setattr(backend, "to_numpy", no_host_read)


def _jax():
    pytest.importorskip("jax")
    return ember.backend("jax")


# ---------------------------------------------------------------------- one_hot_fill
def test_one_hot_fill_values_and_axis():
    dev = ember.backend("numpy").device()
    idx = Tensor.from_data([[0, 2], [1, 1]], dev)
    out = idx.one_hot_fill(3, 5.0, -1.0, 1)
    want = np.full((2, 3, 2), -1.0)
    for i in range(2):
        for j in range(2):
            want[i, [0, 2, 1, 1][2 * i + j], j] = 5.0
    assert out.kind is Int and out.shape == (2, 3, 2)
    np.testing.assert_array_equal(out.to_numpy(), want)
    f = Tensor.from_data([2.0, 0.0], dev).one_hot(3)
    assert f.kind is Float
    np.testing.assert_array_equal(f.to_numpy(), [[0, 0, 1], [1, 0, 0]])


def test_one_hot_range_is_checked_on_concrete_data():
    dev = ember.backend("numpy").device()
    with pytest.raises(ember.IndexError, match=r"one_hot: class -1 is out of range for num_classes 3; "
                                               r"expected a value in \[0, 2\]"):
        Tensor.from_data([0, 3, -1], dev).one_hot(3)
    with pytest.raises(ember.IndexError, match=r"one_hot: class 3 is out of range"):
        Tensor.from_data([0, 3, 1], dev).one_hot(3)


def test_one_hot_range_check_is_skipped_under_tracing(traced):
    dev = ember.backend("numpy").device()
    out = Tensor.from_data([0, 3, 2], dev).one_hot_fill(3, 1.0, 0.0)
    # no host read; the out-of-range value gets a row of off_value (no class matches)
    np.testing.assert_array_equal(np.asarray(out.primitive), [[1, 0, 0], [0, 0, 0], [0, 0, 1]])


def test_one_hot_traces_under_jax_jit():
    import jax
    import jax.numpy as jnp

    dev = _jax().device()

    def f(p):
        return Tensor.from_primitive(p, dev, Int).one_hot_fill(4, 2.0, -1.0).primitive

    got = np.asarray(jax.jit(f)(jnp.asarray([3, 0, 1], jnp.int32)))
    np.testing.assert_array_equal(got, [[-1, -1, -1, 2], [2, -1, -1, -1], [-1, 2, -1, -1]])


# ---------------------------------------------------------------------- index values (issue 28)
def _index_ops(dev):
    """Every core op with an index-value check, each given an index out of range (a negative one or one
    past the end)."""
    from ember.tensor import functional as M

    x = Tensor.from_data(np.arange(12.0).reshape(3, 4), dev)
    ce = L.CrossEntropyLossConfig().init(dev)
    return {
        "select": lambda: x.select(0, Tensor.from_data([2, -1], dev)),
        "take": lambda: x.take(1, Tensor.from_data([[0, 4]], dev)),
        "gather": lambda: x.gather(1, Tensor.from_data([[0], [-1], [4]], dev)),
        "scatter": lambda: x.scatter(1, Tensor.from_data([[0], [-1], [1]], dev), Tensor.ones([3, 1], dev)),
        "gather_nd": lambda: x.gather_nd(Tensor.from_data([[0, -1]], dev)),
        "embedding": lambda: M.embedding(x, Tensor.from_data([[0, 3]], dev)),
        "CrossEntropyLoss": lambda: ce(x, Tensor.from_data([0, -1, 1], dev)),
    }


@pytest.mark.parametrize("op", list(_index_ops(ember.backend("numpy").device())))
def test_index_values_are_checked_on_concrete_data(op):
    with pytest.raises(ember.IndexError, match=rf"^{op}: \w+ -?\d+ is out of range for .*expected a value in \["):
        _index_ops(ember.backend("numpy").device())[op]()


@pytest.mark.parametrize("op", list(_index_ops(ember.backend("numpy").device())))
def test_index_value_checks_do_not_read_values_under_tracing(traced, op):
    # no host read (the traced fixture fails on one) and no core check; numpy itself may still raise for an
    # index past the end, which the core reports as the backend's error
    try:
        _index_ops(ember.backend("numpy").device())[op]()
    except ember.IndexError as exc:
        assert "Backend said" in str(exc) or "index out of range:" in str(exc), exc


def test_index_checks_trace_under_jax_jit():
    import jax
    import jax.numpy as jnp

    from ember.tensor import functional as M

    dev = _jax().device()
    w = Tensor.from_data(np.arange(12.0).reshape(4, 3), dev)
    ce = L.CrossEntropyLossConfig().init(dev)

    def f(p):
        idx = Tensor.from_primitive(p, dev, Int)
        e = M.embedding(w, idx)  # [2, 3]
        return (ce(e, idx.remainder(3)) + e.gather(1, idx.reshape([2, 1]).clamp(0, 2)).sum()).primitive

    got = np.asarray(jax.jit(f)(jnp.asarray([1, 2], jnp.int32)))
    want = f(jnp.asarray([1, 2], jnp.int32))  # eagerly, with the checks
    np.testing.assert_allclose(got, np.asarray(want), rtol=1e-6)
    # traced values are not checked: jax counts -1 from the end (documented in ember.tensor._index_check)
    np.testing.assert_array_equal(
        np.asarray(jax.jit(lambda p: M.embedding(w, Tensor.from_primitive(p, dev, Int)).primitive)(
            jnp.asarray([-1], jnp.int32))), [[9.0, 10.0, 11.0]])


# ---------------------------------------------------------------------- cumprod backward
#: rows with no zero, one zero, two zeros, zeros at both ends, only zeros
CUMPROD_CASES = [
    np.array([[0.5, 1.5, -2.0, 1.2], [0.7, -1.2, 0.9, 1.1]]),
    np.array([[0.5, 0.0, 1.5, 2.0], [0.0, 2.0, 3.0, -1.0], [1.0, 2.0, 3.0, 0.0]]),
    np.array([[0.7, -1.2, 0.0, 0.0], [3.0, 0.0, 2.0, 0.0], [0.0, 0.0, 0.0, 2.0], [0.0, 0.0, 0.0, 0.0]]),
]


def _cumprod_grad_reference(x: np.ndarray, g: np.ndarray, dim: int) -> np.ndarray:
    """``d/dx_k sum_j g_j prod_{i <= j} x_i`` in float64 from the definition (all products, no division)."""
    xm, gm = np.moveaxis(x, dim, -1), np.moveaxis(g, dim, -1)
    out = np.zeros_like(xm)
    n = xm.shape[-1]
    for idx in np.ndindex(*xm.shape[:-1]):
        for k in range(n):
            out[idx + (k,)] = sum(
                gm[idx + (j,)] * np.prod([xm[idx + (i,)] for i in range(j + 1) if i != k]) for j in range(k, n)
            )
    return np.moveaxis(out, -1, dim)


@pytest.mark.parametrize("backend", ["numpy", "jax"])
@pytest.mark.parametrize("case", range(len(CUMPROD_CASES)))
@pytest.mark.parametrize("dim", [0, 1])
def test_cumprod_gradient_is_exact_with_zeros(backend, case, dim):
    inner = _jax() if backend == "jax" else ember.backend("numpy")
    dev = Autodiff(inner).device()
    a = CUMPROD_CASES[case]
    g = np.random.default_rng(case).normal(size=a.shape)
    x = Tensor.from_data(a.astype(np.float32), dev).require_grad()
    loss = (x.cumprod(dim) * Tensor.from_data(g.astype(np.float32), dev)).sum()
    got = x.grad(loss.backward()).to_numpy()
    np.testing.assert_allclose(got, _cumprod_grad_reference(a, g, dim), rtol=1e-5, atol=1e-5)


def test_cumprod_gradient_does_not_read_values(traced):
    dev = Autodiff(ember.backend("numpy")).device()
    a = CUMPROD_CASES[1]
    x = Tensor.from_data(a.astype(np.float32), dev).require_grad()
    grad = x.grad(x.cumprod(1).sum().backward())
    np.testing.assert_allclose(np.asarray(grad.primitive), _cumprod_grad_reference(a, np.ones_like(a), 1),
                               rtol=1e-5, atol=1e-6)


def test_cumprod_gradient_traces_under_jax_jit():
    import jax
    import jax.numpy as jnp

    B = _jax()
    dev = B.device()
    adev = Autodiff(B).device(dev.name)
    a = CUMPROD_CASES[2]

    def f(p):
        x = Tensor.from_inner(Tensor.from_primitive(p, dev), adev).require_grad()
        return x.grad(x.cumprod(1).square().sum().backward()).primitive

    got = np.asarray(jax.jit(f)(jnp.asarray(a, jnp.float32)))
    # d/dx sum_j y_j^2 = sum_j 2 y_j dy_j/dx: the reference with g = 2 y
    np.testing.assert_allclose(got, _cumprod_grad_reference(a, 2 * np.cumprod(a, 1), 1), rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------------- CTC lengths
def _ctc_args(dev):
    rng = np.random.default_rng(3)
    logp = A.log_softmax(Tensor.from_data(rng.standard_normal((6, 2, 4)).astype(np.float32), dev), 2)
    targets = Tensor.from_data(np.array([[1, 2, 2], [3, 1, 0]]), dev)
    return logp, targets, Tensor.from_data(np.array([6, 4]), dev), Tensor.from_data(np.array([3, 2]), dev)


def test_ctc_length_check_runs_on_concrete_data():
    dev = ember.backend("numpy").device()
    logp, targets, in_len, _ = _ctc_args(dev)
    with pytest.raises(ember.ShapeError, match="target_lengths in \\[0, 3\\], got \\[6, 4\\] and \\[4, 2\\]"):
        L.CTCLoss()(logp, targets, in_len, Tensor.from_data(np.array([4, 2]), dev))


def test_ctc_does_not_read_lengths_under_tracing(request):
    dev = ember.backend("numpy").device()
    args = _ctc_args(dev)
    want = L.CTCLoss().forward_no_reduction(*args).to_numpy()
    request.getfixturevalue("traced")
    got = L.CTCLoss().forward_no_reduction(*args)
    np.testing.assert_allclose(np.asarray(got.primitive), want, rtol=1e-6)


def test_ctc_traces_under_jax_jit():
    import jax

    dev = _jax().device()
    logp, targets, in_len, tg_len = _ctc_args(dev)
    want = L.CTCLoss().forward_no_reduction(logp, targets, in_len, tg_len).to_numpy()

    def f(lp, il, tl):
        return L.CTCLoss().forward_no_reduction(Tensor.from_primitive(lp, dev), targets, Tensor.from_primitive(
            il, dev, Int), Tensor.from_primitive(tl, dev, Int)).primitive

    got = np.asarray(jax.jit(f)(logp.primitive, in_len.primitive, tg_len.primitive))
    np.testing.assert_allclose(got, want, rtol=1e-5)
