"""``ember.tensor.activation`` against float64 references written from the formulas of PyTorch's
documentation (torch.nn.functional.*), with Python's ``math`` module; numerical stability at
large ``|x|``, ``-inf`` logits, and every error case. Warnings are errors in this module.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import ember
from ember import Float, KindError, ShapeError, Tensor
from ember.tensor import activation as A
from ember.testing import assert_close

pytestmark = pytest.mark.filterwarnings("error")

INF, NAN = math.inf, math.nan
SELU_ALPHA = 1.6732632423543772848170429916717  # PyTorch SELU doc
SELU_SCALE = 1.0507009873554804934193349852946


def vec(fn):
    f = np.vectorize(fn, otypes=[np.float64])

    def ref(x):
        x = np.asarray(x, dtype=np.float64)
        return f(x) if x.size else np.zeros(x.shape)

    return ref


def values_of(t):
    return np.asarray(t.to_numpy(), dtype=np.float64)


def make(device, shape, lo=-4.0, hi=4.0, seed=0):
    return Tensor.from_data(np.random.default_rng(seed).uniform(lo, hi, size=shape), device)


# ---------------------------------------------------------------------------- scalar references
def _sigmoid(x):  # Sigmoid(x) = 1 / (1 + exp(-x)), written to avoid overflow in the reference
    return 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))


def _softplus(x, beta=1.0):  # Softplus(x) = 1/beta * log(1 + exp(beta * x))
    z = beta * x
    return (max(z, 0.0) + math.log1p(math.exp(-abs(z)))) / beta


def _gelu(x):  # GELU(x) = x * Phi(x), Phi the standard normal CDF
    return x * 0.5 * math.erfc(-x / math.sqrt(2.0))


def _gelu_tanh(x):  # 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
    return 0.5 * x * (1.0 + math.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


def _hardsigmoid(x, a=0.2, b=0.5):
    return min(1.0, max(0.0, a * x + b))


ELEMENTWISE = [
    ("relu", A.relu, lambda x: max(0.0, x)),
    ("leaky_relu", lambda t: A.leaky_relu(t, 0.1), lambda x: x if x >= 0 else 0.1 * x),
    ("leaky_relu_default", A.leaky_relu, lambda x: x if x >= 0 else 0.01 * x),
    ("gelu", A.gelu, _gelu),
    ("gelu_approx_tanh", lambda t: A.gelu(t, approximate="tanh"), _gelu_tanh),
    ("gelu_tanh", A.gelu_tanh, _gelu_tanh),
    ("gelu_approximate", A.gelu_approximate, _gelu_tanh),
    ("sigmoid", A.sigmoid, _sigmoid),
    ("hard_sigmoid", A.hard_sigmoid, _hardsigmoid),
    ("hard_sigmoid_torch", lambda t: A.hard_sigmoid(t, 1 / 6, 0.5), lambda x: min(1.0, max(0.0, x / 6 + 0.5))),
    ("log_sigmoid", A.log_sigmoid, lambda x: -_softplus(-x)),
    ("silu", A.silu, lambda x: x * _sigmoid(x)),
    ("mish", A.mish, lambda x: x * math.tanh(_softplus(x))),
    ("softplus", A.softplus, _softplus),
    ("softplus_beta", lambda t: A.softplus(t, 2.0), lambda x: _softplus(x, 2.0)),
    ("softsign", A.softsign, lambda x: x / (1.0 + abs(x))),
    ("tanh", A.tanh, math.tanh),
    ("elu", A.elu, lambda x: x if x > 0 else math.exp(x) - 1.0),
    ("elu_alpha", lambda t: A.elu(t, 0.5), lambda x: x if x > 0 else 0.5 * (math.exp(x) - 1.0)),
    # max(0, x) + min(0, a * (exp(x / a) - 1)), the min term evaluated only where it is not 0
    ("celu", lambda t: A.celu(t, 2.0), lambda x: x if x > 0 else 2.0 * (math.exp(x / 2.0) - 1.0)),
    ("selu", A.selu, lambda x: SELU_SCALE * (x if x > 0 else SELU_ALPHA * (math.exp(x) - 1.0))),
    ("hard_swish", A.hard_swish, lambda x: x * min(max(x + 3.0, 0.0), 6.0) / 6.0),
    ("relu6", A.relu6, lambda x: min(max(0.0, x), 6.0)),
    ("hardtanh", A.hardtanh, lambda x: min(max(-1.0, x), 1.0)),
    ("tanhshrink", A.tanhshrink, lambda x: x - math.tanh(x)),
]
EW_IDS = [e[0] for e in ELEMENTWISE]


@pytest.mark.parametrize("name,fn,ref", ELEMENTWISE, ids=EW_IDS)
@pytest.mark.parametrize("shape", [(), (0, 2), (9,), (2, 3, 4)], ids=["rank0", "empty", "1d", "3d"])
def test_elementwise(float_device, name, fn, ref, shape):
    t = make(float_device, shape, -7.0, 7.0)
    out = fn(t)
    assert out.kind is Float and out.shape == shape and out.dtype is t.dtype
    assert_close(out, vec(ref)(values_of(t)))


@pytest.mark.parametrize("name,fn,ref", ELEMENTWISE, ids=EW_IDS)
def test_elementwise_non_contiguous_and_points(float_device, name, fn, ref):
    t = make(float_device, (4, 3, 2), -3.0, 3.0, seed=3).permute([2, 0, 1])
    assert_close(fn(t), vec(ref)(values_of(t)))
    # exact kink points and small values
    p = Tensor.from_data([0.0, -0.0, 1e-3, -1e-3, 3.0, -3.0, 6.0, 0.5, -0.5], float_device)
    assert_close(fn(p), vec(ref)(values_of(p)))


@pytest.mark.parametrize("name,fn,ref", ELEMENTWISE, ids=EW_IDS)
def test_elementwise_large_inputs(float_device, name, fn, ref):
    """No overflow, no NaN and exact limits at large |x| (1000 fits every float dtype)."""
    t = Tensor.from_data([-1000.0, -100.0, -30.0, 30.0, 100.0, 1000.0], float_device)
    out = fn(t)
    assert not out.is_nan().any().into_scalar()
    assert_close(out, vec(ref)(values_of(t)))


@pytest.mark.parametrize("name,fn,ref", ELEMENTWISE, ids=EW_IDS)
def test_elementwise_nan_propagates(float_device, name, fn, ref):
    out = fn(Tensor.from_data([NAN, 1.0], float_device)).to_numpy()
    assert np.isnan(out[0]) and not np.isnan(out[1])


def test_stability_limits(float_device):
    t = Tensor.from_data([-1000.0, 1000.0], float_device)
    assert_close(A.sigmoid(t), np.array([0.0, 1.0]))
    assert_close(A.log_sigmoid(t), np.array([-1000.0, 0.0]))
    assert_close(A.softplus(t), np.array([0.0, 1000.0]))
    assert_close(A.tanh(t), np.array([-1.0, 1.0]))
    assert_close(A.mish(t), np.array([0.0, 1000.0]))
    assert_close(A.elu(t), np.array([-1.0, 1000.0]))
    assert_close(A.selu(t), np.array([-SELU_ALPHA * SELU_SCALE, SELU_SCALE * 1000.0]))
    assert_close(A.gelu(t), np.array([0.0, 1000.0]))
    assert_close(A.silu(t), np.array([0.0, 1000.0]))


def test_gelu_far_tail_float64(f64_device):
    """x * Phi(x) for very negative x: tiny but correct (computing 1 + erf(x/sqrt2) would lose it)."""
    x = np.array([-5.0, -8.0, -10.0, -20.0])
    out = A.gelu(Tensor.from_data(x, f64_device))
    assert_close(out, vec(_gelu)(x), atol=1e-300, rtol=1e-9)


# ---------------------------------------------------------------------------- prelu
def test_prelu_channels(float_device):
    x = make(float_device, (2, 3, 4))
    alpha = Tensor.from_data([0.1, 0.2, 0.3], float_device)
    xv, av = values_of(x), values_of(alpha).reshape(1, 3, 1)
    assert_close(A.prelu(x, alpha), np.where(xv >= 0, xv, av * xv))


def test_prelu_single_weight(float_device):
    for shape in [(), (5,), (2, 3), (2, 3, 2, 2)]:
        x = make(float_device, shape)
        alpha = Tensor.from_data([0.25], float_device)
        xv = values_of(x)
        assert_close(A.prelu(x, alpha), np.where(xv >= 0, xv, 0.25 * xv))


def test_prelu_errors(device):
    x = Tensor.ones([2, 3, 4], device)
    with pytest.raises(ShapeError, match="prelu"):
        A.prelu(x, Tensor.ones([4], device))
    with pytest.raises(ShapeError, match="prelu"):
        A.prelu(x, Tensor.ones([1, 3], device))
    with pytest.raises(ShapeError, match="prelu"):
        A.prelu(Tensor.ones([3], device), Tensor.ones([3], device))
    with pytest.raises(KindError):
        A.prelu(x, Tensor.from_data([1, 2, 3], device))
    with pytest.raises(TypeError):
        A.prelu(x, 0.25)


# ---------------------------------------------------------------------------- softmax family
def _softmax_ref(x, dim):
    m = x.max(axis=dim, keepdims=True)
    e = np.exp(x - m)
    return e / e.sum(axis=dim, keepdims=True)


def _quiet_ref(x, dim):
    # exp(x_i) / (1 + sum_j exp(x_j)), with an explicit zero logit appended
    z = np.concatenate([x, np.zeros_like(x.take([0], axis=dim))], axis=dim)
    return np.delete(_softmax_ref(z, dim), -1, axis=dim)


SOFTMAXES = [
    ("softmax", A.softmax, _softmax_ref),
    ("log_softmax", A.log_softmax, lambda x, d: np.log(_softmax_ref(x, d))),
    ("softmin", A.softmin, lambda x, d: _softmax_ref(-x, d)),
    ("quiet_softmax", A.quiet_softmax, _quiet_ref),
]
SM_IDS = [s[0] for s in SOFTMAXES]


@pytest.mark.parametrize("name,fn,ref", SOFTMAXES, ids=SM_IDS)
@pytest.mark.parametrize("shape,dim", [((5,), 0), ((3, 4), 1), ((3, 4), 0), ((2, 3, 4), -1), ((2, 3, 4), 1)])
def test_softmax_family(float_device, name, fn, ref, shape, dim):
    t = make(float_device, shape, -5.0, 5.0)
    out = fn(t, dim)
    assert out.shape == shape and out.dtype is t.dtype
    assert_close(out, ref(values_of(t), dim))


@pytest.mark.parametrize("name,fn,ref", SOFTMAXES, ids=SM_IDS)
def test_softmax_family_non_contiguous(float_device, name, fn, ref):
    t = make(float_device, (3, 4, 5), seed=7).permute([1, 2, 0])
    assert_close(fn(t, 1), ref(values_of(t), 1))


def test_softmax_sums_to_one(float_device):
    out = A.softmax(make(float_device, (4, 7), -10.0, 10.0), -1).to_numpy().astype(np.float64)
    tol = {ember.DType.FLOAT16: 5e-3, ember.DType.BFLOAT16: 3e-2}.get(float_device.backend.float_dtype, 1e-5)
    np.testing.assert_allclose(out.sum(axis=-1), 1.0, atol=tol)


def test_softmax_large_logits(float_device):
    t = Tensor.from_data([[1000.0, 0.0, -1000.0], [1000.0, 1000.0, -1000.0]], float_device)
    assert_close(A.softmax(t, 1), np.array([[1.0, 0.0, 0.0], [0.5, 0.5, 0.0]]))
    ln2 = math.log(2)
    assert_close(A.log_softmax(t, 1), np.array([[0.0, -1000.0, -2000.0], [-ln2, -ln2, -2000.0 - ln2]]))
    assert_close(A.quiet_softmax(t, 1), np.array([[1.0, 0.0, 0.0], [0.5, 0.5, 0.0]]))
    assert_close(A.softmin(t, 1), np.array([[0.0, 0.0, 1.0], [0.0, 0.0, 1.0]]))
    neg = Tensor.from_data([[-1000.0, -1000.0]], float_device)
    assert_close(A.softmax(neg, 1), np.array([[0.5, 0.5]]))
    assert_close(A.quiet_softmax(neg, 1), np.array([[0.0, 0.0]]))


def test_softmax_neg_inf_entries(float_device):
    """-inf logits (attention masks) get probability 0 / log-probability -inf; a row of only -inf
    has no distribution: NaN for softmax and log_softmax (PyTorch's result), zeros for quiet_softmax."""
    t = Tensor.from_data([[0.0, -INF, 0.0], [-INF, -INF, -INF], [-INF, 2.0, -INF]], float_device)
    assert_close(A.softmax(t, 1), np.array([[0.5, 0.0, 0.5], [NAN, NAN, NAN], [0.0, 1.0, 0.0]]))
    assert_close(
        A.log_softmax(t, 1), np.array([[-math.log(2), -INF, -math.log(2)], [NAN, NAN, NAN], [-INF, 0.0, -INF]])
    )
    e2 = math.exp(2.0)
    assert_close(
        A.quiet_softmax(t, 1), np.array([[1 / 3, 0.0, 1 / 3], [0.0, 0.0, 0.0], [0.0, e2 / (1 + e2), 0.0]])
    )


def test_softmax_rank0_and_empty(float_device):
    s = Tensor.from_data(2.5, float_device)
    with pytest.raises(ember.IndexError):
        A.softmax(s, 0)
    for fn in (A.softmax, A.log_softmax, A.softmin, A.quiet_softmax):
        assert fn(Tensor.zeros([2, 0], float_device), 1).shape == (2, 0)
        assert fn(Tensor.zeros([0, 3], float_device), 1).shape == (0, 3)
    assert_close(A.softmax(Tensor.from_data([[3.0]], float_device), 1), np.array([[1.0]]))


# ---------------------------------------------------------------------------- glu
@pytest.mark.parametrize("shape,dim", [((4,), 0), ((3, 6), -1), ((4, 3), 0), ((2, 4, 3), 1)])
def test_glu(float_device, shape, dim):
    t = make(float_device, shape)
    x = values_of(t)
    a, b = np.split(x, 2, axis=dim)
    out = A.glu(t, dim)
    assert_close(out, a * vec(_sigmoid)(b))
    assert out.shape[dim] == shape[dim] // 2


def test_glu_errors(device):
    with pytest.raises(ShapeError, match="glu"):
        A.glu(Tensor.ones([2, 3], device), -1)
    with pytest.raises(ember.IndexError, match="glu"):
        A.glu(Tensor.ones([2, 4], device), 2)


# ---------------------------------------------------------------------------- errors
ALL = [(n, f) for n, f, _ in ELEMENTWISE if n in A.__all__] + [
    ("softmax", lambda t: A.softmax(t, 0)),
    ("log_softmax", lambda t: A.log_softmax(t, 0)),
    ("softmin", lambda t: A.softmin(t, 0)),
    ("quiet_softmax", lambda t: A.quiet_softmax(t, 0)),
    ("glu", lambda t: A.glu(t, 0)),
    ("prelu", lambda t: A.prelu(t, Tensor.ones([1], t.device))),
]


@pytest.mark.parametrize("name,fn", ALL, ids=[a[0] for a in ALL])
def test_int_input_raises_kind_error(device, name, fn):
    with pytest.raises(KindError, match=name):
        fn(Tensor.from_data([1, 2, 3, 4], device))
    with pytest.raises(KindError, match=name):
        fn(Tensor.from_data([True, False], device))


def test_every_public_function_is_tested():
    tested = {n for n, _ in ALL}
    assert set(A.__all__) <= tested


def test_argument_errors(device):
    t = Tensor.ones([2, 4], device)
    with pytest.raises(ValueError, match="approximate"):
        A.gelu(t, approximate="erf")
    with pytest.raises(ValueError, match="alpha"):
        A.celu(t, 0.0)
    with pytest.raises(ValueError, match="beta"):
        A.softplus(t, 0.0)
    with pytest.raises(ValueError, match="hardtanh"):
        A.hardtanh(t, 1.0, -1.0)
    with pytest.raises(ember.IndexError, match="softmax"):
        A.softmax(t, -3)
    with pytest.raises(TypeError):
        A.relu(np.ones(3))


# ---------------------------------------------------------------------------- gradients (Autodiff)
# points away from every kink (0, ±1, ±2.5, ±3, 6), so central differences are exact enough
GRID = np.array([[-3.7, -2.2, -1.3, -0.6], [-0.15, 0.2, 0.7, 1.4], [2.3, 3.6, 4.4, 6.8]])
GRAD_CASES = [(n, f) for n, f, _ in ELEMENTWISE] + [
    ("softmax", lambda t: A.softmax(t, 1)),
    ("log_softmax", lambda t: A.log_softmax(t, 0)),
    ("softmin", lambda t: A.softmin(t, 1)),
    ("quiet_softmax", lambda t: A.quiet_softmax(t, 1)),
    ("glu", lambda t: A.glu(t, 1)),
]


@pytest.mark.parametrize("name,fn", GRAD_CASES, ids=[g[0] for g in GRAD_CASES])
def test_gradcheck(ad_device, name, fn):
    """Every activation is differentiable under Autodiff: gradients match central differences."""
    from ember.autodiff import gradcheck

    gradcheck(fn, [GRID], ad_device, eps=1e-6, atol=1e-6, rtol=1e-5)


def test_gradcheck_prelu(ad_device):
    from ember.autodiff import gradcheck

    x = np.concatenate([GRID, -GRID]).reshape(2, 4, 3)  # [batch, channels, length]
    gradcheck(lambda t, a: A.prelu(t, a), [x, np.array([0.1, -0.2, 0.3, 0.5])], ad_device)


# d/dx at large |x|: the exact limits, never NaN from an overflowing unused branch
LIMIT_GRADS = [
    ("sigmoid", A.sigmoid, [0.0, 0.0]),
    ("log_sigmoid", A.log_sigmoid, [1.0, 0.0]),
    ("softplus", A.softplus, [0.0, 1.0]),
    ("silu", A.silu, [0.0, 1.0]),
    ("mish", A.mish, [0.0, 1.0]),
    ("elu", A.elu, [0.0, 1.0]),
    ("celu", A.celu, [0.0, 1.0]),
    ("selu", A.selu, [0.0, SELU_SCALE]),
    ("gelu", A.gelu, [0.0, 1.0]),
    ("tanh", A.tanh, [0.0, 0.0]),
    ("softsign", A.softsign, [1 / 1001**2, 1 / 1001**2]),  # 1 / (1 + |x|)^2
]


@pytest.mark.parametrize("name,fn,expected", LIMIT_GRADS, ids=[g[0] for g in LIMIT_GRADS])
def test_gradient_limits(ad_device, name, fn, expected):
    x = Tensor.from_data([-1000.0, 1000.0], ad_device).require_grad()
    g = x.grad(fn(x).sum().backward())
    assert_close(g, np.array(expected), atol=1e-9)


def test_softmax_gradient_with_neg_inf_logits(ad_device):
    """A masked (-inf) logit gets zero gradient and the others stay finite."""
    x = Tensor.from_data([[0.5, -INF, 1.5]], ad_device).require_grad()
    w = Tensor.from_data([[1.0, 2.0, 3.0]], ad_device)
    g = x.grad((A.softmax(x, 1) * w).sum().backward()).to_numpy()
    s = np.exp([0.5, 1.5]) / np.exp([0.5, 1.5]).sum()
    # d/dx_i sum_k w_k s_k = s_i (w_i - sum_k w_k s_k)
    mean_w = 1.0 * s[0] + 3.0 * s[1]
    np.testing.assert_allclose(g, [[s[0] * (1.0 - mean_w), 0.0, s[1] * (3.0 - mean_w)]], rtol=1e-9, atol=1e-12)
