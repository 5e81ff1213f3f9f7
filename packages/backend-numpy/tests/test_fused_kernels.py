"""The numpy backend's one-kernel forms of contract composites equal the composites bit for bit (the backward
kernels of relu and log_softmax), and ``index_bounds``' small-array path equals the reductions."""

from __future__ import annotations

import numpy as np
import pytest

from ember.backend.contract import ActivationGradOps
from ember_numpy import NumpyBackend

B = NumpyBackend()
rng = np.random.default_rng(0)


def _specials(dtype: type) -> tuple[np.ndarray, np.ndarray]:
    y = rng.standard_normal((6, 5)).astype(dtype)
    g = rng.standard_normal((6, 5)).astype(dtype)
    y[0, :4] = [np.nan, np.inf, -np.inf, -0.0]
    y[1, 0] = 0.0
    g[2, :3] = [np.nan, np.inf, -0.0]
    return y, g


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_relu_backward_equals_the_composite(dtype: type) -> None:
    y, g = _specials(dtype)
    got = B.relu_backward(g, y)
    want = ActivationGradOps.relu_backward(B, g, y)
    assert got.dtype == want.dtype == dtype
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))  # bit for bit, -0.0 and NaN included
    assert (got[y <= 0] == 0).all() and np.array_equal(got[y > 0], g[y > 0], equal_nan=True)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("dim", [0, 1])
def test_log_softmax_backward_equals_the_composite(dtype: type, dim: int) -> None:
    x = rng.standard_normal((6, 5))
    y = (x - np.log(np.exp(x).sum(dim, keepdims=True))).astype(dtype)
    g = rng.standard_normal((6, 5)).astype(dtype)
    got = B.log_softmax_backward(g, y, dim)
    want = ActivationGradOps.log_softmax_backward(B, g, y, dim)
    assert got.dtype == want.dtype == dtype
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))
    # and the formula itself, in float64: grad - softmax(x) * sum(grad)
    ref = g.astype(np.float64) - np.exp(y.astype(np.float64)) * g.astype(np.float64).sum(dim, keepdims=True)
    np.testing.assert_allclose(got.astype(np.float64), ref, rtol=1e-2 if dtype is np.float16 else 1e-5, atol=1e-2)


@pytest.mark.parametrize("n", [1, 7, 32, 33, 500])
@pytest.mark.parametrize("dtype", [np.int64, np.int32])
def test_index_bounds(n: int, dtype: type) -> None:
    a = rng.integers(-50, 50, (n,)).astype(dtype).reshape(n, 1)
    lo, hi = B.index_bounds(a)
    assert (lo, hi) == (int(a.min()), int(a.max()))
    assert type(lo) is int and type(hi) is int
