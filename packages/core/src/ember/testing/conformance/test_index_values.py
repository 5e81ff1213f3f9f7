"""Index values out of range, negative ones included, raise the same ``ember.IndexError`` on every backend
(issue 28): one case per op that takes indices, each with an index past the end and a negative one (numpy
would count ``-1`` from the end, jax would clamp, fill or drop, torch raises its own errors). The message
names the op, the value found and the valid range. Devices whose backend does not report index values
(``Backend.checks_index_values``: torch on CUDA) skip the calls. Also ``Backend.index_bounds``, the
reduction the check is built on, against numpy."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from ember import Int, Tensor
from ember.nn.loss import CrossEntropyLossConfig
from ember.tensor import functional as M
from ember.testing.conformance._shape_helpers import raises_out_of_range


def _i(dev: Any, values: Any) -> Tensor:
    return Tensor.from_data(np.asarray(values, dtype=np.int64), dev, Int)


def _x(dev: Any) -> Tensor:
    return Tensor.from_data(np.arange(12.0).reshape(3, 4), dev)


#: op name -> (call with the bad value ``b`` on device ``d``, size of the indexed dim, noun in the message)
CASES: dict[str, tuple[Callable[[Any, int], Any], int, str]] = {
    "select": (lambda d, b: _x(d).select(1, _i(d, [0, b, 2])), 4, "index"),
    "select_assign": (lambda d, b: _x(d).select_assign(0, _i(d, [b]), Tensor.ones([1, 4], d)), 3, "index"),
    "take": (lambda d, b: _x(d).take(0, _i(d, [[1, b]])), 3, "index"),
    "indexing": (lambda d, b: _x(d)[:, _i(d, [b, 0])], 4, "index"),
    "gather": (lambda d, b: _x(d).gather(1, _i(d, [[0], [b], [3]])), 4, "index"),
    "scatter": (lambda d, b: _x(d).scatter(0, _i(d, [[0, 1, b, 2]]), Tensor.ones([1, 4], d)), 3, "index"),
    "gather_nd": (lambda d, b: _x(d).gather_nd(_i(d, [[2, 3], [1, b]])), 4, "coordinate"),
    "scatter_nd": (lambda d, b: _x(d).scatter_nd(_i(d, [[b, 0]]), Tensor.ones([1], d)), 3, "coordinate"),
    "embedding": (lambda d, b: M.embedding(_x(d), _i(d, [[0, 2], [b, 1]])), 3, "index"),
    "one_hot": (lambda d, b: _i(d, [1, b, 0]).one_hot(5), 5, "class"),
    "CrossEntropyLoss": (lambda d, b: CrossEntropyLossConfig().init(d)(_x(d), _i(d, [0, b, 3])), 4, "target"),
}


@pytest.mark.parametrize("where", ["negative", "past_end"])
@pytest.mark.parametrize("op", list(CASES))
def test_index_value_out_of_range(device: Any, op: str, where: str) -> None:
    fn, size, what = CASES[op]
    bad = -1 if where == "negative" else size
    exc = raises_out_of_range(device, op, fn, device, bad)
    if exc is not None:
        msg = str(exc)
        assert msg.startswith(f"{op}: {what} {bad} is out of range"), msg
        assert f"expected a value in [0, {size - 1}]" in msg, msg


@pytest.mark.parametrize("op", ["gather", "select", "embedding", "CrossEntropyLoss"])
def test_index_value_out_of_range_under_autodiff(ad_device: Any, op: str) -> None:
    # the forward raises before the op is recorded, so a backward rule (scatter_add, select_add,
    # embedding_backward) never sees the index
    fn, size, what = CASES[op]
    exc = raises_out_of_range(ad_device, op, fn, ad_device, -2)
    if exc is not None:
        assert re.match(rf"{op}: {what} -2 is out of range", str(exc)), exc


def test_pad_token_targets_are_not_checked(device: Any) -> None:
    # a pad token (PyTorch's ignore_index, -100 by convention) may lie outside [0, num_classes)
    loss = CrossEntropyLossConfig(pad_tokens=[-100]).init(device)
    x = _x(device)
    got = loss(x, _i(device, [0, -100, 3])).into_scalar()
    lp = np.arange(12.0).reshape(3, 4)
    lp = lp - np.log(np.exp(lp).sum(1, keepdims=True))
    assert abs(float(got) - (-(lp[0, 0] + lp[2, 3]) / 2)) < 1e-5


@pytest.mark.parametrize("values", [[5], [0, -7, 3], [[2, 9], [-1, 4]], [-(2**31), 2**31 - 1]], ids=str)
def test_index_bounds(int_device: Any, values: Any) -> None:
    t = _i(int_device, values)
    assert t.ops.index_bounds(t.primitive) == (int(np.min(values)), int(np.max(values)))


def test_empty_and_in_range_indices_pass(device: Any) -> None:
    x = _x(device)
    assert x.select(0, _i(device, np.zeros(0, dtype=np.int64))).shape == (0, 4)
    np.testing.assert_array_equal(M.embedding(x, _i(device, [[2], [0]])).to_numpy(), [[[8, 9, 10, 11]], [[0, 1, 2, 3]]])
