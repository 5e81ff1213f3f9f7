"""Element-wise numeric ops (add, sub, mul, div, remainder, max_pair, min_pair, neg, abs, sign,
powi, clamp), matmul and dot, against numpy float64 / int64 references, with their errors."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import Bool, Float, Int, Tensor
from ember.testing import assert_close, assert_equal

from ._numeric_helpers import BROADCAST, MISMATCH, SHAPES, dtype_of, held, noncontig, tensor, values

pytestmark = pytest.mark.filterwarnings("error")

# Python's rules for Int division/remainder (floor; sign of the divisor), true division for Float
FLOAT_REF = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": np.true_divide,
    "remainder": np.remainder,
    "max_pair": np.maximum,
    "min_pair": np.minimum,
}
INT_REF = {**FLOAT_REF, "div": np.floor_divide}
DIVISORS = ("div", "remainder")


# ---------------------------------------------------------------- binary ops, tensor with tensor
@pytest.mark.parametrize("op", list(FLOAT_REF))
@pytest.mark.parametrize("sa,sb", BROADCAST, ids=str)
def test_binary_float(float_device, op, sa, sb):
    a = tensor(values(sa, Float, 1), float_device)
    b = tensor(values(sb, Float, 2, nonzero=op in DIVISORS), float_device)
    out = getattr(a, op)(b)
    assert out.kind is Float and out.dtype is dtype_of(float_device, Float)
    assert_close(out, FLOAT_REF[op](held(a), held(b)))


@pytest.mark.parametrize("op", list(INT_REF))
@pytest.mark.parametrize("sa,sb", BROADCAST, ids=str)
def test_binary_int(int_device, op, sa, sb):
    a = tensor(values(sa, Int, 1), int_device)
    b = tensor(values(sb, Int, 2, nonzero=op in DIVISORS), int_device)
    out = getattr(a, op)(b)
    assert out.kind is Int and out.dtype is dtype_of(int_device, Int)
    assert_equal(out, INT_REF[op](held(a), held(b)))


@pytest.mark.parametrize("op", list(FLOAT_REF))
def test_binary_non_contiguous(float_device, op):
    x, y = values((2, 3, 4), Float, 3), values((2, 3, 4), Float, 4, nonzero=op in DIVISORS)
    out = getattr(noncontig(x, float_device), op)(noncontig(y, float_device))
    assert_close(out, FLOAT_REF[op](x, y))


def test_inputs_are_not_mutated(float_device):
    x = values((3, 4), Float, 5)
    a, b = tensor(x, float_device), tensor(x, float_device)
    for op in FLOAT_REF:
        getattr(a, op)(b)
    a.neg(), a.abs(), a.clamp(-1.0, 1.0), a.powi(2)
    assert_close(a, x)
    assert_close(b, x)


# ---------------------------------------------------------------- scalar operands, _scalar names
@pytest.mark.parametrize("op", list(FLOAT_REF))
@pytest.mark.parametrize("scalar", [2.0, 2, -0.5, True], ids=repr)
def test_binary_float_scalar(float_device, op, scalar):
    x = values((2, 3), Float, 6)
    out = getattr(tensor(x, float_device), op)(scalar)
    assert out.dtype is dtype_of(float_device, Float)
    assert_close(out, FLOAT_REF[op](x, float(scalar)))


@pytest.mark.parametrize("op", list(INT_REF))
@pytest.mark.parametrize("scalar", [3, -2, 4.0], ids=repr)
def test_binary_int_scalar(int_device, op, scalar):
    x = values((2, 3), Int, 7)
    out = getattr(tensor(x, int_device), op)(scalar)
    assert out.kind is Int and out.dtype is dtype_of(int_device, Int)
    assert_equal(out, INT_REF[op](x, int(scalar)))


@pytest.mark.parametrize("name,op", [("add_scalar", "add"), ("sub_scalar", "sub"), ("mul_scalar", "mul"),
                                     ("div_scalar", "div"), ("remainder_scalar", "remainder")])
def test_scalar_names(device, name, op):
    x = values((4,), Float, 8)
    assert_close(getattr(tensor(x, device), name)(-2.0), FLOAT_REF[op](x, -2.0))


# ---------------------------------------------------------------- division semantics
def test_int_div_floors_toward_negative_infinity(int_device):
    a = tensor([7, -7, 7, -7, 0], int_device)
    b = tensor([2, 2, -2, -2, 3], int_device)
    assert_equal(a.div(b), [3, -4, -4, 3, 0])
    assert_equal(a.remainder(b), [1, 1, -1, -1, 0])
    assert_equal(a.div(b).mul(b).add(a.remainder(b)), [7, -7, 7, -7, 0])


def test_int_division_by_zero_is_zero(int_device):
    a = tensor([5, -5, 0], int_device)
    assert_equal(a.div(0), [0, 0, 0])
    assert_equal(a.remainder(0), [0, 0, 0])
    assert_equal(a.div(tensor([0, 0, 0], int_device)), [0, 0, 0])


def test_float_division_by_zero_is_ieee(float_device):
    a = tensor([1.0, -1.0, 0.0], float_device)
    assert_close(a.div(0.0), [np.inf, -np.inf, np.nan])
    assert_close(a.remainder(0.0), [np.nan, np.nan, np.nan])


def test_float_remainder_sign_of_divisor(float_device):
    a = tensor([5.5, -5.5, 5.5, -5.5], float_device)
    assert_close(a.remainder(tensor([2.0, 2.0, -2.0, -2.0], float_device)), [1.5, 0.5, -0.5, -1.5])


def test_float_overflow_is_silent(float_device):
    big = float(np.finfo(float_device.backend.float_dtype.to_numpy()).max) if \
        float_device.backend.float_dtype.value != "bfloat16" else 3.0e38
    a = tensor([big, -big], float_device)
    assert_close(a.mul(4.0), [np.inf, -np.inf])
    assert_close(a.mul(4.0).add(a.mul(-4.0)), [np.nan, np.nan])


# ---------------------------------------------------------------- unary
UNARY = [("neg", np.negative), ("abs", np.abs), ("sign", np.sign)]


@pytest.mark.parametrize("op,ref", UNARY)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_unary_float(float_device, op, ref, shape):
    t = tensor(values(shape, Float, 9), float_device)
    out = getattr(t, op)()
    assert out.kind is Float and out.dtype is dtype_of(float_device, Float)
    assert_close(out, ref(held(t)))


@pytest.mark.parametrize("op,ref", UNARY)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_unary_int(int_device, op, ref, shape):
    t = tensor(values(shape, Int, 9), int_device)
    out = getattr(t, op)()
    assert out.kind is Int and out.dtype is dtype_of(int_device, Int)
    assert_equal(out, ref(held(t)))


def test_sign_of_nan_zero(float_device):
    assert_close(tensor([np.nan, 0.0, -0.0, -3.0, np.inf], float_device).sign(), [np.nan, 0.0, 0.0, -1.0, 1.0])


def test_unary_non_contiguous(device):
    x = values((2, 3, 4), Float, 10)
    assert_close(noncontig(x, device).neg(), -x)
    assert_close(noncontig(x, device).abs(), np.abs(x))


# ---------------------------------------------------------------- powi
@pytest.mark.parametrize("exponent", [0, 1, 2, 3])
def test_powi_float_scalar(float_device, exponent):
    x = values((2, 3), Float, 11) / 2
    assert_close(tensor(x, float_device).powi(exponent), x**exponent, rtol=2e-2)
    assert_close(tensor(x, float_device).powi_scalar(exponent), x**exponent, rtol=2e-2)


def test_powi_float_negative_exponent(float_device):
    assert_close(tensor([2.0, -4.0, 0.5], float_device).powi(-1), [0.5, -0.25, 2.0])


def test_powi_int(int_device):
    a = tensor([[2, -3, 0, 1, -1]], int_device)
    e = tensor([[3], [0], [2]], int_device)
    assert_equal(a.powi(e), np.array([[2, -3, 0, 1, -1]]) ** np.array([[3], [0], [2]]))
    # negative exponents: truncated real power (1, +-1 for base -1, 0 otherwise)
    assert_equal(a.powi(-1), [[0, 0, 0, 1, -1]])
    assert_equal(a.powi(-2), [[0, 0, 0, 1, 1]])


def test_powi_float_base_int_tensor_exponent(float_device):
    x = values((3,), Float, 12)
    e = np.array([0, 1, 2])
    assert_close(tensor(x, float_device).powi(tensor(e, float_device)), x**e)


@pytest.mark.parametrize("bad", [2.5, "2"], ids=repr)
def test_powi_rejects_non_integral_exponent(device, bad):
    with pytest.raises((ember.KindError, TypeError), match="powi"):
        tensor([1.0, 2.0], device).powi(bad)


def test_powi_rejects_float_exponent_tensor(device):
    with pytest.raises(ember.KindError, match="powi"):
        tensor([1.0, 2.0], device).powi(tensor([1.0, 2.0], device))


# ---------------------------------------------------------------- clamp
def test_clamp_float(float_device):
    x = values((2, 3, 4), Float, 13)
    t = tensor(x, float_device)
    assert_close(t.clamp(-1.5, 2.0), np.clip(x, -1.5, 2.0))
    assert_close(t.clamp_min(0.25), np.maximum(x, 0.25))
    assert_close(t.clamp_max(-0.5), np.minimum(x, -0.5))
    assert_close(t.clamp(min=1.0), np.maximum(x, 1.0))
    assert_close(t.clamp(max=1.0), np.minimum(x, 1.0))


def test_clamp_int(int_device):
    x = values((3, 4), Int, 14)
    t = tensor(x, int_device)
    assert_equal(t.clamp(-2, 3), np.clip(x, -2, 3))
    assert_equal(t.clamp(-2.0, 3.0), np.clip(x, -2, 3))
    assert_equal(t.clamp_min(0), np.maximum(x, 0))
    assert_equal(t.clamp_max(0), np.minimum(x, 0))
    assert t.clamp(-2, 3).dtype is dtype_of(int_device, Int)


def test_clamp_nan_and_inverted_bounds(float_device):
    t = tensor([np.nan, -5.0, 5.0], float_device)
    assert_close(t.clamp(-1.0, 1.0), [np.nan, -1.0, 1.0])
    # min > max: every element becomes max (torch.clamp)
    assert_close(tensor([0.0, 5.0, -5.0], float_device).clamp(2.0, 1.0), [1.0, 1.0, 1.0])


def test_clamp_errors(device, int_device):
    with pytest.raises(ember.KindError, match="clamp"):
        tensor([1, 2], int_device).clamp(0.5, 2)
    with pytest.raises(ember.KindError, match="clamp_min"):
        tensor([True, False], device).clamp_min(0)
    with pytest.raises(TypeError, match="clamp"):
        tensor([1.0], device).clamp()


# ---------------------------------------------------------------- max_pair / min_pair
def test_max_min_pair_nan_propagates(float_device):
    a = tensor([np.nan, 1.0, 2.0], float_device)
    b = tensor([0.0, np.nan, -2.0], float_device)
    assert_close(a.max_pair(b), [np.nan, np.nan, 2.0])
    assert_close(a.min_pair(b), [np.nan, np.nan, -2.0])


# ---------------------------------------------------------------- errors
BINARY = ["add", "sub", "mul", "div", "remainder", "max_pair", "min_pair", "greater", "lower",
          "greater_equal", "lower_equal"]


@pytest.mark.parametrize("op", BINARY)
def test_bool_arithmetic_is_a_kind_error(device, op):
    b = tensor([True, False], device)
    with pytest.raises(ember.KindError, match=op):
        getattr(b, op)(b)
    with pytest.raises(ember.KindError, match=op):
        getattr(b, op)(1)


@pytest.mark.parametrize("op", ["neg", "abs", "sign"])
def test_bool_unary_is_a_kind_error(device, op):
    with pytest.raises(ember.KindError, match=op):
        getattr(tensor([True, False], device), op)()


@pytest.mark.parametrize("op", BINARY + ["equal", "not_equal"])
def test_mixing_kinds_is_a_kind_error(device, op):
    f = tensor([1.0, 2.0], device)
    i = tensor([1, 2], device)
    with pytest.raises(ember.KindError, match=op) as e1:
        getattr(f, op)(i)
    with pytest.raises(ember.KindError, match=op):
        getattr(i, op)(f)
    assert "Float" in str(e1.value) and "Int" in str(e1.value)


@pytest.mark.parametrize("op", BINARY)
def test_int_with_non_integral_scalar_is_a_kind_error(device, op):
    with pytest.raises(ember.KindError, match=op):
        getattr(tensor([1, 2], device), op)(2.5)


@pytest.mark.parametrize("op", BINARY + ["equal", "not_equal"])
@pytest.mark.parametrize("sa,sb", MISMATCH, ids=str)
def test_broadcast_mismatch_is_a_shape_error(device, op, sa, sb):
    a, b = tensor(np.ones(sa), device), tensor(np.ones(sb), device)
    with pytest.raises(ember.ShapeError, match=op) as exc:
        getattr(a, op)(b)
    assert str(list(sa)) in str(exc.value) and str(list(sb)) in str(exc.value)


def test_mixing_backends_or_devices_is_a_device_error(device):
    other = ember.backend(device.backend.name, float_dtype="float64").device()
    if other is device:  # pragma: no cover - same backend instance
        pytest.skip("no second device available")
    with pytest.raises(ember.DeviceError, match="add"):
        tensor([1.0], device).add(tensor([1.0], other))


# ---------------------------------------------------------------- matmul
MATMUL = [
    ((3, 4), (4, 5)),
    ((1, 1), (1, 1)),
    ((2, 3, 4), (2, 4, 5)),
    ((2, 1, 3, 4), (5, 4, 2)),
    ((3, 4), (2, 4, 5)),
    ((2, 3, 4), (4, 2)),
    ((3, 0), (0, 2)),
    ((0, 3), (3, 2)),
]


@pytest.mark.parametrize("sa,sb", MATMUL, ids=str)
def test_matmul_float(float_device, sa, sb):
    a = tensor(values(sa, Float, 20), float_device)
    b = tensor(values(sb, Float, 21), float_device)
    out = a.matmul(b)
    assert out.dtype is dtype_of(float_device, Float)
    atol = 0.5 if float_device.backend.float_dtype.value in ("float16", "bfloat16") else None
    assert_close(out, np.matmul(held(a), held(b)), atol=atol)


@pytest.mark.parametrize("sa,sb", MATMUL[:5], ids=str)
def test_matmul_int(int_device, sa, sb):
    a = tensor(values(sa, Int, 22), int_device)
    b = tensor(values(sb, Int, 23), int_device)
    out = a.matmul(b)
    assert out.kind is Int and out.dtype is dtype_of(int_device, Int)
    assert_equal(out, np.matmul(held(a), held(b)))


def test_matmul_non_contiguous(device):
    x, y = values((2, 3, 4), Float, 24), values((2, 4, 3), Float, 25)
    assert_close(noncontig(x, device).matmul(noncontig(y, device)), np.matmul(x, y))


def test_matmul_float16_accumulates_in_float32(float_device):
    # 2048 + 1 + 1 + ... : a float16 accumulator would stay at 2048
    k = 64
    a = np.ones((1, k))
    a[0, 0] = 2048.0
    out = tensor(a, float_device).matmul(tensor(np.ones((k, 1)), float_device))
    assert_close(out, [[2048.0 + k - 1]], atol=0.0 if float_device.backend.float_dtype.value != "bfloat16" else 16)


@pytest.mark.parametrize("sa,sb,what", [
    ((3,), (3, 2), "rank"),
    ((2, 3), (3,), "rank"),
    ((2, 3), (4, 5), "inner"),
    ((2, 3, 4), (3, 4, 5), "batch"),
], ids=str)
def test_matmul_shape_errors(device, sa, sb, what):
    with pytest.raises(ember.ShapeError, match="matmul") as exc:
        tensor(np.ones(sa), device).matmul(tensor(np.ones(sb), device))
    assert str(list(sa)) in str(exc.value) and str(list(sb)) in str(exc.value)
    assert what in str(exc.value)


def test_matmul_kind_errors(device):
    with pytest.raises(ember.KindError, match="matmul"):
        tensor(np.ones((2, 2)), device).matmul(tensor(np.ones((2, 2), dtype=np.int64), device))
    with pytest.raises(ember.KindError, match="matmul"):
        tensor(np.ones((2, 2), dtype=bool), device).matmul(tensor(np.ones((2, 2), dtype=bool), device))


# ---------------------------------------------------------------- dot
def test_dot_float(float_device):
    x, y = values((6,), Float, 26), values((6,), Float, 27)
    out = tensor(x, float_device).dot(tensor(y, float_device))
    assert out.shape == (1,) and out.dtype is dtype_of(float_device, Float)
    assert_close(out, [float(np.dot(x, y))])
    assert_close(tensor(np.zeros(0), float_device).dot(tensor(np.zeros(0), float_device)), [0.0])


def test_dot_int(int_device):
    i, j = values((6,), Int, 28), values((6,), Int, 29)
    out = tensor(i, int_device).dot(tensor(j, int_device))
    assert out.kind is Int and out.dtype is dtype_of(int_device, Int)
    assert_equal(out, [int(np.dot(i, j))])


@pytest.mark.parametrize("sa,sb", [((3,), (4,)), ((2, 3), (2, 3)), ((), ())], ids=str)
def test_dot_shape_errors(device, sa, sb):
    with pytest.raises(ember.ShapeError, match="dot"):
        tensor(np.ones(sa), device).dot(tensor(np.ones(sb), device))


def test_dot_kind_error(device):
    with pytest.raises(ember.KindError, match="dot"):
        tensor([1.0, 2.0], device).dot(tensor([1, 2], device))
    with pytest.raises(ember.KindError, match="dot"):
        tensor([True], device).dot(tensor([True], device))


def test_result_kind_of_comparisons_is_bool(device):
    out = Tensor.from_data([1.0, 2.0], device).greater(1.5)
    assert out.kind is Bool
    assert_equal(out, [False, True])
