"""Ordered ops (Burn's ``Orderable``): sort and argsort in both directions, topk, median,
cummax/cummin and the comparisons, against references built with Python's stable ``sorted``.

Contract checked here: sorting is stable in both directions (ties keep index order), NaN sorts
last ascending and first descending, ``topk`` counts NaN as the largest, the median of an even
count is the lower middle (torch.median) and NaN propagates through ``median``/``cummax``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import ember
from ember import Bool, Float, Int, Tensor
from ember.testing import assert_close, assert_equal

from ._numeric_helpers import BROADCAST, NUM_DTYPES, dtype_of, held, noncontig, num_device, tensor, values

pytestmark = pytest.mark.filterwarnings("error")

DIMS = [((7,), 0), ((7,), -1), ((3, 4, 5), 0), ((3, 4, 5), 1), ((3, 4, 5), -1), ((0, 3), 1), ((0, 3), 0)]


def _order(row: np.ndarray, descending: bool) -> list[int]:
    """Stable sort order of a 1-D row by Python's ``sorted``; NaN last ascending, first descending."""
    def key(i: int) -> tuple[int, float]:
        v = float(row[i])
        if math.isnan(v):
            return (0, 0.0) if descending else (1, 0.0)
        return (1, -v) if descending else (0, v)

    return sorted(range(len(row)), key=key)


def ref_argsort(x: np.ndarray, dim: int, descending: bool = False) -> np.ndarray:
    if x.size == 0:
        return np.zeros(x.shape, dtype=np.int64)
    moved = np.moveaxis(x, dim, -1)
    flat = moved.reshape(-1, moved.shape[-1])
    out = np.array([_order(r, descending) for r in flat], dtype=np.int64).reshape(moved.shape)
    return np.moveaxis(out, -1, dim)


