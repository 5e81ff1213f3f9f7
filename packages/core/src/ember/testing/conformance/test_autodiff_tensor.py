"""Finite-difference checks of the differentiable Tensor API under ``Autodiff`` (float64).

The primitive rules are checked one by one in ``test_autodiff_rules``; here the public tensor ops
and activations, many of them compositions in the core (``var``, ``narrow``, ``roll``,
``softplus`` ...), are checked end to end, as users call them.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from ember import Tensor
from ember.autodiff import gradcheck
from ember.tensor import activation as A

rng = np.random.default_rng(99)


def U(*shape: int, lo: float = -1.0, hi: float = 1.0) -> np.ndarray:
    return rng.uniform(lo, hi, shape)


def AWAY(*shape: int) -> np.ndarray:
    n = int(np.prod(shape))
    mags = np.linspace(0.2, 1.5, n)
    rng.shuffle(mags)
    return (mags * rng.choice([-1.0, 1.0], n)).reshape(shape)


def ints(x: Tensor, v: Any) -> Tensor:
    return Tensor.from_ints(v, x.device)


_M = rng.random((3, 4)) < 0.5

CASES: list[tuple[str, list[np.ndarray], Any]] = [
    # arithmetic with operators and reflected forms
    ("operators", [U(3, 4), U(4, lo=0.5, hi=1.5)], lambda a, b: (a + b) * a - b / (a * a + 1.0) + 2.0 / b - (1.0 - a)),
    ("pow", [U(3, lo=0.5, hi=1.5), U(3)], lambda a, b: a ** b + a.powf_scalar(1.5) + a.powi_scalar(3) + a.square()),
    ("recip_sqrt_log", [U(2, 3, lo=0.5, hi=2.0)], lambda a: a.recip() + a.sqrt() + a.log() + a.log1p() + a.exp()),
    ("trig", [U(2, 3, lo=-0.8, hi=0.8)], lambda a: a.sin() * a.cos() + a.tan() + a.asin() + a.acos() + a.atan()
     + a.sinh() + a.cosh() + a.tanh() + a.asinh() + a.atanh() + (a + 2.0).acosh() + a.erf()),
    ("atan2", [U(3), AWAY(3)], lambda a, b: a.atan2(b)),
    ("deg_rad", [U(3)], lambda a: a.deg2rad() + a.rad2deg()),
    ("abs_neg_clamp", [AWAY(3, 4)], lambda a: a.abs() - a.neg() * 2.0 + a.clamp(-0.5, 0.55) + a.clamp_min(0.05)
     + a.clamp_max(-0.05)),
    ("max_min_pair", [AWAY(3, 4), AWAY(3, 4) + 0.013], lambda a, b: a.max_pair(b) + a.min_pair(b)),
    ("matmul_dot", [U(2, 3, 4), U(4, 2)], lambda a, b: (a @ b).sum_dim(1) + a.sum_dim(2).sum_dim(1).sum()),
    ("dot", [U(5), U(5)], lambda a, b: a.dot(b)),
    ("reductions", [U(2, 3, 4, lo=0.5, hi=1.5)], lambda a: a.sum() + a.mean() + a.prod() + a.sum_dims([0, 2]).sum()
     + a.mean_dims([1]).sum() + a.prod_dim(1).sum() + a.mean_dim(-1).sum()),
    ("extremes", [AWAY(3, 4)], lambda a: a.max() + a.min() + a.max_dim(1).sum() + a.min_dim(0).sum() + a.max_abs()
     + a.max_dim_with_indices(1)[0].sum() + a.min_dim_with_indices(1)[0].sum()),
    ("scans", [U(3, 4, lo=0.5, hi=1.5)], lambda a: a.cumsum(1) + a.cumprod(0) + AWAY_CUM(a)),
    ("sorting", [AWAY(3, 5)], lambda a: a.sort(1).sum_dim(0) + a.sort_descending(1).sum_dim(0) * 2.0
     + a.topk(3, 1).sum_dim(1).sum() + a.sort_with_indices(0)[0].sum_dim(0)),
    ("median", [AWAY(3, 5)], lambda a: a.median(1)),
    ("statistics", [U(4, 3)], lambda a: a.var(0) + a.var_bias(0) + a.var_mean(0)[0] * a.var_mean(0)[1]),
    ("cov_cross", [U(3, 4), U(3, 4)], lambda a, b: a.cov(1, 1).sum() + a.cross(b, 0).sum()),
    ("shape_ops", [U(2, 3, 4)], lambda a: a.reshape([4, 6]).t().reshape([-1]).unsqueeze_dim(0).squeeze_dim(0)
     + a.permute([2, 0, 1]).flatten(0, 2) + a.swap_dims(0, 2).flip([0, 1]).reshape([24])),
    ("movedim_transpose", [U(2, 3, 4)], lambda a: a.movedim(0, 2).transpose().sum_dim(0)),
    ("expand_repeat", [U(3, 1)], lambda a: a.expand([2, 3, 4]).sum_dim(0) + a.repeat_dim(1, 4) + a.repeat([1, 4])),
    ("slicing", [U(4, 5)], lambda a: a[1:3, ::2].sum() + a.slice([(0, 2), (1, 4)]).sum() + a.narrow(1, 1, 2).sum()
     + a.slice_dim(0, (1, 4)).sum() + a[-1].sum() + a[:, 3].sum()),
    ("slice_assign_fill", [U(4, 5), U(2, 2)], lambda a, v: a.slice_assign([(1, 3), (0, 2)], v)
     + a.slice_fill([(0, 1), (2, 5)], 0.5)),
    ("chunk_split", [U(6, 2)], lambda a: a.chunk(3, 0)[1] * a.split(2, 0)[2]
     + a.split_with_sizes([1, 5], 0)[1].sum_dim(0)),
    ("cat_stack", [U(2, 3), U(1, 3)], lambda a, b: Tensor.cat([a, b, a], 0).sum_dim(0)
     + Tensor.stack([a, a * b], 2).sum_dim(2).sum_dim(0)),
    ("gather_scatter", [U(3, 4), U(3, 2)], lambda a, v: a.gather(1, ints(a, [[0, 3], [1, 1], [2, 0]])) * 2.0
     + a.scatter(1, ints(a, [[0, 3], [1, 1], [2, 0]]), v).slice([(0, 3), (1, 3)])),
    ("select_take", [U(3, 4), U(3, 2)], lambda a, v: a.select(1, ints(a, [3, 0, 3])).sum_dim(1)
     + a.select_assign(1, ints(a, [2, 2]), v).sum_dim(1) + a.take(1, ints(a, [1, 0])).sum_dim(1)),
    ("mask", [U(3, 4), U(3, 4)], lambda a, b: a.mask_where(Tensor.from_bool(_M, a.device), b)
     + a.mask_fill(Tensor.from_bool(_M, a.device), 3.0)),
    ("pad_unfold", [U(2, 5)], lambda a: a.pad((1, 2, 0, 1), 0.5).sum_dim(0)
     + a.unfold(1, 3, 1).sum_dim(2).sum_dim(1).sum()),
    ("roll_tri", [U(3, 3)], lambda a: a.roll([1], [0]) + a.roll_dim(2, 1) + a.triu(0) + a.tril(-1)),
    ("iter_dim", [U(3, 2)], lambda a: Tensor.cat(list(a.iter_dim(0))[::-1], 0)),
    ("float_cast_roundtrip", [U(3) * 3], lambda a: a * a.int().float() + a.floor() + a.ceil() + a.round() + a.trunc()
     + a.sign()),
    # activations
    ("relu_family", [AWAY(3, 4) * 3], lambda a: A.relu(a) + A.leaky_relu(a, 0.1) + A.relu6(a * 3.0) + A.hardtanh(a)
     + A.elu(a) + A.celu(a, 0.5) + A.selu(a)),
    ("sigmoid_family", [AWAY(3, 4) * 3], lambda a: A.sigmoid(a) + A.log_sigmoid(a) + A.hard_sigmoid(a) + A.hard_swish(a)
     + A.silu(a) + A.softplus(a, 2.0) + A.mish(a) + A.softsign(a) + A.tanh(a) + A.tanhshrink(a)),
    ("gelu", [U(3, 4, lo=-3, hi=3)], lambda a: A.gelu(a) + A.gelu_approximate(a)),
    ("softmax_family", [U(3, 4, lo=-2, hi=2)], lambda a: A.softmax(a, 1) + A.log_softmax(a, 0) + A.softmin(a, 1)
     + A.quiet_softmax(a, 1)),
    ("glu_prelu", [U(3, 4, lo=-2, hi=2), U(4, lo=0.1, hi=0.5)],
     lambda a, w: A.glu(a, 1).sum_dim(1) + A.prelu(a, w).sum_dim(1)),
]


def AWAY_CUM(a: Tensor) -> Tensor:  # noqa: N802 - cummax/cummin on values without ties
    return a.cummax(1) + a.cummin(0)


@pytest.mark.parametrize(("name", "inputs", "fn"), CASES, ids=[c[0] for c in CASES])
def test_autodiff_tensor_gradcheck(ad_device: Any, name: str, inputs: list[np.ndarray], fn: Any) -> None:
    gradcheck(fn, inputs, ad_device, eps=1e-6, atol=1e-6, rtol=1e-5)
