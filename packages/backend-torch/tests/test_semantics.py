"""Primitives where torch's own semantics differ from the backend contract: the backend must adapt
them. Expected values are hand-computed or numpy float64/Python references, never torch's."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import ember

B = ember.backend("torch")
B32 = ember.backend("torch", int_dtype="int32")
NAN = math.nan


def f(values, dtype=torch.float32):
    return torch.tensor(values, dtype=dtype)


def i(values, dtype=torch.int64):
    return torch.tensor(values, dtype=dtype)


def test_sign_keeps_nan():
    out = B.sign(f([-2.0, 0.0, NAN, 3.0, -0.0]))
    np.testing.assert_array_equal(out.numpy(), np.array([-1.0, 0.0, NAN, 1.0, 0.0], np.float32))
    assert B.sign(i([-5, 0, 7])).tolist() == [-1, 0, 1]


@pytest.mark.parametrize("exp", [-1, -2, -3])
def test_powi_int_base_negative_scalar_exponent(exp):
    base = [-2, -1, 0, 1, 2, 5]
    # truncation of the real power; 0 ** -n is 0 (the contract's rule)
    expected = [0 if b == 0 else math.trunc(b**exp) for b in base]
    out = B.powi(i(base), exp)
    assert out.dtype == torch.int64 and out.tolist() == expected


def test_powi_int_tensor_exponent_and_float_base():
    out = B.powi(i([2, -1, 3, -1]), i([3, -3, -1, 2]))
    assert out.tolist() == [8, -1, 0, 1]
    fb = B.powi(f([2.0, 4.0]), i([-1, 2]))
    assert fb.dtype == torch.float32 and fb.tolist() == [0.5, 16.0]


@pytest.mark.parametrize("op", ["int_div", "remainder", "fmod"])
def test_int_division_by_zero_is_zero(op):
    a, b = [7, -7, 7, -7, 5], [2, 2, -2, 0, 0]
    ref = {
        "int_div": lambda x, y: x // y,
        "remainder": lambda x, y: x % y,
        "fmod": lambda x, y: int(math.fmod(x, y)),
    }[op]
    expected = [0 if y == 0 else ref(x, y) for x, y in zip(a, b)]
    assert getattr(B, op)(i(a), i(b)).tolist() == expected
    # scalar divisors, zero included
    assert getattr(B, op)(i(a), 0).tolist() == [0] * 5
    assert getattr(B, op)(i(a), -3).tolist() == [ref(x, -3) for x in a]


def test_int_division_by_zero_broadcasts():
    a = i([[7, 8], [9, 10]])
    b = i([0, 3])
    assert B.int_div(a, b).tolist() == [[0, 2], [0, 3]]


def test_float_remainder_and_div_follow_ieee():
    a = f([5.5, -5.5, 1.0])
    np.testing.assert_array_equal(B.remainder(a, f([2.0, 2.0, 0.0])).numpy(), np.array([1.5, 0.5, NAN], np.float32))
    np.testing.assert_array_equal(B.fmod(a, 2.0).numpy(), np.array([1.5, -1.5, 1.0], np.float32))
    np.testing.assert_array_equal(B.div(a, 0.0).numpy(), np.array([np.inf, -np.inf, np.inf], np.float32))


def test_maximum_minimum_with_scalar_propagate_nan():
    a = f([1.0, NAN, 5.0])
    np.testing.assert_array_equal(B.maximum(a, 2.0).numpy(), np.array([2.0, NAN, 5.0], np.float32))
    np.testing.assert_array_equal(B.minimum(a, 2.0).numpy(), np.array([1.0, NAN, 2.0], np.float32))
    np.testing.assert_array_equal(B.maximum(a, f([0.0, 0.0, NAN])).numpy(), np.array([1.0, NAN, NAN], np.float32))


def test_clamp_lo_above_hi_gives_hi():
    assert B.clamp(f([0.0, 5.0, 10.0]), 6.0, 4.0).tolist() == [4.0, 4.0, 4.0]


def test_sort_is_stable_and_puts_nan_last():
    a = f([[3.0, 1.0, NAN, 1.0, 3.0, 2.0]])
    idx_up = B.argsort(a, 1, False)
    idx_down = B.argsort(a, 1, True)
    assert idx_up.tolist() == [[1, 3, 5, 0, 4, 2]]
    assert idx_down.tolist() == [[2, 0, 4, 5, 1, 3]]
    v, ix = B.sort_with_indices(a, 1, True)
    assert ix.tolist() == idx_down.tolist()
    np.testing.assert_array_equal(v.numpy(), np.array([[NAN, 3, 3, 2, 1, 1]], np.float32))


def test_argsort_stable_on_many_ties():
    a = torch.tensor([1, 0] * 500)
    # numpy's stable sort is an independent reference
    ref = np.argsort(a.numpy(), kind="stable")
    assert B.argsort(a, 0, False).tolist() == ref.tolist()
    ref_desc = np.argsort(-a.numpy(), kind="stable")
    assert B.argsort(a, 0, True).tolist() == ref_desc.tolist()


def test_topk_ties_keep_index_order():
    a = f([1.0, 3.0, 3.0, 3.0, 1.0, 3.0])
    values, idx = B.topk(a, 0, 3)
    assert values.tolist() == [3.0, 3.0, 3.0] and idx.tolist() == [1, 2, 3]


def test_index_results_use_backend_int_dtype():
    a = f([[1.0, 5.0, 2.0], [7.0, 0.0, 7.0]])
    for r in (B32.argmax(a, 1), B32.argmin(a, 1), B32.argsort(a, 1, False), B32.topk(a, 1, 2)[1],
              B32.max_dim_with_indices(a, 1)[1], B32.median(a, 1)[1], B32.argwhere(a > 1), *B32.nonzero(a)):
        assert r.dtype == torch.int32
    assert B32.argmax(a, 1).tolist() == [[1], [0]]  # first of the tied maxima


def test_argmax_argmin_of_bool_and_nan():
    assert B.argmax(torch.tensor([[False, True, True]]), 1).tolist() == [[1]]
    assert B.argmin(torch.tensor([[True, False, False]]), 1).tolist() == [[1]]
    assert B.argmax(f([[1.0, NAN, 9.0, NAN]]), 1).tolist() == [[1]]
    assert B.argmin(f([[1.0, NAN, -9.0]]), 1).tolist() == [[1]]


def test_int_reductions_keep_int32_and_wrap():
    a = torch.tensor([2**30, 2**30, 2**30], dtype=torch.int32)
    s = B32.sum(a)
    assert s.dtype == torch.int32 and s.shape == (1,)
    assert s.item() == np.array([3 * 2**30], dtype=np.int64).astype(np.int32)[0]  # wraps
    assert B32.cumsum(a, 0).dtype == torch.int32
    assert B32.prod(a).dtype == torch.int32 and B32.prod_dim(a[None], 1).dtype == torch.int32


def test_int_mean_floors_from_a_64bit_sum():
    a = torch.tensor([[2**30, 2**30, 2**30 + 1], [-7, 0, 0]], dtype=torch.int32)
    m = B32.mean_dim(a, 1)
    assert m.dtype == torch.int32
    assert m.tolist() == [[(3 * 2**30 + 1) // 3], [-7 // 3]]
    assert B.mean(i([1, 2])).tolist() == [1]
    assert B.mean(torch.zeros(0, dtype=torch.int64)).tolist() == [0]


def test_bool_sum_is_int():
    s = B.sum(torch.tensor([True, True, False]))
    assert s.dtype == torch.int64 and s.tolist() == [2]


def test_whole_reductions_have_shape_one():
    a = f([[1.0, 2.0], [3.0, 4.0]])
    for name in ("sum", "mean", "prod", "max", "min", "any", "all", "max_abs", "contains_nan"):
        assert tuple(getattr(B, name)(a).shape) == (1,), name
    assert torch.isnan(B.mean(torch.zeros(0))).all()


def test_var_with_too_few_elements_is_nan_without_warning():
    v, m = B.var_mean(f([[1.0], [2.0]]), 1, 1)  # one element per row, Bessel's correction
    assert torch.isnan(v).all() and m.tolist() == [[1.0], [2.0]]
    v = B.var(f([[1.0, 2.0, 4.0]]), 1, 1)
    assert v.tolist()[0][0] == pytest.approx(np.var([1.0, 2.0, 4.0], ddof=1))


def test_median_is_the_lower_middle_and_nan_aware():
    v, ix = B.median(f([[4.0, 1.0, 3.0, 2.0], [1.0, NAN, 0.0, 5.0]]), 1)
    assert v[0].tolist() == [2.0]
    assert torch.isnan(v[1]).all() and ix[1].tolist() == [1]


def test_matmul_keeps_first_operand_dtype():
    r = B.matmul(torch.ones(2, 3), torch.ones(3, 2, dtype=torch.float64))
    assert r.dtype == torch.float32 and r.tolist() == [[3.0, 3.0], [3.0, 3.0]]


def test_matmul_int_and_batched_broadcast():
    a = torch.arange(6).reshape(1, 2, 3)
    b = torch.arange(12).reshape(2, 3, 2)
    expected = np.matmul(a.numpy(), b.numpy())
    np.testing.assert_array_equal(B.matmul(a, b).numpy(), expected)


def test_arange_empty_range_like_numpy():
    for start, end, step in [(5, 0, 1), (0, 5, -1), (3, 3, 1)]:
        r = B.arange(start, end, step, ember.DType.INT64, torch.device("cpu"))
        assert r.shape == (0,) and r.dtype == torch.int64
    assert B.arange(10, 0, -3, ember.DType.INT64, torch.device("cpu")).tolist() == [10, 7, 4, 1]


def test_mask_where_with_scalar_keeps_int_dtype():
    a = i([1, 2, 3])
    m = torch.tensor([True, False, True])
    r = B.mask_where(a, m, 0)
    assert r.dtype == torch.int64 and r.tolist() == [0, 2, 0]
    r = B.mask_where(a, m, i([9, 9, 9]))
    assert r.tolist() == [9, 2, 9]


def test_logical_and_atan2_take_python_scalars():
    a = torch.tensor([True, False])
    assert B.logical_and(a, True).tolist() == [True, False]
    assert B.logical_or(a, True).tolist() == [True, True]
    assert B.logical_xor(a, True).tolist() == [False, True]
    r = B.atan2(f([1.0, -1.0]), 1.0)
    np.testing.assert_allclose(r.numpy(), np.arctan2([1.0, -1.0], 1.0), rtol=1e-6)


def test_bitwise_and_shifts():
    a = i([-8, 5, 12])
    assert B.bitwise_right_shift(a, 1).tolist() == [-4, 2, 6]  # arithmetic shift
    assert B.bitwise_left_shift(a, 2).tolist() == [-32, 20, 48]
    assert B.bitwise_not(a).tolist() == [7, -6, -13]
    assert B.bitwise_xor(a, 3).tolist() == [-8 ^ 3, 5 ^ 3, 12 ^ 3]


def test_pad_orders_dims_first_to_last():
    a = i([[1, 2]])
    r = B.pad(a, ((1, 0), (0, 2)), 7)
    assert r.tolist() == [[7, 7, 7, 7], [1, 2, 7, 7]]
    assert B.pad(torch.tensor([True]), ((1, 1),), False).tolist() == [False, True, False]


def test_slice_assign_and_scatter_do_not_mutate_inputs():
    a = torch.zeros(3, 4)
    before = a.clone()
    r = B.slice_assign(a, (slice(0, 2, 1), slice(1, 4, 2)), torch.ones(2, 2))
    assert r[:2, 1::2].eq(1).all() and torch.equal(a, before)
    idx = i([[0, 0, 2, 2]])
    r = B.scatter_add(a, 0, idx, torch.ones(1, 4))
    assert r.sum().item() == 4 and torch.equal(a, before)
    r = B.select_add(a, 0, i([1, 1]), torch.ones(2, 4))
    assert r[1].tolist() == [2.0] * 4 and torch.equal(a, before)
    r = B.mask_fill(a, a == 0, 5.0)
    assert torch.equal(a, before) and r.eq(5).all()
    v = torch.ones(1, 4)
    r = B.zeros_scatter_add((3, 4), 0, idx, v)  # a new buffer: the values are not written
    assert r.sum().item() == 4 and torch.equal(v, torch.ones(1, 4)) and r.data_ptr() != v.data_ptr()
    r = B.zeros_select_add((3, 4), 0, i([1, 1]), torch.ones(2, 4))
    assert r[1].tolist() == [2.0] * 4 and r[0].eq(0).all()


def test_views_are_never_written_through():
    # an op on a view must not change the base (the contract's immutability)
    a = torch.arange(6.0).reshape(2, 3)
    before = a.clone()
    v = B.permute(a, (1, 0))
    B.slice_assign(v, (slice(0, 1, 1), slice(0, 2, 1)), torch.full((1, 2), 9.0))
    B.random_uniform((2,), 0.0, 1.0, ember.DType.FLOAT32, torch.device("cpu"))
    assert torch.equal(a, before)


def test_out_of_range_index_values_raise_index_error():
    a = torch.ones(3)
    for call in (
        lambda: B.gather(a, 0, i([5])),
        lambda: B.scatter_add(a, 0, i([5]), torch.ones(1)),
        lambda: B.select(a, 0, i([5])),
        lambda: B.select_add(a, 0, i([5]), torch.ones(1)),
        lambda: B.zeros_scatter_add((3,), 0, i([5]), torch.ones(1)),
        lambda: B.zeros_select_add((3,), 0, i([5]), torch.ones(1)),
    ):
        with pytest.raises(IndexError):
            call()


def test_cross_and_is_close():
    a, b = f([[1.0, 0.0, 0.0]]), f([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    np.testing.assert_array_equal(B.cross(a, b, 1).numpy(), np.cross(a.numpy(), b.numpy()))
    x = f([1.0, math.inf, NAN, 1e10, 1.0])
    y = f([1.00001, math.inf, NAN, math.inf, 2.0])
    ref = np.isclose(x.numpy(), y.numpy(), rtol=1e-4, atol=1e-5, equal_nan=False)
    assert B.is_close(x, y, 1e-4, 1e-5).tolist() == ref.tolist()


def test_activations_match_reference_formulas():
    x = torch.linspace(-30, 30, 121, dtype=torch.float64)
    xn = x.numpy()
    sig = 1.0 / (1.0 + np.exp(-xn))
    np.testing.assert_allclose(B.sigmoid(x).numpy(), sig, rtol=1e-12)
    np.testing.assert_allclose(B.log_sigmoid(x).numpy(), -np.logaddexp(0.0, -xn), rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(B.relu(x).numpy(), np.maximum(xn, 0.0))
    from math import erfc, sqrt, tanh

    # x * Phi(x) through erfc, exact in the far negative tail (1 + erf(x) would cancel to 0)
    gelu = np.array([v * 0.5 * erfc(-v / sqrt(2)) for v in xn])
    gelu_t = np.array([0.5 * v * (1 + tanh(sqrt(2 / math.pi) * (v + 0.044715 * v**3))) for v in xn])
    np.testing.assert_allclose(B.gelu(x).numpy(), gelu, rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(B.gelu(x, True).numpy(), gelu_t, rtol=1e-12, atol=1e-300)
    m = x.reshape(11, 11)
    e = np.exp(m.numpy() - m.numpy().max(1, keepdims=True))
    np.testing.assert_allclose(B.softmax(m, 1).numpy(), e / e.sum(1, keepdims=True), rtol=1e-12)
    np.testing.assert_allclose(B.log_softmax(m, 1).numpy(), np.log(e / e.sum(1, keepdims=True)), rtol=1e-12)
