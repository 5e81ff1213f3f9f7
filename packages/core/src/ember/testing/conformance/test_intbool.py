"""Int bitwise and Bool logical ops, with the ``~ & | ^ << >>`` operators, against Python-int and
Python-bool references; kind errors for Float tensors and mixed kinds."""

from __future__ import annotations

import operator

import numpy as np
import pytest

from ember import Bool, Float, Int, KindError, ShapeError, Tensor
from ember.testing import assert_equal

pytestmark = pytest.mark.filterwarnings("error")

A = [[0, 1, -1, 5, -8, 12345], [7, -7, 2**20, -(2**20), 3, -2]]
B = [[3, 1, 6, -2, 5, -1], [1, 2, 0, 255, -3, 4]]


def ints(x, dev):
    return Tensor.from_data(np.array(x, dtype=np.int64), dev)


def pyref(fn, a, b=None):
    """Element-wise reference with Python ints (arbitrary precision; the values stay in int32)."""
    a = np.array(a, dtype=object)
    if b is None:
        return np.vectorize(fn, otypes=[np.int64])(a)
    b = np.array(b, dtype=object)
    return np.vectorize(fn, otypes=[np.int64])(a, b)


BITWISE = [
    ("bitwise_and", operator.and_),
    ("bitwise_or", operator.or_),
    ("bitwise_xor", operator.xor),
]


@pytest.mark.parametrize("name,fn", BITWISE, ids=[b[0] for b in BITWISE])
def test_bitwise_tensor(int_device, name, fn):
    a, b = ints(A, int_device), ints(B, int_device)
    out = getattr(a, name)(b)
    assert out.kind is Int and out.dtype is int_device.backend.int_dtype
    assert_equal(out, pyref(fn, A, B))


@pytest.mark.parametrize("name,fn", BITWISE, ids=[b[0] for b in BITWISE])
def test_bitwise_scalar_and_broadcast(int_device, name, fn):
    a = ints(A, int_device)
    assert_equal(getattr(a, name + "_scalar")(6), pyref(lambda x: fn(x, 6), A))
    assert_equal(getattr(a, name)(-3), pyref(lambda x: fn(x, -3), A))
    row = [[5], [-4]]
    assert_equal(getattr(a, name)(ints(row, int_device)), pyref(fn, A, np.broadcast_to(np.array(row), (2, 6))))


def test_bitwise_not(int_device):
    a = ints(A, int_device)
    assert_equal(a.bitwise_not(), pyref(lambda x: -x - 1, A))
    assert_equal(~a, pyref(lambda x: ~x, A))


def test_shifts(int_device):
    a = ints([[1, 3, -1, -8, 100], [7, -7, 2**10, -(2**10), 0]], int_device)
    s = ints([[0, 1, 2, 3, 4], [5, 1, 10, 2, 30]], int_device)
    av, sv = a.to_numpy().tolist(), s.to_numpy().tolist()
    assert_equal(a.bitwise_left_shift(s), pyref(lambda x, y: x << y, av, sv))
    assert_equal(a.bitwise_right_shift(s), pyref(lambda x, y: x >> y, av, sv))
    assert_equal(a.bitwise_left_shift_scalar(3), pyref(lambda x: x << 3, av))
    assert_equal(a.bitwise_right_shift_scalar(2), pyref(lambda x: x >> 2, av))  # arithmetic: -8 >> 2 = -2
    assert_equal(a << s, pyref(lambda x, y: x << y, av, sv))
    assert_equal(a >> 1, pyref(lambda x: x >> 1, av))


def test_reflected_operators(int_device):
    a = ints([[0, 1, 2], [3, 4, 5]], int_device)
    av = a.to_numpy().tolist()
    assert_equal(6 & a, pyref(lambda x: 6 & x, av))
    assert_equal(8 | a, pyref(lambda x: 8 | x, av))
    assert_equal(5 ^ a, pyref(lambda x: 5 ^ x, av))
    assert_equal(1 << a, pyref(lambda x: 1 << x, av))
    assert_equal(-64 >> a, pyref(lambda x: -64 >> x, av))
    out = 1 << a
    assert out.kind is Int and out.dtype is int_device.backend.int_dtype


def test_operators_int_tensors(int_device):
    a, b = ints(A, int_device), ints(B, int_device)
    assert_equal(a & b, pyref(operator.and_, A, B))
    assert_equal(a | b, pyref(operator.or_, A, B))
    assert_equal(a ^ b, pyref(operator.xor, A, B))


def test_int_rank0_empty_noncontiguous(int_device):
    s = Tensor.from_data(np.array(12, dtype=np.int64), int_device)
    assert_equal(s & 10, np.array(8))
    assert_equal(~s, np.array(-13))
    e = Tensor.zeros([0, 4], int_device, kind=Int)
    assert (e ^ 3).shape == (0, 4) and (e << 1).shape == (0, 4)
    base = np.arange(24).reshape(2, 3, 4) - 10
    t = ints(base, int_device).permute([2, 0, 1])
    nc = np.transpose(base, (2, 0, 1))
    assert_equal(t & 6, pyref(lambda x: x & 6, nc))
    assert_equal(t >> 1, pyref(lambda x: x >> 1, nc))
    assert_equal(~t, pyref(lambda x: ~x, nc))


