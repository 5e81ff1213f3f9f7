"""Ops never change their inputs; the "in-place" Burn ops are functional ``.at[...]`` updates."""

from __future__ import annotations

import numpy as np

import ember
from ember import Bool, Int, Tensor


def _dev():
    return ember.backend("jax").device()


def _snapshot(t: Tensor) -> np.ndarray:
    return np.array(t.to_data().to_numpy(), copy=True)


def test_at_ops_return_new_tensors_and_keep_the_input():
    dev = _dev()
    base = np.arange(12, dtype=np.float32).reshape(3, 4)
    x = Tensor.from_data(base, dev)
    before = _snapshot(x)
    idx = Tensor.from_data([[0, 2, 2, 1]], dev, Int)
    results = {
        "slice_assign": (x.slice_assign([slice(0, 2), slice(1, 3)], Tensor.zeros([2, 2], dev)),
                         np.where(np.isin(np.arange(12).reshape(3, 4), [1, 2, 5, 6]), 0.0, base)),
        "slice_fill": (x.slice_fill([slice(2, 3)], -1.0), np.concatenate([base[:2], -np.ones((1, 4))])),
        "scatter": (x.scatter(0, idx, Tensor.ones([1, 4], dev)), base + np.array(
            [[1, 0, 0, 0], [0, 0, 0, 1], [0, 1, 1, 0]], dtype=np.float32)),
        "mask_fill": (x.mask_fill(x > 5.0, 0.0), np.where(base > 5, 0.0, base)),
        "mask_where": (x.mask_where(x < 3.0, -x), np.where(base < 3, -base, base)),
    }
    # select_assign with a repeated index accumulates (torch.index_add)
    sa = x.select_assign(1, Tensor.from_data([3, 3], dev, Int), Tensor.ones([3, 2], dev))
    expect_sa = base.copy()
    expect_sa[:, 3] += 2.0
    results["select_assign"] = (sa, expect_sa)
    for name, (got, expected) in results.items():
        np.testing.assert_array_equal(got.to_data().to_numpy(), expected, err_msg=name)
    np.testing.assert_array_equal(_snapshot(x), before)


def test_no_op_changes_its_inputs():
    dev = _dev()
    a = Tensor.from_data(np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4), dev)
    b = Tensor.from_data(np.linspace(1, 3, 12, dtype=np.float32).reshape(3, 4), dev)
    sa, sb = _snapshot(a), _snapshot(b)
    _ = [a + b, a - b, a * b, a / b, a.exp(), a.sort(1), a.cumsum(0), a.flip([0]), a.permute([1, 0]),
         a.reshape([4, 3]), a.expand([2, 3, 4]), a.swap_dims(0, 1), a.max_dim(1), a.topk(2, 1), a.clamp(-1.0, 1.0),
         a.pad([(1, 1), (0, 2)], 0.0), a.repeat_dim(0, 2), a.unfold(1, 2, 1), a.matmul(b.transpose()),
         a.var(1), a.median(1), a.select(0, [2, 0]), a.gather(1, Tensor.from_data([[0], [1], [3]], dev, Int))]
    np.testing.assert_array_equal(_snapshot(a), sa)
    np.testing.assert_array_equal(_snapshot(b), sb)


def test_from_data_does_not_alias_a_numpy_array_the_user_writes_later():
    dev = _dev()
    arr = np.ones((4,), dtype=np.float32)
    t = Tensor.from_data(arr, dev)
    arr[0] = 5.0
    assert t.to_data().to_numpy().tolist() == [1.0, 1.0, 1.0, 1.0]


def test_bool_masks_and_nonzero_are_eager():
    dev = _dev()
    m = Tensor.from_data([[True, False], [False, True]], dev, Bool)
    coords = m.nonzero()
    assert [c.to_data().to_numpy().tolist() for c in coords] == [[0, 1], [0, 1]]
    assert m.argwhere().to_data().to_numpy().tolist() == [[0, 0], [1, 1]]
