"""Float ops (Burn's ``Float`` tensor API) against float64 references from Python's ``math``
module or hand-computed values, on every float dtype, with IEEE edge cases and error cases.

No RuntimeWarning may escape a backend: warnings are errors in this module.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import ember
from ember import Bool, DType, Float, KindError, ShapeError, Tensor
from ember.testing import assert_close, assert_equal

pytestmark = pytest.mark.filterwarnings("error")

INF, NAN = math.inf, math.nan


def vec(fn):
    """A float64 reference from a scalar ``math`` function (independent of the array library)."""
    f = np.vectorize(fn, otypes=[np.float64])

    def ref(*xs):
        xs = [np.asarray(x, dtype=np.float64) for x in xs]
        return f(*xs) if all(x.size for x in xs) else np.zeros(np.broadcast_shapes(*[x.shape for x in xs]))

    return ref


def values_of(t: Tensor) -> np.ndarray:
    """The tensor's values in float64 (inputs rounded to the backend dtype, for references)."""
    return np.asarray(t.to_numpy(), dtype=np.float64)


def make(device, shape, lo, hi, seed=0):
    rng = np.random.default_rng(seed)
    return Tensor.from_data(rng.uniform(lo, hi, size=shape), device)


def _math_round(x):
    return float(round(x))  # Python's round: half to even


# op, reference, input range
UNARY = [
    ("exp", math.exp, (-5.0, 5.0)),
    ("log", math.log, (0.05, 20.0)),
    ("log1p", math.log1p, (-0.9, 5.0)),
    ("sqrt", math.sqrt, (0.0, 20.0)),
    ("square", lambda x: x * x, (-5.0, 5.0)),
    ("sin", math.sin, (-6.0, 6.0)),
    ("cos", math.cos, (-6.0, 6.0)),
    ("tan", math.tan, (-1.3, 1.3)),
    ("sinh", math.sinh, (-3.0, 3.0)),
    ("cosh", math.cosh, (-3.0, 3.0)),
    ("tanh", math.tanh, (-4.0, 4.0)),
    ("asin", math.asin, (-0.99, 0.99)),
    ("acos", math.acos, (-0.99, 0.99)),
    ("atan", math.atan, (-10.0, 10.0)),
    ("asinh", math.asinh, (-5.0, 5.0)),
    ("acosh", math.acosh, (1.0, 10.0)),
    ("atanh", math.atanh, (-0.95, 0.95)),
    ("erf", math.erf, (-4.0, 4.0)),
    ("recip", lambda x: 1.0 / x, (0.5, 4.0)),
    ("floor", math.floor, (-5.0, 5.0)),
    ("ceil", math.ceil, (-5.0, 5.0)),
    ("trunc", math.trunc, (-5.0, 5.0)),
    ("round", _math_round, (-5.0, 5.0)),
    ("deg2rad", math.radians, (-360.0, 360.0)),
    ("rad2deg", math.degrees, (-6.0, 6.0)),
]
UNARY_IDS = [u[0] for u in UNARY]


@pytest.mark.parametrize("name,ref,rng", UNARY, ids=UNARY_IDS)
@pytest.mark.parametrize("shape", [(), (0, 3), (7,), (2, 3, 4)], ids=["rank0", "empty", "1d", "3d"])
def test_unary_against_math(float_device, name, ref, rng, shape):
    t = make(float_device, shape, *rng)
    out = getattr(t, name)()
    assert out.kind is Float and out.dtype is t.dtype and out.shape == shape
    assert_close(out, vec(ref)(values_of(t)))


@pytest.mark.parametrize("name,ref,rng", UNARY, ids=UNARY_IDS)
def test_unary_non_contiguous(float_device, name, ref, rng):
    t = make(float_device, (3, 4, 5), *rng, seed=1).permute([2, 0, 1])
    assert_close(getattr(t, name)(), vec(ref)(values_of(t)))


