"""Python operators on tensors: ``+ - * / // % ** @``, unary ``- + abs``, the comparisons, their
reflected forms (``2 - t``), augmented assignment (which never mutates), and their errors.

Semantics: Float ``/`` is true division, Int ``/`` and ``//`` floor (Burn's Int ``div``, Python's
``//``); ``%`` takes the sign of the divisor (Python's); ``**`` uses ``powf`` for Float exponents
and ``powi`` for int exponents.
"""

from __future__ import annotations

import operator

import numpy as np
import pytest

import ember
from ember import Bool, Float, Int
from ember.testing import assert_close, assert_equal

from ._numeric_helpers import NUM_DTYPES, dtype_of, held, noncontig, num_device, tensor, values

pytestmark = pytest.mark.filterwarnings("error")


def _floor_div_float(a, b):
    return np.floor(np.true_divide(a, b))


ARITH = {  # name: (operator, float reference, int reference)
    "+": (operator.add, np.add, np.add),
    "-": (operator.sub, np.subtract, np.subtract),
    "*": (operator.mul, np.multiply, np.multiply),
    "/": (operator.truediv, np.true_divide, np.floor_divide),
    "//": (operator.floordiv, _floor_div_float, np.floor_divide),
    "%": (operator.mod, np.remainder, np.remainder),
}
COMPARE = {
    "==": (operator.eq, np.equal),
    "!=": (operator.ne, np.not_equal),
    "<": (operator.lt, np.less),
    "<=": (operator.le, np.less_equal),
    ">": (operator.gt, np.greater),
    ">=": (operator.ge, np.greater_equal),
}
DIVIDES = ("/", "//", "%")
PAIRS = [((2, 3), (2, 3)), ((3, 1), (4,)), ((), (5,)), ((2, 3, 4), ())]


def _ref(kind, sym):
    return ARITH[sym][1] if kind is Float else ARITH[sym][2]


# ---------------------------------------------------------------- tensor <op> tensor
@NUM_DTYPES
@pytest.mark.parametrize("sym", list(ARITH))
@pytest.mark.parametrize("sa,sb", PAIRS, ids=str)
def test_arith_tensor_tensor(backend_name, num_dtype, sym, sa, sb):
    kind, dev = num_device(backend_name, num_dtype)
    a = tensor(values(sa, kind, 1), dev)
    b = tensor(values(sb, kind, 2, nonzero=sym in DIVIDES), dev)
    out = ARITH[sym][0](a, b)
    assert out.kind is kind and out.dtype is dtype_of(dev, kind)
    assert_close(out, _ref(kind, sym)(held(a), held(b)))


@NUM_DTYPES
@pytest.mark.parametrize("sym", list(ARITH))
def test_arith_tensor_scalar_and_reflected(backend_name, num_dtype, sym):
    kind, dev = num_device(backend_name, num_dtype)
    a = tensor(values((3, 4), kind, 3, nonzero=True), dev)
    op, ref = ARITH[sym][0], _ref(kind, sym)
    for s in ((2.0, -0.5, 4) if kind is Float else (3, -2, 2.0)):
        s_ref = float(s) if kind is Float else int(s)
        out = op(a, s)
        assert out.kind is kind and out.dtype is dtype_of(dev, kind)
        assert_close(out, ref(held(a), s_ref))
        rout = op(s, a)  # reflected: scalar on the left
        assert rout.kind is kind and rout.dtype is dtype_of(dev, kind)
        assert_close(rout, ref(s_ref, held(a)))


@NUM_DTYPES
@pytest.mark.parametrize("sym", list(COMPARE))
def test_compare_operators(backend_name, num_dtype, sym):
    kind, dev = num_device(backend_name, num_dtype)
    x, y = values((3, 1), kind, 4) // 4, values((4,), kind, 5) // 4
    op, ref = COMPARE[sym]
    assert_equal(op(tensor(x, dev), tensor(y, dev)), ref(x, y), kind=Bool)
    assert_equal(op(tensor(x, dev), 0), ref(x, 0), kind=Bool)
    assert_equal(op(0, tensor(y, dev)), ref(0, y), kind=Bool)  # Python reflects to the mirrored op


def test_arith_non_contiguous(device):
    x, y = values((2, 3, 4), Float, 6), values((2, 3, 4), Float, 7, nonzero=True)
    a, b = noncontig(x, device), noncontig(y, device)
    assert_close(a + b, x + y)
    assert_close(a / b, x / y)
    assert_close(2.0 - a, 2.0 - x)
    assert_close(a % b, np.remainder(x, y))


# ---------------------------------------------------------------- unary, pow, matmul
@NUM_DTYPES
def test_unary_operators(backend_name, num_dtype):
    kind, dev = num_device(backend_name, num_dtype)
    x = values((2, 3), kind, 8)
    t = tensor(x, dev)
    assert_close(-t, -x)
    assert_close(abs(t), np.abs(x))
    assert (+t) is t


