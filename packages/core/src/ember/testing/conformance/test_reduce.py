"""Reductions (sum, mean, prod, max, min, argmax, argmin, *_with_indices, max_abs, any, all, their
``_dim``/``_dims`` forms) and scans (cumsum, cumprod), against numpy float64 / int64 references.

Burn's shape conventions are asserted everywhere: whole-tensor reductions give shape ``[1]`` and
``_dim`` reductions keep the reduced dim with size 1.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import Bool, Float, Int, Tensor
from ember.testing import assert_close, assert_equal

from ._numeric_helpers import SHAPES, dtype_of, held, noncontig, tensor, values, wrap_int

pytestmark = pytest.mark.filterwarnings("error")

NONEMPTY = [s for s in SHAPES if 0 not in s]
#: (shape, dim) pairs for *_dim ops, negative dims included
DIMS = [((5,), 0), ((5,), -1), ((2, 3, 4), 0), ((2, 3, 4), 1), ((2, 3, 4), -1), ((2, 3, 4), -3)]
EMPTY_DIMS = [((0,), 0), ((2, 0, 3), 1), ((2, 0, 3), 2)]


def _mean_int(x, axis=None):
    """Floor of the exact mean; 0 for an empty reduction (Int division by zero is 0)."""
    s = np.sum(x, axis=axis, keepdims=axis is not None, dtype=np.int64)
    n = x.size if axis is None else x.shape[axis]
    return s // n if n else np.zeros_like(s)


FLOAT_WHOLE = {"sum": np.sum, "prod": np.prod, "mean": np.mean}
FLOAT_DIM = {"sum_dim": np.sum, "prod_dim": np.prod, "mean_dim": np.mean}


# ---------------------------------------------------------------- sum, mean, prod
@pytest.mark.parametrize("op", list(FLOAT_WHOLE))
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_whole_reduction_float(float_device, op, shape):
    x = values(shape, Float, 1) / 4  # small magnitudes keep products exact-ish
    t = tensor(x, float_device)
    out = getattr(t, op)()
    assert out.shape == (1,), "whole-tensor reductions return shape [1] (Burn)"
    assert out.dtype is dtype_of(float_device, Float)
    expected = np.nan if (op == "mean" and x.size == 0) else FLOAT_WHOLE[op](held(t))
    assert_close(out, [expected])


@pytest.mark.parametrize("op", ["sum", "prod", "mean"])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_whole_reduction_int(int_device, op, shape):
    x = values(shape, Int, 2) // 3
    out = getattr(tensor(x, int_device), op)()
    assert out.shape == (1,) and out.kind is Int and out.dtype is dtype_of(int_device, Int)
    ref = {"sum": lambda v: np.sum(v), "prod": lambda v: np.prod(v), "mean": _mean_int}[op](x)
    assert_equal(out, [int(ref)])


@pytest.mark.parametrize("op", list(FLOAT_DIM))
@pytest.mark.parametrize("shape,dim", DIMS + EMPTY_DIMS, ids=str)
def test_dim_reduction_float_keeps_dim(float_device, op, shape, dim):
    x = values(shape, Float, 3) / 4
    t = tensor(x, float_device)
    out = getattr(t, op)(dim)
    expected_shape = list(shape)
    expected_shape[dim] = 1
    assert list(out.shape) == expected_shape, "_dim reductions keep the reduced dim with size 1 (Burn)"
    if op == "mean_dim" and shape[dim] == 0:
        ref = np.full(expected_shape, np.nan)
    else:
        ref = FLOAT_DIM[op](held(t), axis=dim, keepdims=True)
    assert_close(out, ref)


@pytest.mark.parametrize("op", ["sum_dim", "prod_dim", "mean_dim"])
@pytest.mark.parametrize("shape,dim", DIMS + EMPTY_DIMS, ids=str)
def test_dim_reduction_int_keeps_dim(int_device, op, shape, dim):
    x = values(shape, Int, 4) // 3
    out = getattr(tensor(x, int_device), op)(dim)
    assert out.dtype is dtype_of(int_device, Int)
    if op == "mean_dim":
        ref = _mean_int(x, dim)
    else:
        ref = {"sum_dim": np.sum, "prod_dim": np.prod}[op](x, axis=dim, keepdims=True)
    assert_equal(out, ref)


@pytest.mark.parametrize("op,ref", [("sum_dims", np.sum), ("mean_dims", np.mean), ("prod_dims", np.prod),
                                    ("max_dims", np.max), ("min_dims", np.min)])
@pytest.mark.parametrize("dims", [[0], [0, 2], [-1, 1], [0, 1, 2]], ids=str)
def test_dims_reductions_keep_dims(float_device, op, ref, dims):
    x = values((2, 3, 4), Float, 5) / 4
    t = tensor(x, float_device)
    axes = tuple(d % 3 for d in dims)
    assert_close(getattr(t, op)(dims), ref(held(t), axis=axes, keepdims=True))


@pytest.mark.parametrize("dims", [[0], [0, 2], [-1, 1], []], ids=str)
def test_sum_dims_squeeze(float_device, dims):
    x = values((2, 3, 4), Float, 16) / 4
    out = tensor(x, float_device).sum_dims_squeeze(dims)
    assert_close(out, np.sum(x, axis=tuple(d % 3 for d in dims)) if dims else x)


def test_max_abs_dims(float_device):
    x = values((2, 3, 4), Float, 6)
    assert_close(tensor(x, float_device).max_abs_dims([0, -1]), np.max(np.abs(x), axis=(0, 2), keepdims=True))


def test_reductions_non_contiguous(device):
    x = values((2, 3, 4), Float, 7)
    t = noncontig(x, device)
    assert_close(t.sum(), [x.sum()])
    assert_close(t.sum_dim(1), x.sum(axis=1, keepdims=True))
    assert_close(t.mean_dim(-1), x.mean(axis=-1, keepdims=True))
    assert_close(t.max_dim(0), x.max(axis=0, keepdims=True))
    assert_equal(t.argmin(2), np.argmin(x, axis=2)[..., None])
    assert_close(t.cumsum(1), np.cumsum(x, axis=1))


def test_mean_int_floors(int_device):
    assert_equal(tensor([1, 2], int_device).mean(), [1])
    assert_equal(tensor([-1, -2], int_device).mean(), [-2])
    assert_equal(tensor([[1, 2, 4], [-1, 0, 0]], int_device).mean_dim(1), [[2], [-1]])


def test_empty_reductions_are_defined(float_device, int_device):
    f = tensor(np.zeros((2, 0)), float_device)
    assert_close(f.sum(), [0.0])
    assert_close(f.prod(), [1.0])
    assert_close(f.mean(), [np.nan])
    assert_close(f.sum_dim(1), [[0.0], [0.0]])
    assert_close(f.mean_dim(1), [[np.nan], [np.nan]])
    i = Tensor.zeros([0], int_device, Int)
    assert_equal(i.sum(), [0])
    assert_equal(i.prod(), [1])
    assert_equal(i.mean(), [0])


# ---------------------------------------------------------------- overflow and accumulation
def test_int_sum_keeps_dtype_and_wraps(int_device):
    dt = dtype_of(int_device, Int)
    x = np.full(4, 2**30, dtype=np.int64)
    t = tensor(x, int_device)
    assert t.sum().dtype is dt and t.sum_dim(0).dtype is dt and t.cumsum(0).dtype is dt
    assert_equal(t.sum(), wrap_int([4 * 2**30], dt))
    assert_equal(t.cumsum(0), wrap_int(np.cumsum(x), dt))


def test_int_mean_does_not_overflow(int_device):
    # the exact sum (2**32) does not fit int32, the mean (2**30) does
    t = tensor(np.full((2, 4), 2**30, dtype=np.int64), int_device)
    assert_equal(t.mean(), [2**30])
    assert_equal(t.mean_dim(1), [[2**30], [2**30]])
    assert_equal(t.mean_dims([0, 1]), [[2**30]])


def test_float16_reductions_accumulate_in_float32(float_device):
    # 70000 ones: a float16 accumulator overflows (max 65504) or stalls at 2048
    n = 70000
    t = Tensor.ones([n], float_device)
    assert_close(t.mean(), [1.0])
    assert_close(t.mean_dim(0), [1.0])
    last = float(Tensor.ones([3000], float_device).cumsum(0).to_numpy()[-1])
    assert abs(last - 3000.0) <= 30.0, f"cumsum of 3000 ones ended at {last}"


def test_float_prod_overflow_is_silent(float_device):
    dt = float_device.backend.float_dtype
    big = 1e30 if dt.value == "bfloat16" else float(np.finfo(dt.to_numpy()).max) ** 0.5 * 4
    t = tensor([big, big, -big], float_device)
    assert_close(t.prod(), [-np.inf])
    assert_close(t.cumprod(0), [held(t)[0], np.inf, -np.inf])


# ---------------------------------------------------------------- max, min, argmax, argmin
@pytest.mark.parametrize("op,ref", [("max", np.max), ("min", np.min)])
@pytest.mark.parametrize("shape", NONEMPTY, ids=str)
def test_max_min_whole_float(float_device, op, ref, shape):
    f = tensor(values(shape, Float, 8), float_device)
    out = getattr(f, op)()
    assert out.shape == (1,) and out.dtype is dtype_of(float_device, Float)
    assert_close(out, [ref(held(f))])


@pytest.mark.parametrize("op,ref", [("max", np.max), ("min", np.min)])
@pytest.mark.parametrize("shape", NONEMPTY, ids=str)
def test_max_min_whole_int(int_device, op, ref, shape):
    i = tensor(values(shape, Int, 8), int_device)
    out = getattr(i, op)()
    assert out.shape == (1,) and out.dtype is dtype_of(int_device, Int)
    assert_equal(out, [ref(held(i))])


@pytest.mark.parametrize("op,ref", [("max_dim", np.max), ("min_dim", np.min), ("max_abs_dim", None)])
@pytest.mark.parametrize("shape,dim", DIMS, ids=str)
def test_max_min_dim(float_device, op, ref, shape, dim):
    x = values(shape, Float, 9)
    out = getattr(tensor(x, float_device), op)(dim)
    expected = np.max(np.abs(x), axis=dim, keepdims=True) if ref is None else ref(x, axis=dim, keepdims=True)
    assert_close(out, expected)


@pytest.mark.parametrize("op,ref", [("argmax", np.argmax), ("argmin", np.argmin)])
@pytest.mark.parametrize("shape,dim", DIMS, ids=str)
def test_argmax_argmin_float(float_device, op, ref, shape, dim):
    x = values(shape, Float, 10) // 2  # many ties: the first index wins
    out = getattr(tensor(x, float_device), op)(dim)
    assert out.kind is Int and out.dtype is float_device.backend.int_dtype
    assert_equal(out, np.expand_dims(ref(x, axis=dim), dim))


@pytest.mark.parametrize("op,ref", [("argmax", np.argmax), ("argmin", np.argmin)])
@pytest.mark.parametrize("shape,dim", DIMS, ids=str)
def test_argmax_argmin_int(int_device, op, ref, shape, dim):
    x = values(shape, Int, 10) // 2
    out = getattr(tensor(x, int_device), op)(dim)
    assert out.kind is Int and out.dtype is int_device.backend.int_dtype
    assert_equal(out, np.expand_dims(ref(x, axis=dim), dim))


@pytest.mark.parametrize("op,vref,iref", [("max_dim_with_indices", np.max, np.argmax),
                                          ("min_dim_with_indices", np.min, np.argmin)])
@pytest.mark.parametrize("shape,dim", DIMS, ids=str)
def test_dim_with_indices(float_device, op, vref, iref, shape, dim):
    x = values(shape, Float, 11) // 2
    v, i = getattr(tensor(x, float_device), op)(dim)
    assert_close(v, vref(x, axis=dim, keepdims=True))
    assert i.kind is Int and i.dtype is float_device.backend.int_dtype
    assert_equal(i, np.expand_dims(iref(x, axis=dim), dim))


def test_max_abs(float_device, int_device):
    assert_close(tensor([[1.0, -7.0, 3.0], [5.0, -1.0, 6.0]], float_device).max_abs(), [7.0])
    assert_equal(tensor([-9, 4], int_device).max_abs(), [9])


def test_max_min_nan_propagates(float_device):
    t = tensor([[1.0, np.nan, 3.0], [4.0, 5.0, -1.0]], float_device)
    assert_close(t.max(), [np.nan])
    assert_close(t.min(), [np.nan])
    assert_close(t.max_dim(1), [[np.nan], [5.0]])
    assert_close(t.min_dim(1), [[np.nan], [-1.0]])
    assert_close(t.max_abs(), [np.nan])
    assert_equal(t.argmax(1), [[1], [1]])
    assert_equal(t.argmin(1), [[1], [2]])
    v, i = t.max_dim_with_indices(1)
    assert_close(v, [[np.nan], [5.0]])
    assert_equal(i, [[1], [1]])


@pytest.mark.parametrize("op", ["max", "min", "max_abs"])
def test_whole_max_min_of_empty_raises(device, op):
    with pytest.raises(ember.ShapeError, match=op):
        getattr(Tensor.zeros([2, 0], device), op)()


@pytest.mark.parametrize("op", ["max_dim", "min_dim", "argmax", "argmin", "max_dim_with_indices",
                                "min_dim_with_indices", "max_abs_dim"])
def test_dim_max_min_of_empty_dim_raises(device, op):
    with pytest.raises(ember.ShapeError, match=op):
        getattr(Tensor.zeros([2, 0], device), op)(1)
    # an empty tensor whose reduced dim is not empty is fine
    out = getattr(Tensor.zeros([0, 3], device), op)(1)
    out = out[0] if isinstance(out, tuple) else out
    assert out.shape == (0, 1)


# ---------------------------------------------------------------- any / all
@pytest.mark.parametrize("kind", [Float, Int, Bool], ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_any_all(device, kind, shape):
    mask = np.random.default_rng(12).random(shape) < 0.3
    data = {Float: mask.astype(np.float64) * 0.5, Int: mask.astype(np.int64) * 3, Bool: mask}[kind]
    t = tensor(data, device)
    assert t.any().kind is Bool and t.any().shape == (1,)
    assert_equal(t.any(), [bool(mask.any())])
    assert_equal(t.all(), [bool(mask.all())])


@pytest.mark.parametrize("shape,dim", DIMS + EMPTY_DIMS, ids=str)
def test_any_all_dim(device, shape, dim):
    x = np.random.default_rng(13).random(shape) < 0.5
    for t in (tensor(x, device), tensor(x.astype(np.float64), device)):
        assert_equal(t.any_dim(dim), np.any(x, axis=dim, keepdims=True), kind=Bool)
        assert_equal(t.all_dim(dim), np.all(x, axis=dim, keepdims=True), kind=Bool)


def test_any_all_nan_is_true(device):
    assert_equal(tensor([np.nan, 0.0], device).any(), [True])
    assert_equal(tensor([np.nan, 1.0], device).all(), [True])


# ---------------------------------------------------------------- cumsum / cumprod
@pytest.mark.parametrize("op,ref", [("cumsum", np.cumsum), ("cumprod", np.cumprod)])
@pytest.mark.parametrize("shape,dim", DIMS + EMPTY_DIMS, ids=str)
def test_cumsum_cumprod_float(float_device, op, ref, shape, dim):
    f = tensor(values(shape, Float, 14) / 4, float_device)
    out = getattr(f, op)(dim)
    assert out.shape == shape and out.dtype is dtype_of(float_device, Float)
    assert_close(out, ref(held(f), axis=dim))


@pytest.mark.parametrize("op,ref", [("cumsum", np.cumsum), ("cumprod", np.cumprod)])
@pytest.mark.parametrize("shape,dim", DIMS + EMPTY_DIMS, ids=str)
def test_cumsum_cumprod_int(int_device, op, ref, shape, dim):
    i = tensor(values(shape, Int, 15) // 3, int_device)
    out = getattr(i, op)(dim)
    assert out.shape == shape and out.dtype is dtype_of(int_device, Int)
    assert_equal(out, ref(held(i), axis=dim))


# ---------------------------------------------------------------- errors
REDUCE_DIM = ["sum_dim", "mean_dim", "prod_dim", "max_dim", "min_dim", "argmax", "argmin", "any_dim",
              "all_dim", "cumsum", "cumprod", "max_dim_with_indices", "min_dim_with_indices", "max_abs_dim"]
REDUCE_DIMS = ["sum_dims", "mean_dims", "prod_dims", "max_dims", "min_dims", "max_abs_dims", "sum_dims_squeeze"]


@pytest.mark.parametrize("op", REDUCE_DIM)
@pytest.mark.parametrize("dim", [3, -4, 10])
def test_dim_out_of_range(device, op, dim):
    with pytest.raises(ember.IndexError, match=op) as exc:
        getattr(tensor(np.ones((2, 3, 4)), device), op)(dim)
    assert str(dim) in str(exc.value)


@pytest.mark.parametrize("op", REDUCE_DIM)
def test_dim_of_rank_zero(device, op):
    with pytest.raises(ember.IndexError, match=op):
        getattr(tensor(1.0, device), op)(0)


@pytest.mark.parametrize("op", REDUCE_DIMS)
def test_dims_out_of_range_or_repeated(device, op):
    t = tensor(np.ones((2, 3)), device)
    with pytest.raises(ember.IndexError, match=op):
        getattr(t, op)([0, 2])
    with pytest.raises(ember.IndexError, match=op):
        getattr(t, op)([1, -1])


@pytest.mark.parametrize("op", ["sum", "mean", "prod", "max", "min", "max_abs"])
def test_bool_reductions_are_kind_errors(device, op):
    with pytest.raises(ember.KindError, match=op):
        getattr(tensor([True, False], device), op)()


@pytest.mark.parametrize("op", [o for o in REDUCE_DIM if o not in ("any_dim", "all_dim")])
def test_bool_dim_reductions_are_kind_errors(device, op):
    with pytest.raises(ember.KindError, match=op):
        getattr(tensor([[True, False]], device), op)(1)