@pytest.mark.parametrize(
    "name,x,expected",
    [
        ("log", [0.0, -0.0, -1.0, INF, NAN], [-INF, -INF, NAN, INF, NAN]),
        ("log1p", [-1.0, -2.0, INF], [-INF, NAN, INF]),
        ("sqrt", [-1.0, 0.0, -0.0, INF, NAN], [NAN, 0.0, -0.0, INF, NAN]),
        ("exp", [1000.0, -1000.0, INF, -INF, NAN], [INF, 0.0, INF, 0.0, NAN]),
        ("recip", [0.0, -0.0, INF], [INF, -INF, 0.0]),
        ("sin", [INF, -INF, NAN], [NAN, NAN, NAN]),
        ("cos", [INF, NAN], [NAN, NAN]),
        ("tan", [INF, -INF], [NAN, NAN]),
        ("sinh", [1000.0, -1000.0], [INF, -INF]),
        ("cosh", [1000.0, -1000.0], [INF, INF]),
        ("tanh", [1000.0, -1000.0, INF, -INF], [1.0, -1.0, 1.0, -1.0]),
        ("asin", [2.0, -2.0, 1.0], [NAN, NAN, math.pi / 2]),
        ("acos", [2.0, -2.0, -1.0], [NAN, NAN, math.pi]),
        ("atan", [INF, -INF], [math.pi / 2, -math.pi / 2]),
        ("acosh", [0.5, 1.0, INF], [NAN, 0.0, INF]),
        ("atanh", [1.0, -1.0, 2.0], [INF, -INF, NAN]),
        ("erf", [INF, -INF, NAN, 0.0, 10.0, -10.0], [1.0, -1.0, NAN, 0.0, 1.0, -1.0]),
        ("floor", [INF, -INF, NAN, -0.5], [INF, -INF, NAN, -1.0]),
        ("ceil", [INF, NAN, -0.5], [INF, NAN, -0.0]),
        ("trunc", [-INF, NAN, -1.7, 1.7], [-INF, NAN, -1.0, 1.0]),
    ],
)
def test_ieee_edges(float_device, name, x, expected):
    """IEEE 754 results like PyTorch's, and no RuntimeWarning (warnings are errors here)."""
    t = Tensor.from_data(x, float_device)
    assert_close(getattr(t, name)(), np.array(expected))


def test_round_half_to_even(float_device):
    t = Tensor.from_data([0.5, 1.5, 2.5, 3.5, -0.5, -1.5, -2.5, 2.4, -2.6], float_device)
    assert_equal(t.round(), np.array([0.0, 2.0, 2.0, 4.0, -0.0, -2.0, -2.0, 2.0, -3.0]))


def test_erf_float64_accuracy(f64_device):
    """erf to 1e-12 in float64 over the whole range (Python's math.erf as the reference)."""
    x = np.concatenate([np.linspace(-7.0, 7.0, 4001), [1e-300, -1e-20, 0.46875, -0.46875, 4.0, -4.0, 26.0]])
    t = Tensor.from_data(x, f64_device)
    assert_close(t.erf(), vec(math.erf)(x), atol=1e-12, rtol=1e-12)


# ---------------------------------------------------------------------------- binary ops
def test_atan2_quadrants_and_broadcast(float_device):
    y = Tensor.from_data([[1.0, 1.0, -1.0, -1.0, 0.0, 0.0], [2.0, 0.5, -3.0, 0.0, 1.0, -1.0]], float_device)
    x = Tensor.from_data([1.0, -1.0, -1.0, 1.0, -1.0, 0.0], float_device)
    assert_close(y.atan2(x), vec(math.atan2)(values_of(y), values_of(x)))
    assert_close(y.atan2(2.0), vec(math.atan2)(values_of(y), 2.0))


def test_atan2_edges(float_device):
    y = Tensor.from_data([0.0, INF, 1.0, NAN], float_device)
    x = Tensor.from_data([-1.0, INF, 0.0, 1.0], float_device)
    assert_close(y.atan2(x), np.array([math.pi, math.pi / 4, math.pi / 2, NAN]))


