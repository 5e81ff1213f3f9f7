"""Pooling (``ember.tensor.functional``): max_pool1d/2d (+ indices), avg_pool1d/2d, adaptive_avg_pool1d/2d.

Forward against the naive float64 loops of :mod:`._module_helpers` on every float dtype and
against ``torch.nn.functional`` in float64 where torch is installed; gradients by finite
differences under ``Autodiff``; the contract's composite defaults; errors.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from ember import Float, Int, KindError, ShapeError, Tensor
from ember.autodiff import gradcheck
from ember.backend._ops_module import ModuleOps
from ember.tensor import functional as M
from ember.testing import assert_close, assert_equal

from ._module_helpers import (
    adaptive_avg_pool2d_ref,
    avg_pool2d_ref,
    away,
    ftensor,
    held,
    low_precision,
    max_pool2d_ref,
)

rng = np.random.default_rng(7)


def _t(v: Any) -> tuple[int, int]:
    return (v, v) if isinstance(v, int) else tuple(v)  # type: ignore[return-value]


# (x shape, kernel, stride, padding, dilation, ceil_mode)
MAX2D = [
    ((2, 3, 6, 6), 2, None, 0, 1, False),
    ((1, 2, 7, 5), (3, 2), (2, 1), (1, 1), (1, 2), False),
    ((2, 2, 7, 8), 3, 2, 1, 1, True),
    ((1, 3, 5, 6), (2, 3), (2, 2), (1, 1), (2, 1), True),
    ((1, 1, 4, 4), 4, 1, 0, 1, False),  # one window
]
# (x shape, kernel, stride, padding, count_include_pad, ceil_mode)
AVG2D = [
    ((2, 3, 6, 6), 2, None, 0, True, False),
    ((1, 2, 7, 5), (3, 2), (2, 1), (1, 1), True, False),
    ((1, 2, 7, 5), (3, 2), (2, 1), (1, 1), False, False),
    ((2, 2, 7, 8), 3, 2, 1, True, True),
    ((2, 2, 7, 8), 3, 2, 1, False, True),
    ((1, 1, 5, 6), (2, 4), (3, 3), (1, 2), False, True),
]
ADAPTIVE2D = [((2, 3, 6, 6), (1, 1)), ((1, 2, 7, 5), (3, 2)), ((1, 2, 5, 7), (5, 7)), ((1, 1, 4, 5), (6, 7))]


def _held_x(shape: tuple[int, ...], device: Any) -> Tensor:
    return ftensor(away(rng, *shape), device)


# ---------------------------------------------------------------------------- max pooling
@pytest.mark.parametrize("case", MAX2D, ids=str)
def test_module_max_pool2d(float_device: Any, case: Any) -> None:
    xs, k, s, p, d, ceil = case
    x = _held_x(xs, float_device)
    y = M.max_pool2d(x, k, s, p, d, ceil)
    v, idx = M.max_pool2d_with_indices(x, k, s, p, d, ceil)
    ev, ei = max_pool2d_ref(held(x), _t(k), _t(k if s is None else s), _t(p), _t(d), ceil)
    assert_close(y, ev)
    assert_close(v, ev)
    if not low_precision(float_device):  # rounding may create ties there
        assert idx.kind is Int
        assert_equal(idx, ei)


@pytest.mark.parametrize("case", MAX2D[:3], ids=str)
def test_module_max_pool1d(float_device: Any, case: Any) -> None:
    xs, k, s, p, d, ceil = case
    k, s, p, d = _t(k)[1], _t(k if s is None else s)[1], _t(p)[1], _t(d)[1]
    x3 = away(rng, xs[0], xs[1], xs[3])
    x = ftensor(x3, float_device)
    y = M.max_pool1d(x, k, s, p, d, ceil)
    v, idx = M.max_pool1d_with_indices(x, k, s, p, d, ceil)
    ev, ei = max_pool2d_ref(held(x)[:, :, None, :], (1, k), (1, s), (0, p), (1, d), ceil)
    assert_close(y, ev[:, :, 0])
    assert_close(v, ev[:, :, 0])
    if not low_precision(float_device):
        assert_equal(idx, ei[:, :, 0])


def test_module_max_pool2d_nan_and_ties(f64_device: Any) -> None:
    nan = float("nan")
    x = Tensor.from_floats([[[[1.0, 1.0, 2.0, nan, nan, 3.0], [1.0, 0.0, 2.0, 0.0, 1.0, nan]]]], f64_device)
    v, idx = M.max_pool2d_with_indices(x, 2)
    assert_close(v, [[[[1.0, nan, nan]]]])
    # the first of tied maxima; a NaN wins, the last one when there are several (PyTorch)
    assert_equal(idx, [[[[0, 3, 11]]]])


@pytest.mark.parametrize("case", MAX2D, ids=str)
def test_module_max_pool2d_matches_torch(f64_device: Any, case: Any) -> None:
    torch = pytest.importorskip("torch")
    xs, k, s, p, d, ceil = case
    x = away(rng, *xs)
    v, idx = M.max_pool2d_with_indices(ftensor(x, f64_device), k, s, p, d, ceil)
    tv, ti = torch.nn.functional.max_pool2d(torch.tensor(x), k, s, p, d, ceil_mode=ceil, return_indices=True)
    assert_close(v, tv.numpy())
    assert_equal(idx, ti.numpy())


@pytest.mark.parametrize("case", MAX2D, ids=str)
def test_module_max_pool2d_gradcheck(ad_device: Any, case: Any) -> None:
    xs, k, s, p, d, ceil = case
    gradcheck(lambda x: M.max_pool2d(x, k, s, p, d, ceil), [away(rng, *xs)], ad_device)


def test_module_max_pool_with_indices_gradcheck(ad_device: Any) -> None:
    gradcheck(lambda x: M.max_pool2d_with_indices(x, 3, 2, 1)[0], [away(rng, 1, 2, 6, 5)], ad_device)
    gradcheck(lambda x: M.max_pool1d(x, 3, 2, 1, 2), [away(rng, 2, 2, 9)], ad_device)
    gradcheck(lambda x: M.max_pool1d_with_indices(x, 2, 1)[0], [away(rng, 1, 2, 5)], ad_device)


# ---------------------------------------------------------------------------- average pooling
@pytest.mark.parametrize("case", AVG2D, ids=str)
def test_module_avg_pool2d(float_device: Any, case: Any) -> None:
    xs, k, s, p, cip, ceil = case
    x = ftensor(rng.uniform(-1, 1, xs), float_device)
    y = M.avg_pool2d(x, k, s, p, cip, ceil)
    assert_close(y, avg_pool2d_ref(held(x), _t(k), _t(k if s is None else s), _t(p), cip, ceil))


@pytest.mark.parametrize("case", AVG2D[2:5], ids=str)
def test_module_avg_pool1d(float_device: Any, case: Any) -> None:
    xs, k, s, p, cip, ceil = case
    k, s, p = _t(k)[1], _t(k if s is None else s)[1], _t(p)[1]
    x = ftensor(rng.uniform(-1, 1, (xs[0], xs[1], xs[3])), float_device)
    y = M.avg_pool1d(x, k, s, p, cip, ceil)
    assert_close(y, avg_pool2d_ref(held(x)[:, :, None, :], (1, k), (1, s), (0, p), cip, ceil)[:, :, 0])


@pytest.mark.parametrize("case", AVG2D, ids=str)
def test_module_avg_pool2d_matches_torch(f64_device: Any, case: Any) -> None:
    torch = pytest.importorskip("torch")
    xs, k, s, p, cip, ceil = case
    x = rng.uniform(-1, 1, xs)
    y = M.avg_pool2d(ftensor(x, f64_device), k, s, p, cip, ceil)
    exp = torch.nn.functional.avg_pool2d(torch.tensor(x), k, s, p, ceil_mode=ceil, count_include_pad=cip)
    assert_close(y, exp.numpy())


@pytest.mark.parametrize("case", AVG2D, ids=str)
def test_module_avg_pool2d_gradcheck(ad_device: Any, case: Any) -> None:
    xs, k, s, p, cip, ceil = case
    gradcheck(lambda x: M.avg_pool2d(x, k, s, p, cip, ceil), [rng.uniform(-1, 1, xs)], ad_device)


def test_module_avg_pool1d_gradcheck(ad_device: Any) -> None:
    gradcheck(lambda x: M.avg_pool1d(x, 3, 2, 1, False, True), [rng.uniform(-1, 1, (2, 2, 8))], ad_device)


# ---------------------------------------------------------------------------- adaptive
@pytest.mark.parametrize("case", ADAPTIVE2D, ids=str)
def test_module_adaptive_avg_pool2d(float_device: Any, case: Any) -> None:
    xs, out = case
    x = ftensor(rng.uniform(-1, 1, xs), float_device)
    assert_close(M.adaptive_avg_pool2d(x, out), adaptive_avg_pool2d_ref(held(x), out))


def test_module_adaptive_avg_pool1d(float_device: Any) -> None:
    x = ftensor(rng.uniform(-1, 1, (2, 3, 7)), float_device)
    assert_close(M.adaptive_avg_pool1d(x, 3), adaptive_avg_pool2d_ref(held(x)[:, :, None, :], (1, 3))[:, :, 0])


@pytest.mark.parametrize("case", ADAPTIVE2D, ids=str)
def test_module_adaptive_avg_pool2d_matches_torch(f64_device: Any, case: Any) -> None:
    torch = pytest.importorskip("torch")
    xs, out = case
    x = rng.uniform(-1, 1, xs)
    exp = torch.nn.functional.adaptive_avg_pool2d(torch.tensor(x), out)
    assert_close(M.adaptive_avg_pool2d(ftensor(x, f64_device), out), exp.numpy())


def test_module_adaptive_avg_pool_gradcheck(ad_device: Any) -> None:
    gradcheck(lambda x: M.adaptive_avg_pool2d(x, (3, 2)), [rng.uniform(-1, 1, (1, 2, 7, 5))], ad_device)
    gradcheck(lambda x: M.adaptive_avg_pool1d(x, 4), [rng.uniform(-1, 1, (2, 2, 6))], ad_device)


# ---------------------------------------------------------------------------- contract defaults
def test_module_pool_contract_defaults(f64_device: Any) -> None:
    B = f64_device.backend
    x = away(rng, 2, 2, 7, 8)
    xp = ftensor(x, f64_device).primitive
    v, i = ModuleOps.max_pool2d_with_indices(B, xp, (3, 2), (2, 2), (1, 1), (1, 2), True)
    ev, ei = max_pool2d_ref(x, (3, 2), (2, 2), (1, 1), (1, 2), True)
    np.testing.assert_array_equal(B.to_numpy(v), ev)
    np.testing.assert_array_equal(B.to_numpy(i), ei)
    g = rng.uniform(-1, 1, ev.shape)
    gx = B.to_numpy(ModuleOps.max_pool2d_backward(B, ftensor(g, f64_device).primitive, i, x.shape, (3, 2), (2, 2),
                                                  (1, 1), (1, 2), True))
    exp = np.zeros(x.size)
    np.add.at(exp.reshape(4, -1), (np.arange(4)[:, None], ei.reshape(4, -1)), g.reshape(4, -1))
    np.testing.assert_allclose(gx, exp.reshape(x.shape), atol=1e-12)
    a = ModuleOps.avg_pool2d(B, xp, (3, 3), (2, 2), (1, 1), False, True)
    ea = avg_pool2d_ref(x, (3, 3), (2, 2), (1, 1), False, True)
    np.testing.assert_allclose(B.to_numpy(a), ea, atol=1e-12)
    ga = rng.uniform(-1, 1, ea.shape)  # adjoint identity of the average pooling
    gxa = B.to_numpy(ModuleOps.avg_pool2d_backward(B, ftensor(ga, f64_device).primitive, x.shape, (3, 3), (2, 2),
                                                   (1, 1), False, True))
    assert abs(float((x * gxa).sum()) - float((ea * ga).sum())) < 1e-10


# ---------------------------------------------------------------------------- errors
def test_module_pool_errors(device: Any) -> None:
    x = Tensor.zeros([2, 3, 6, 6], device)
    with pytest.raises(ShapeError, match=r"max_pool2d.*\[batch, channels, height, width\].*\[3, 6, 6\]"):
        M.max_pool2d(Tensor.zeros([3, 6, 6], device), 2)
    with pytest.raises(ShapeError, match=r"avg_pool1d.*\[batch, channels, length\]"):
        M.avg_pool1d(x, 2)
    with pytest.raises(ValueError, match="at most half of kernel_size"):
        M.max_pool2d(x, 2, 1, 2)
    with pytest.raises(ShapeError, match="larger than the padded input"):
        M.avg_pool2d(x, 7)
    with pytest.raises(ValueError, match="kernel_size must be >= 1"):
        M.max_pool2d(x, 0)
    with pytest.raises(KindError, match="max_pool2d"):
        M.max_pool2d(x.int(), 2)
    with pytest.raises(ValueError, match="output_size must be >= 1"):
        M.adaptive_avg_pool2d(x, (0, 2))
    with pytest.raises(ShapeError, match=r"adaptive_avg_pool1d.*\[batch, channels, length\]"):
        M.adaptive_avg_pool1d(x, 2)
    assert M.max_pool2d(x, 2).kind is Float