def ref_median(x: np.ndarray, dim: int) -> np.ndarray:
    """Lower median along ``dim`` (kept), NaN when the slice holds a NaN."""
    n = x.shape[dim]
    s = np.sort(x, axis=dim)  # NaN last
    mid = np.take(s, [(n - 1) // 2], axis=dim)
    if x.dtype.kind == "f":
        mid = np.where(np.isnan(x).any(axis=dim, keepdims=True), np.nan, mid)
    return mid


def _ties(shape, kind, seed):
    """Values with many ties (so stability matters)."""
    return values(shape, kind, seed) // 4


# ---------------------------------------------------------------- sort / argsort
@pytest.mark.parametrize("descending", [False, True], ids=["asc", "desc"])
@pytest.mark.parametrize("shape,dim", DIMS, ids=str)
def test_sort_float(float_device, shape, dim, descending):
    x = _ties(shape, Float, 1)
    t = tensor(x, float_device)
    idx = ref_argsort(x, dim, descending)
    expected = np.take_along_axis(x, idx, dim)
    if descending:
        v, i = t.sort_descending_with_indices(dim)
        assert_close(t.sort_descending(dim), expected)
        assert_equal(t.argsort(dim, descending=True), idx)
        assert_equal(t.argsort_descending(dim), idx)
    else:
        v, i = t.sort_with_indices(dim)
        assert_close(t.sort(dim), expected)
        assert_equal(t.argsort(dim), idx)
    assert v.dtype is dtype_of(float_device, Float) and i.kind is Int and i.dtype is float_device.backend.int_dtype
    assert_close(v, expected)
    assert_equal(i, idx)


@pytest.mark.parametrize("descending", [False, True], ids=["asc", "desc"])
@pytest.mark.parametrize("shape,dim", DIMS, ids=str)
def test_sort_int(int_device, shape, dim, descending):
    x = _ties(shape, Int, 2)
    t = tensor(x, int_device)
    idx = ref_argsort(x, dim, descending)
    v, i = t.sort_descending_with_indices(dim) if descending else t.sort_with_indices(dim)
    assert v.dtype is dtype_of(int_device, Int)
    assert_equal(v, np.take_along_axis(x, idx, dim))
    assert_equal(i, idx)
    assert_equal(t.sort_descending(dim) if descending else t.sort(dim), np.take_along_axis(x, idx, dim))


def test_sort_int_extremes(int_device):
    # descending sort must not negate (the minimum int has no negation)
    info = np.iinfo(int_device.backend.int_dtype.to_numpy())
    x = np.array([0, int(info.min), int(info.max), -1, int(info.min)], dtype=np.int64)
    t = tensor(x, int_device)
    assert_equal(t.sort_descending(0), [info.max, 0, -1, info.min, info.min])
    assert_equal(t.argsort(0, descending=True), [2, 0, 3, 1, 4])
    assert_equal(t.sort(0), [info.min, info.min, -1, 0, info.max])


def test_sort_nan_placement(float_device):
    t = tensor([[3.0, np.nan, -1.0, np.nan, np.inf, -np.inf]], float_device)
    assert_close(t.sort(1), [[-np.inf, -1.0, 3.0, np.inf, np.nan, np.nan]])
    assert_equal(t.argsort(1), [[5, 2, 0, 4, 1, 3]])
    assert_close(t.sort_descending(1), [[np.nan, np.nan, np.inf, 3.0, -1.0, -np.inf]])
    assert_equal(t.argsort(1, descending=True), [[1, 3, 4, 0, 2, 5]])


def test_sort_is_stable(device):
    t = tensor([2.0, 1.0, 2.0, 1.0, 2.0], device)
    assert_equal(t.argsort(0), [1, 3, 0, 2, 4])
    assert_equal(t.argsort(0, descending=True), [0, 2, 4, 1, 3])


def test_sort_default_dim_is_last(device):
    x = values((3, 4), Float, 3)
    assert_close(tensor(x, device).sort(), np.sort(x, axis=-1))


def test_sort_non_contiguous(device):
    x = _ties((3, 4, 5), Float, 4)
    t = noncontig(x, device)
    assert_equal(t.argsort(1), ref_argsort(x, 1))
    assert_close(t.sort_descending(0), np.take_along_axis(x, ref_argsort(x, 0, True), 0))


# ---------------------------------------------------------------- topk
@pytest.mark.parametrize("k", [0, 1, 3, 5])
@pytest.mark.parametrize("dim", [0, 2, -1])
def test_topk_float(float_device, k, dim):
    x = _ties((5, 6, 5), Float, 5)
    t = tensor(x, float_device)
    idx = np.take(ref_argsort(x, dim, True), range(k), axis=dim)
    v, i = t.topk_with_indices(k, dim)
    shape = list(x.shape)
    shape[dim] = k
    assert list(v.shape) == shape and i.kind is Int
    assert_close(v, np.take_along_axis(x, idx, dim))
    assert_equal(i, idx)
    assert_close(t.topk(k, dim), np.take_along_axis(x, idx, dim))
    assert_equal(t.argtopk(k, dim), idx)


def test_topk_int(int_device):
    x = np.array([[[1, 4, 7], [2, 5, 6]], [[3, 0, 9], [8, 2, 8]]])
    v, i = tensor(x, int_device).topk_with_indices(2, 2)
    assert v.dtype is dtype_of(int_device, Int)
    assert_equal(v, [[[7, 4], [6, 5]], [[9, 3], [8, 8]]])
    assert_equal(i, [[[2, 1], [2, 1]], [[2, 0], [0, 2]]])


def test_topk_nan_is_largest(float_device):
    v, i = tensor([1.0, np.nan, 3.0, 2.0], float_device).topk_with_indices(2, 0)
    assert_close(v, [np.nan, 3.0])
    assert_equal(i, [1, 2])


@pytest.mark.parametrize("op", ["topk", "topk_with_indices", "argtopk"])
@pytest.mark.parametrize("k", [-1, 6])
def test_topk_k_out_of_range(device, op, k):
    with pytest.raises(ember.ShapeError, match=op) as exc:
        getattr(tensor(np.ones((2, 5)), device), op)(k, 1)
    assert str(k) in str(exc.value) and "5" in str(exc.value)


# ---------------------------------------------------------------- median
@pytest.mark.parametrize("shape,dim", [((7,), 0), ((6,), 0), ((3, 4, 5), 0), ((3, 4, 5), 1), ((3, 4, 5), -1),
                                       ((1, 2), 0)], ids=str)
@NUM_DTYPES
def test_median_dim(backend_name, num_dtype, shape, dim):
    kind, dev = num_device(backend_name, num_dtype)
    x = values(shape, kind, 6)
    t = tensor(x, dev)
    expected = ref_median(x, dim)
    out = t.median(dim)
    assert out.dtype is dtype_of(dev, kind) and out.shape == expected.shape
    assert_close(out, expected)
    v, i = t.median_with_indices(dim)
    assert_close(v, expected)
    assert i.kind is Int and i.dtype is dev.backend.int_dtype
    np.testing.assert_array_equal(np.take_along_axis(x, held(i), dim), expected)


def test_median_is_lower_middle(float_device, int_device):
    assert_close(tensor([4.0, 1.0, 3.0, 2.0], float_device).median(), [2.0])
    assert_equal(tensor([[4, 1, 3, 2], [9, 7, 8, 6]], int_device).median(1), [[2], [7]])
    assert_equal(tensor([[4, 1, 3, 2], [9, 7, 8, 6]], int_device).median(), [4])


@pytest.mark.parametrize("shape", [(), (1,), (5,), (2, 3, 4)], ids=str)
def test_median_whole(float_device, shape):
    x = values(shape, Float, 7)
    out = tensor(x, float_device).median()
    assert out.shape == (1,)
    assert_close(out, [np.sort(x.reshape(-1))[(x.size - 1) // 2]])


def test_median_nan_propagates(float_device):
    t = tensor([[1.0, np.nan, 3.0, np.nan], [5.0, 2.0, 4.0, 3.0]], float_device)
    v, i = t.median_with_indices(1)
    assert_close(v, [[np.nan], [3.0]])
    assert np.isnan(held(t)[0, held(i)[0, 0]]) and held(i)[1, 0] == 3
    assert_close(t.median(), [np.nan])


def test_median_errors(device):
    with pytest.raises(ember.ShapeError, match="median"):
        Tensor.zeros([0], device).median()
    with pytest.raises(ember.ShapeError, match="median"):
        Tensor.zeros([2, 0], device).median(1)
    with pytest.raises(ember.IndexError, match="median"):
        tensor([1.0, 2.0], device).median(1)
    with pytest.raises(ember.KindError, match="median"):
        tensor([True, False], device).median(0)


# ---------------------------------------------------------------- cummax / cummin
@pytest.mark.parametrize("op,ufunc", [("cummax", np.maximum), ("cummin", np.minimum)])
@pytest.mark.parametrize("shape,dim", DIMS, ids=str)
@NUM_DTYPES
def test_cummax_cummin(backend_name, num_dtype, op, ufunc, shape, dim):
    kind, dev = num_device(backend_name, num_dtype)
    x = values(shape, kind, 8)
    out = getattr(tensor(x, dev), op)(dim)
    assert out.shape == shape and out.dtype is dtype_of(dev, kind)
    assert_close(out, ufunc.accumulate(x, axis=dim) if x.size else x)


def test_cummax_nan_propagates(float_device):
    t = tensor([1.0, 3.0, np.nan, 5.0, 0.0], float_device)
    assert_close(t.cummax(0), [1.0, 3.0, np.nan, np.nan, np.nan])
    assert_close(t.cummin(0), [1.0, 1.0, np.nan, np.nan, np.nan])


# ---------------------------------------------------------------- comparisons
CMP = {
    "greater": np.greater,
    "greater_equal": np.greater_equal,
    "lower": np.less,
    "lower_equal": np.less_equal,
    "equal": np.equal,
    "not_equal": np.not_equal,
}


@pytest.mark.parametrize("op", list(CMP))
@pytest.mark.parametrize("sa,sb", BROADCAST, ids=str)
@NUM_DTYPES
def test_compare_tensors(backend_name, num_dtype, op, sa, sb):
    kind, dev = num_device(backend_name, num_dtype)
    x, y = values(sa, kind, 9) // 4, values(sb, kind, 10) // 4  # many equal pairs
    out = getattr(tensor(x, dev), op)(tensor(y, dev))
    assert_equal(out, CMP[op](x, y), kind=Bool)


@pytest.mark.parametrize("op", list(CMP))
@pytest.mark.parametrize("scalar", [0, -1.0, 2], ids=repr)
def test_compare_scalar_and_aliases(device, int_device, op, scalar):
    x = values((3, 4), Float, 11) // 2
    t = tensor(x, device)
    assert_equal(getattr(t, op)(scalar), CMP[op](x, scalar), kind=Bool)
    assert_equal(getattr(t, f"{op}_elem")(scalar), CMP[op](x, scalar))
    if op not in ("equal", "not_equal"):
        assert_equal(getattr(t, f"{op}_scalar")(scalar), CMP[op](x, scalar))
    i = values((3, 4), Int, 12)
    assert_equal(getattr(tensor(i, int_device), op)(scalar), CMP[op](i, int(scalar)), kind=Bool)


def test_compare_nan(float_device):
    t = tensor([np.nan, 1.0], float_device)
    assert_equal(t.equal(t), [False, True])
    assert_equal(t.not_equal(t), [True, False])
    assert_equal(t.greater_equal(0.0), [False, True])
    assert_equal(t.lower(np.inf), [False, True])


def test_compare_bool(device):
    a, b = tensor([True, False, True], device), tensor([True, True, False], device)
    assert_equal(a.equal(b), [True, False, False])
    assert_equal(a.not_equal(b), [False, True, True])
    assert_equal(a.equal(True), [True, False, True])


@pytest.mark.parametrize("op", ["greater", "greater_equal", "lower", "lower_equal"])
def test_ordering_comparisons_reject_bool(device, op):
    with pytest.raises(ember.KindError, match=op):
        getattr(tensor([True], device), op)(tensor([False], device))


def test_compare_non_contiguous(device):
    x, y = values((2, 3, 4), Float, 13) // 4, values((2, 3, 4), Float, 14) // 4
    assert_equal(noncontig(x, device).greater_equal(noncontig(y, device)), x >= y)


# ---------------------------------------------------------------- errors
ORDERED_DIM = ["sort", "sort_descending", "sort_with_indices", "sort_descending_with_indices", "argsort",
               "cummax", "cummin", "median", "median_with_indices"]


@pytest.mark.parametrize("op", ORDERED_DIM)
def test_dim_out_of_range(device, op):
    with pytest.raises(ember.IndexError, match=op):
        getattr(tensor(np.ones((2, 3)), device), op)(2)
    with pytest.raises(ember.IndexError, match=op):
        getattr(tensor(np.ones((2, 3)), device), op)(-3)


@pytest.mark.parametrize("op", ORDERED_DIM)
def test_bool_is_a_kind_error(device, op):
    with pytest.raises(ember.KindError, match=op):
        getattr(tensor([[True, False]], device), op)(1)


def test_topk_errors(device):
    with pytest.raises(ember.IndexError, match="topk"):
        tensor(np.ones((2, 3)), device).topk(1, 2)
    with pytest.raises(ember.KindError, match="topk"):
        tensor([True, False], device).topk(1, 0)