def test_powf_tensor_and_scalar(float_device):
    base = make(float_device, (2, 3), 0.1, 3.0)
    exp = make(float_device, (3,), -2.0, 2.0, seed=2)
    assert_close(base.powf(exp), vec(math.pow)(values_of(base), values_of(exp)))
    assert_close(base.powf_scalar(1.5), vec(math.pow)(values_of(base), 1.5))
    assert_close(base.powf(2), values_of(base) ** 2)


def test_powf_ieee(float_device):
    t = Tensor.from_data([-8.0, 0.0, 0.0, 4.0], float_device)
    e = Tensor.from_data([0.5, -1.0, 0.0, 0.5], float_device)
    assert_close(t.powf(e), np.array([NAN, INF, 1.0, 2.0]))


def test_fmod_sign_of_dividend(float_device):
    a = Tensor.from_data([5.5, -5.5, 5.5, -5.5, 3.0, -0.0], float_device)
    b = Tensor.from_data([2.0, 2.0, -2.0, -2.0, 1.5, 1.0], float_device)
    assert_close(a.fmod(b), vec(math.fmod)(values_of(a), values_of(b)))
    assert_close(a.fmod_scalar(2.0), vec(math.fmod)(values_of(a), 2.0))
    assert_close(a.fmod(-2.0), vec(math.fmod)(values_of(a), -2.0))


def test_fmod_broadcast_and_noncontiguous(float_device):
    a = make(float_device, (4, 3), -10.0, 10.0).permute([1, 0])
    b = make(float_device, (1, 4), 0.5, 3.0, seed=3)
    assert_close(a.fmod(b), vec(math.fmod)(values_of(a), values_of(b)))


def test_fmod_ieee(float_device):
    """fmod(x, 0) and fmod(inf, y) are NaN; fmod(x, inf) = x (IEEE, Burn's documented cases)."""
    a = Tensor.from_data([1.0, INF, 2.5, NAN], float_device)
    b = Tensor.from_data([0.0, 2.0, INF, 1.0], float_device)
    assert_close(a.fmod(b), np.array([NAN, NAN, 2.5, NAN]))


BINARY = [("atan2", math.atan2, (-3.0, 3.0)), ("powf", math.pow, (0.2, 3.0)), ("fmod", math.fmod, (0.5, 4.0))]


@pytest.mark.parametrize("name,ref,rng", BINARY, ids=[b[0] for b in BINARY])
@pytest.mark.parametrize(
    "sa,sb",
    [((), ()), ((2, 3), ()), ((), (4,)), ((0, 3), (3,)), ((2, 1, 4), (3, 1)), ((5,), (5,))],
    ids=["rank0", "rank0-rhs", "rank0-lhs", "empty", "broadcast3d", "same"],
)
def test_binary_shapes(float_device, name, ref, rng, sa, sb):
    a = make(float_device, sa, *rng, seed=11)
    b = make(float_device, sb, *rng, seed=12)
    out = getattr(a, name)(b)
    assert out.shape == np.broadcast_shapes(sa, sb) and out.dtype is a.dtype
    assert_close(out, vec(ref)(values_of(a), values_of(b)))


@pytest.mark.parametrize("name,ref,rng", BINARY, ids=[b[0] for b in BINARY])
def test_binary_non_contiguous(float_device, name, ref, rng):
    a = make(float_device, (3, 4, 2), *rng, seed=13).permute([2, 0, 1])
    b = make(float_device, (4, 3), *rng, seed=14).permute([1, 0])
    assert_close(getattr(a, name)(b), vec(ref)(values_of(a), values_of(b)))


@pytest.mark.parametrize("name", ["atan2", "powf", "fmod"])
def test_binary_shape_mismatch(device, name):
    a = Tensor.ones([2, 3], device)
    b = Tensor.ones([4], device)
    with pytest.raises(ShapeError, match=name):
        getattr(a, name)(b)