def test_pow_float(float_device):
    x = np.abs(values((2, 3), Float, 9)) / 4 + 0.5
    e = values((2, 3), Float, 10) / 8
    t = tensor(x, float_device)
    assert_close(t ** tensor(e, float_device), x**e, rtol=2e-2)
    assert_close(t**2, x**2)
    assert_close(t**0.5, np.sqrt(x))
    assert_close(t ** tensor(np.array([0, 1, 2]), float_device), x ** np.array([0, 1, 2]))  # Int exponent
    assert_close(2.0**t, 2.0**x, rtol=2e-2)
    assert_close(2**t, 2.0**x, rtol=2e-2)


def test_pow_int(int_device):
    x = values((2, 3), Int, 11) // 3
    t = tensor(x, int_device)
    assert_equal(t**2, x**2)
    assert_equal(t**3.0, x**3)
    assert_equal(t ** tensor(np.array([0, 1, 2]), int_device), x ** np.array([0, 1, 2]))
    assert_equal(2 ** tensor(np.array([0, 1, 5]), int_device), [1, 2, 32])
    assert (t**2).dtype is dtype_of(int_device, Int)


def test_pow_errors(device):
    i = tensor([1, 2], device)
    with pytest.raises(ember.KindError, match="powi"):
        i**2.5
    with pytest.raises(ember.KindError, match="pow"):
        2.5**i
    with pytest.raises(ember.KindError):
        i ** tensor([1.0, 2.0], device)
    with pytest.raises(ember.KindError):
        tensor([True], device) ** 2


def test_matmul_operator(float_device):
    x, y = values((2, 3, 4), Float, 12), values((4, 5), Float, 13)
    assert_close(tensor(x, float_device) @ tensor(y, float_device), x @ y, atol=0.5)
    with pytest.raises(TypeError, match="matmul"):
        [[1.0]] @ tensor(y, float_device)
    with pytest.raises(TypeError, match="matmul"):
        tensor(y, float_device) @ [[1.0]]


# ---------------------------------------------------------------- foreign operands
def test_numpy_scalars_on_either_side(device):
    x = values((3,), Float, 14)
    t = tensor(x, device)
    for s in (np.float64(2.0), np.float32(2.0), np.int64(2)):
        assert_close(t * s, x * 2.0)
        assert_close(s * t, x * 2.0)
        assert_close(s - t, 2.0 - x)
    out = np.float64(2.0) * t
    assert type(out) is type(t)


def test_ndarray_operand_is_rejected_not_converted(device):
    t = tensor([1.0, 2.0], device)
    with pytest.raises(TypeError):
        t + np.ones(2)
    with pytest.raises(TypeError):
        np.ones(2) + t


def test_equality_with_unrelated_objects(device):
    t = tensor([1.0], device)
    assert (t == "abc") is False
    assert (t != None) is True  # noqa: E711 - the operator itself is under test
    assert t in [t]


# ---------------------------------------------------------------- immutability
def test_augmented_assignment_does_not_mutate(device):
    x = values((2, 2), Float, 15)
    a = tensor(x, device)
    alias = a
    a += 1.0
    a *= 2.0
    a -= alias
    assert_close(alias, x)
    assert_close(a, (x + 1.0) * 2.0 - x)


# ---------------------------------------------------------------- errors through operators
@pytest.mark.parametrize("sym,name", [("+", "add"), ("-", "sub"), ("*", "mul"), ("/", "div"), ("%", "remainder"),
                                      ("//", "floor_div")])
def test_bool_operands_are_kind_errors(device, sym, name):
    b = tensor([True, False], device)
    op = ARITH[sym][0]
    for left, right in ((b, b), (b, 1), (1, b)):
        with pytest.raises(ember.KindError, match=name):
            op(left, right)


def test_bool_unary_operators_are_kind_errors(device):
    b = tensor([True, False], device)
    with pytest.raises(ember.KindError, match="neg"):
        _ = -b
    with pytest.raises(ember.KindError, match="abs"):
        abs(b)
    with pytest.raises(ember.KindError, match="lower"):
        _ = b < b


@pytest.mark.parametrize("sym", list(ARITH))
def test_operator_errors_name_the_op(device, sym):
    op = ARITH[sym][0]
    a, b = tensor(np.ones((2, 3)), device), tensor(np.ones((3, 2)), device)
    with pytest.raises(ember.ShapeError, match=r"\[2, 3\] and \[3, 2\]"):
        op(a, b)
    with pytest.raises(ember.KindError, match="Float and Int"):
        op(a, tensor(np.ones((2, 3), dtype=np.int64), device))
    with pytest.raises(ember.KindError, match="2.5"):
        op(tensor([1, 2], device), 2.5)
    with pytest.raises(ember.KindError, match="2.5"):
        op(2.5, tensor([1, 2], device))


@pytest.mark.parametrize("sym", list(COMPARE))
def test_compare_operator_errors(device, sym):
    op = COMPARE[sym][0]
    with pytest.raises(ember.ShapeError, match=r"\[3\] and \[4\]"):
        op(tensor(np.ones(3), device), tensor(np.ones(4), device))
    with pytest.raises(ember.KindError, match="Float and Int"):
        op(tensor(np.ones(3), device), tensor(np.ones(3, dtype=np.int64), device))