# ---------------------------------------------------------------------------- Bool
P = [[True, True, False, False], [False, True, True, False]]
Q = [[True, False, True, False], [True, True, False, False]]


def bools(x, dev):
    return Tensor.from_data(np.array(x, dtype=bool), dev)


def bref(fn, a, b=None):
    a = np.array(a, dtype=object)
    f = np.vectorize(fn, otypes=[bool])
    return f(a) if b is None else f(a, np.array(b, dtype=object))


@pytest.mark.parametrize(
    "name,sym,fn",
    [("bool_and", operator.and_, lambda x, y: x and y), ("bool_or", operator.or_, lambda x, y: x or y),
     ("bool_xor", operator.xor, lambda x, y: x != y)],
)
def test_bool_binary(device, name, sym, fn):
    p, q = bools(P, device), bools(Q, device)
    out = getattr(p, name)(q)
    assert out.kind is Bool
    assert_equal(out, bref(fn, P, Q))
    assert_equal(sym(p, q), bref(fn, P, Q))
    # Python bools on either side
    assert_equal(sym(p, True), bref(lambda x: fn(x, True), P))
    assert_equal(sym(False, p), bref(lambda x: fn(False, x), P))
    # broadcasting a row
    row = [[True], [False]]
    assert_equal(getattr(p, name)(bools(row, device)), bref(fn, P, np.broadcast_to(np.array(row), (2, 4))))


def test_bool_not(device):
    p = bools(P, device)
    assert_equal(p.bool_not(), bref(lambda x: not x, P))
    assert_equal(~p, bref(lambda x: not x, P))
    assert (~p).kind is Bool


def test_bool_rank0_empty_noncontiguous(device):
    assert_equal(~Tensor.from_data(True, device), np.array(False))
    e = Tensor.zeros([2, 0], device, kind=Bool)
    assert (e & True).shape == (2, 0)
    base = np.array([[[True, False], [False, False]], [[True, True], [False, True]]])
    t = bools(base, device).permute([2, 1, 0])
    assert_equal(~t, ~np.transpose(base, (2, 1, 0)))
    assert_equal(t ^ True, ~np.transpose(base, (2, 1, 0)))


# ---------------------------------------------------------------------------- errors
@pytest.mark.parametrize(
    "op",
    [lambda t: ~t, lambda t: t & t, lambda t: t | 1, lambda t: t ^ t, lambda t: t << 1, lambda t: t >> 1,
     lambda t: 1 & t, lambda t: 2 | t, lambda t: 1 << t, lambda t: 1 >> t],
    ids=["invert", "and", "or", "xor", "lshift", "rshift", "rand", "ror", "rlshift", "rrshift"],
)
def test_float_operators_raise_kind_error(device, op):
    t = Tensor.from_data([1.0, 2.0], device)
    with pytest.raises(KindError, match=r"Float.*\.int\(\)"):
        op(t)


@pytest.mark.parametrize(
    "op", [lambda t: t << 1, lambda t: t >> t, lambda t: 1 << t], ids=["lshift", "rshift", "rlshift"]
)
def test_bool_shifts_raise_kind_error(device, op):
    with pytest.raises(KindError, match="Int"):
        op(bools(P, device))


@pytest.mark.parametrize(
    "name,kind_tensor",
    [("bitwise_and", "bool"), ("bitwise_not", "float"), ("bitwise_left_shift", "float"), ("bool_and", "int"),
     ("bool_not", "float"), ("bool_xor", "int")],
)
def test_named_ops_check_kind(device, name, kind_tensor):
    t = {"bool": bools(P, device), "int": ints(A, device), "float": Tensor.ones([2], device)}[kind_tensor]
    args = () if name.endswith("not") else (t,)
    with pytest.raises(KindError, match=name):
        getattr(t, name)(*args)


def test_mixed_kinds_and_bad_scalars(device):
    i, b = ints([[1, 2, 3, 4]], device), bools([[True, False, True, False]], device)
    with pytest.raises(KindError):
        i & b
    with pytest.raises(KindError):
        b | i
    with pytest.raises(KindError):
        i & 1.5
    with pytest.raises(TypeError):
        b & 2
    with pytest.raises(KindError):
        i & Tensor.ones([1, 4], device)
    assert Tensor.ones([1], device).kind is Float


def test_shape_mismatch(device):
    with pytest.raises(ShapeError, match="bitwise_xor"):
        ints([1, 2, 3], device) ^ ints([1, 2], device)
    with pytest.raises(ShapeError, match="bool_and"):
        bools([True, False], device) & bools([True, False, True], device)