@pytest.mark.parametrize("name", ["atan2", "powf", "fmod"])
def test_binary_float_with_int(device, name):
    a = Tensor.ones([3], device)
    with pytest.raises(KindError):
        getattr(a, name)(Tensor.from_data([1, 2, 3], device))
    with pytest.raises(KindError, match=name):
        getattr(Tensor.from_data([1, 2, 3], device), name)(a)


# ---------------------------------------------------------------------------- NaN / Inf tests
def test_nan_inf_finite(float_device):
    x = [[NAN, INF, -INF], [0.0, -1.5, 3.0]]
    t = Tensor.from_data(x, float_device)
    nan = np.array([[True, False, False], [False, False, False]])
    inf = np.array([[False, True, True], [False, False, False]])
    for name, exp in [("is_nan", nan), ("is_inf", inf), ("is_finite", ~nan & ~inf)]:
        out = getattr(t, name)()
        assert out.kind is Bool
        assert_equal(out, exp)


def test_nan_tests_rank0_and_empty(float_device):
    assert_equal(Tensor.from_data(NAN, float_device).is_nan(), np.array(True))
    assert Tensor.zeros([0, 2], float_device).is_finite().shape == (0, 2)


def test_contains_nan(float_device):
    assert_equal(Tensor.from_data([[1.0, NAN], [3.0, 4.0]], float_device).contains_nan(), np.array([True]))
    assert_equal(Tensor.from_data([1.0, 2.0], float_device).contains_nan(), np.array([False]))
    # inf + -inf is not a NaN element (a sum-based test would say true)
    assert_equal(Tensor.from_data([INF, -INF], float_device).contains_nan(), np.array([False]))
    out = Tensor.zeros([0], float_device).contains_nan()
    assert out.kind is Bool and out.shape == (1,)
    assert_equal(out, np.array([False]))


# ---------------------------------------------------------------------------- is_close / all_close
def test_is_close_defaults(f64_device):
    a = Tensor.from_data([1.0, 1.0, 1.0, INF, INF, NAN, 0.0, 0.0], f64_device)
    b = Tensor.from_data([1.0 + 5e-6, 1.0 + 2e-5, 1.0 - 1e-3, INF, -INF, NAN, 5e-9, 2e-8], f64_device)
    # |a - b| <= 1e-8 + 1e-5 |b| (Burn's defaults); infinities equal only to themselves; NaN never
    expected = [True, False, False, True, False, False, True, False]
    out = a.is_close(b)
    assert out.kind is Bool
    assert_equal(out, np.array(expected))
    assert not a.all_close(b)


def test_is_close_tolerances(f64_device):
    a = Tensor.from_data([100.0, 100.0, 0.0], f64_device)
    b = Tensor.from_data([101.0, 99.5, 0.5], f64_device)
    # rtol is relative to |other|: |100 - 101| = 1 <= 0.01 * 101, |100 - 99.5| = 0.5 <= 0.995
    assert_equal(a.is_close(b, rtol=0.01, atol=0.0), np.array([True, True, False]))
    assert_equal(a.is_close(b, rtol=0.0, atol=0.5), np.array([False, True, True]))
    assert a.all_close(b, rtol=0.0, atol=1.0) is True


def test_is_close_broadcast_and_dtypes(float_device):
    a = Tensor.from_data([[1.0, 2.0, 3.0], [1.0, 2.5, 3.0]], float_device)
    b = Tensor.from_data([1.0, 2.0, 3.0], float_device)
    assert_equal(a.is_close(b), np.array([[True, True, True], [True, False, True]]))
    assert a.all_close(a)
    assert Tensor.zeros([0, 3], float_device).all_close(Tensor.zeros([0, 3], float_device))


def test_is_close_errors(device):
    a = Tensor.ones([3], device)
    with pytest.raises(KindError, match="is_close"):
        Tensor.from_data([1, 2, 3], device).is_close(a)
    with pytest.raises(KindError):
        a.is_close(Tensor.from_data([1, 2, 3], device))
    with pytest.raises(ShapeError, match="is_close"):
        a.is_close(Tensor.ones([2], device))
    with pytest.raises(TypeError):
        a.is_close(1.0)
    with pytest.raises(ValueError, match="tolerance"):
        a.is_close(a, rtol=-1.0)


# ---------------------------------------------------------------------------- statistics
def _var_ref(x: np.ndarray, dim: int, correction: int) -> tuple[np.ndarray, np.ndarray]:
    n = x.shape[dim]
    mean = x.sum(axis=dim, keepdims=True) / n
    ss = ((x - mean) ** 2).sum(axis=dim, keepdims=True)
    return ss / (n - correction), mean


@pytest.mark.parametrize("shape,dim", [((5,), 0), ((3, 4), 0), ((3, 4), 1), ((3, 4), -1), ((2, 3, 4), 1)])
def test_var_family(float_device, shape, dim):
    t = make(float_device, shape, -3.0, 5.0)
    x = values_of(t)
    v1, m = _var_ref(x, dim, 1)
    v0, _ = _var_ref(x, dim, 0)
    assert_close(t.var(dim), v1)
    assert_close(t.var_bias(dim), v0)
    var, mean = t.var_mean(dim)
    assert_close(var, v1)
    assert_close(mean, m)
    var, mean = t.var_mean_bias(dim)
    assert_close(var, v0)
    assert_close(mean, m)


def test_var_hand_computed(float_device):
    t = Tensor.from_data([[1.0, 2.0, 3.0, 4.0], [2.0, 2.0, 2.0, 2.0]], float_device)
    # mean 2.5, squared deviations 2.25 + 0.25 + 0.25 + 2.25 = 5 -> 5/3 and 5/4
    assert_close(t.var(1), np.array([[5.0 / 3.0], [0.0]]))
    assert_close(t.var_bias(1), np.array([[1.25], [0.0]]))


def test_var_non_contiguous(float_device):
    t = make(float_device, (3, 4, 2), -1.0, 1.0).permute([2, 0, 1])
    assert_close(t.var(2), _var_ref(values_of(t), 2, 1)[0])


def test_var_degenerate(float_device):
    one = Tensor.from_data([[3.0], [4.0]], float_device)
    assert_close(one.var(1), np.array([[NAN], [NAN]]))  # n - 1 = 0: NaN, as PyTorch
    assert_close(one.var_bias(1), np.array([[0.0], [0.0]]))
    assert one.var(0).shape == (1, 1)
    empty = Tensor.zeros([2, 0], float_device)
    assert_close(empty.var(1), np.array([[NAN], [NAN]]))
    assert Tensor.zeros([0, 3], float_device).var(1).shape == (0, 1)


def test_var_errors(device):
    with pytest.raises(KindError, match="var"):
        Tensor.from_data([1, 2, 3], device).var(0)
    with pytest.raises(ember.IndexError, match="var"):
        Tensor.ones([2, 3], device).var(2)


def test_cov_burn_values(float_device):
    # values from Burn's cov tests (crates/burn-tensor/src/tests/stats/cov.rs)
    t = Tensor.from_data([[0.5, 1.8, 0.2, -2.0], [3.0, -4.0, 5.0, 0.0]], float_device)
    assert_close(t.cov(1, 1), np.array([[2.4891667, -1.7333333], [-1.7333333, 15.3333333]]), atol=2e-2, rtol=1e-3)
    assert_close(t.cov(1, 0), np.array([[1.866875, -1.3], [-1.3, 11.5]]), atol=2e-2, rtol=1e-3)


@pytest.mark.parametrize("correction", [0, 1, 2])
def test_cov_formula(float_device, correction):
    t = make(float_device, (3, 6), -2.0, 2.0)
    x = values_of(t)
    c = x - x.mean(axis=1, keepdims=True)
    expected = np.einsum("ik,jk->ij", c, c) / (x.shape[1] - correction)
    assert_close(t.cov(1, correction), expected)
    # observations along dim 0: the transposed layout gives the same matrix
    assert_close(t.swap_dims(0, 1).cov(0, correction), expected)


def test_cov_errors(device):
    with pytest.raises(ShapeError, match="cov"):
        Tensor.ones([2, 3, 4], device).cov(1, 1)
    with pytest.raises(KindError, match="cov"):
        Tensor.from_data([[1, 2], [3, 4]], device).cov(1, 1)
    with pytest.raises(ValueError, match="correction"):
        Tensor.ones([2, 3], device).cov(1, -1)
    assert_close(Tensor.ones([2, 1], device).cov(1, 1), np.full((2, 2), NAN))


# ---------------------------------------------------------------------------- cross
def _cross_ref(a: np.ndarray, b: np.ndarray, dim: int) -> np.ndarray:
    a, b = np.moveaxis(a, dim, -1), np.moveaxis(b, dim, -1)
    a, b = np.broadcast_arrays(a, b)
    out = np.stack(
        [
            a[..., 1] * b[..., 2] - a[..., 2] * b[..., 1],
            a[..., 2] * b[..., 0] - a[..., 0] * b[..., 2],
            a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0],
        ],
        axis=-1,
    )
    return np.moveaxis(out, -1, dim)


def test_cross_basis(float_device):
    e = Tensor.from_data([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]], float_device)
    rolled = Tensor.from_data([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]], float_device)
    # x × y = z, y × z = x, z × x = y
    assert_close(e.cross(rolled, 1), np.array([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]))
    assert_close(e.cross(rolled, -1), np.array([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]))


@pytest.mark.parametrize(
    "sa,sb,dim", [((4, 3), (4, 3), 1), ((4, 3), (1, 3), -1), ((3, 5), (3, 1), 0), ((2, 3, 2), (2, 3, 2), 1)]
)
def test_cross_shapes(float_device, sa, sb, dim):
    a = make(float_device, sa, -2.0, 2.0)
    b = make(float_device, sb, -2.0, 2.0, seed=5)
    assert_close(a.cross(b, dim), _cross_ref(values_of(a), values_of(b), dim))


def test_cross_errors(device):
    a = Tensor.ones([2, 3], device)
    with pytest.raises(ShapeError, match="cross"):
        a.cross(Tensor.ones([2, 4], device), 1)
    with pytest.raises(ShapeError, match="cross"):
        a.cross(a, 0)
    with pytest.raises(ShapeError, match="cross"):
        a.cross(Tensor.ones([3], device), 1)
    with pytest.raises(KindError, match="cross"):
        Tensor.from_data([[1, 2, 3]], device).cross(a, 1)
    with pytest.raises(ember.IndexError, match="cross"):
        a.cross(a, 2)


# ---------------------------------------------------------------------------- kind errors
FLOAT_ONLY = [n for n in UNARY_IDS] + ["is_nan", "is_inf", "is_finite", "contains_nan"]


@pytest.mark.parametrize("name", FLOAT_ONLY)
def test_float_only_unary_on_int(device, name):
    t = Tensor.from_data([1, 2, 3], device)
    with pytest.raises(KindError, match=name):
        getattr(t, name)()


@pytest.mark.parametrize("name", ["exp", "log", "is_nan", "round"])
def test_float_only_unary_on_bool(device, name):
    with pytest.raises(KindError, match=name):
        getattr(Tensor.from_data([True, False], device), name)()


def test_results_keep_backend_dtype(float_device):
    t = Tensor.from_data([0.25, 0.5], float_device)
    for name in ("exp", "erf", "round", "sqrt", "atanh"):
        assert getattr(t, name)().dtype is float_device.backend.float_dtype
    assert t.var(0).dtype is float_device.backend.float_dtype
    assert t.is_nan().dtype is DType.BOOL
