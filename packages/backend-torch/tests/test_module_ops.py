"""The torch backend's native module kernels (``ember_torch._module``) against independent references.

The conformance suite checks the ops through ``ember.tensor.functional``; these tests call the
primitives directly, on the geometries where a native kernel and the contract could part ways:
backward primitives on inputs longer than the outputs cover, ceil-mode windows, integer index
dtypes, nearest interpolation where torch's float32 scale rounds, low-precision dtypes, purity.
References are numpy float64 loops over kernel taps, hand-computed values, and the contract's own
composite defaults (:class:`ember.backend._ops_module.ModuleOps`, written with other primitives).
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
import torch

import ember
from ember.backend._ops_module import ModuleOps

B = ember.backend("torch", float_dtype="float64")
B32 = ember.backend("torch", int_dtype="int32")
rng = np.random.default_rng(11)


def t64(a: np.ndarray) -> torch.Tensor:
    return torch.tensor(np.asarray(a, np.float64))


def distinct(*shape: int) -> np.ndarray:
    """Values at least 0.05 apart (no ties in max pooling)."""
    n = int(np.prod(shape))
    v = (np.arange(n) - n / 2) * 0.05
    rng.shuffle(v)
    return v.reshape(shape)


def close(out: torch.Tensor, expected: Any, tol: float = 1e-11) -> None:
    np.testing.assert_allclose(out.numpy(), np.asarray(expected), rtol=tol, atol=tol)


# ---------------------------------------------------------------------------- numpy references
def conv_np(x: np.ndarray, w: np.ndarray, stride: tuple[int, ...], padding: tuple[int, ...],
            dilation: tuple[int, ...], groups: int) -> np.ndarray:
    """``y[n, o, p] = sum_{c, k} xpad[n, g Cg + c, p s + k d] w[o, c, k]``, one einsum per kernel tap."""
    nd = x.ndim - 2
    xp = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in padding])
    o, cg, kernel = w.shape[0], w.shape[1], w.shape[2:]
    out = [(xp.shape[2 + i] - dilation[i] * (kernel[i] - 1) - 1) // stride[i] + 1 for i in range(nd)]
    y = np.zeros([x.shape[0], o] + out)
    og = o // groups
    for g in range(groups):
        for tap in itertools.product(*[range(k) for k in kernel]):
            sl = tuple(slice(t * d, t * d + s * (q - 1) + 1, s) for t, s, d, q in zip(tap, stride, dilation, out))
            xs = xp[(slice(None), slice(g * cg, (g + 1) * cg)) + sl]
            y[:, g * og:(g + 1) * og] += np.einsum("nc...,oc->no...", xs, w[(slice(g * og, (g + 1) * og),
                                                                               slice(None)) + tap])
    return y


def conv_transpose_np(x: np.ndarray, w: np.ndarray, stride: tuple[int, ...], padding: tuple[int, ...],
                      output_padding: tuple[int, ...], dilation: tuple[int, ...], groups: int) -> np.ndarray:
    """Scatter form: input position ``p`` adds ``x w[:, :, k]`` at output ``p s + k d - padding``."""
    nd = x.ndim - 2
    cin, og, kernel = w.shape[0], w.shape[1], w.shape[2:]
    cg = cin // groups
    sizes = x.shape[2:]
    out = [(sizes[i] - 1) * stride[i] - 2 * padding[i] + dilation[i] * (kernel[i] - 1) + output_padding[i] + 1
           for i in range(nd)]
    big = np.zeros([x.shape[0], og * groups] + [out[i] + 2 * padding[i] for i in range(nd)])
    for g in range(groups):
        for tap in itertools.product(*[range(k) for k in kernel]):
            sl = tuple(slice(t * d, t * d + s * (n - 1) + 1, s) for t, s, d, n in zip(tap, stride, dilation, sizes))
            contrib = np.einsum("nc...,co->no...", x[:, g * cg:(g + 1) * cg],
                                w[(slice(g * cg, (g + 1) * cg), slice(None)) + tap])
            big[(slice(None), slice(g * og, (g + 1) * og)) + sl] += contrib
    return big[(slice(None), slice(None)) + tuple(slice(p, p + q) for p, q in zip(padding, out))]


# ---------------------------------------------------------------------------- convolution
# (x shape, weight shape, stride, padding, dilation, groups)
CONV = [
    ((2, 3, 7, 6), (4, 3, 3, 3), (1, 1), (0, 0), (1, 1), 1),  # input gradient by col2im (F.fold)
    ((2, 1, 9, 8), (3, 1, 3, 2), (2, 3), (1, 1), (2, 1), 1),  # col2im, strided, dilated, trailing inputs
    ((2, 8, 6, 5), (4, 8, 3, 3), (1, 1), (1, 1), (1, 1), 1),  # input gradient by oneDNN
    ((1, 4, 8, 9), (6, 2, 3, 2), (2, 3), (1, 0), (2, 1), 2),  # trailing input rows no window reaches
    ((2, 6, 5, 5), (6, 1, 3, 3), (2, 2), (1, 1), (1, 1), 6),  # depthwise
    ((1, 2, 6, 5, 7), (4, 1, 2, 3, 2), (2, 1, 3), (1, 0, 1), (1, 2, 1), 2),  # 3-D
    ((2, 3, 11), (4, 3, 3), (2,), (1,), (3,), 1),  # 1-D
]


@pytest.mark.parametrize("case", CONV, ids=str)
def test_conv_forward_and_backward_match_references(case: Any) -> None:
    xs, ws, stride, padding, dilation, groups = case
    nd = len(xs) - 2
    x, w, b = rng.uniform(-1, 1, xs), rng.uniform(-1, 1, ws), rng.uniform(-1, 1, ws[0])
    op = {1: B.conv1d, 2: B.conv2d, 3: B.conv3d}[nd]
    y = op(t64(x), t64(w), t64(b), stride, padding, dilation, groups)
    close(y, conv_np(x, w, stride, padding, dilation, groups) + b.reshape((1, -1) + (1,) * nd))
    if nd == 1:
        return  # conv1d has no backward primitives (Autodiff runs it as conv2d)
    g = rng.uniform(-1, 1, tuple(y.shape))
    back_in = {2: B.conv2d_backward_input, 3: B.conv3d_backward_input}[nd]
    back_w = {2: B.conv2d_backward_weight, 3: B.conv3d_backward_weight}[nd]
    gx = back_in(t64(g), t64(w), xs, stride, padding, dilation, groups)
    gw = back_w(t64(x), t64(g), ws, stride, padding, dilation, groups)
    # the contract's im2col defaults, and torch autograd, as two independent references
    close(gx, ModuleOps._conv_nd_backward_input(B, t64(g), t64(w), xs, stride, padding, dilation, groups).numpy())
    close(gw, ModuleOps._conv_nd_backward_weight(B, t64(x), t64(g), ws, stride, padding, dilation, groups).numpy())
    xr, wr = t64(x).requires_grad_(), t64(w).requires_grad_()
    fn = {2: torch.nn.functional.conv2d, 3: torch.nn.functional.conv3d}[nd]
    ax, aw = torch.autograd.grad(fn(xr, wr, None, stride, padding, dilation, groups), (xr, wr), t64(g))
    close(gx, ax.numpy())
    close(gw, aw.numpy())


@pytest.mark.parametrize("c", [3, 8])  # the col2im and the oneDNN input gradient
def test_conv_backward_with_gradient_shorter_than_the_outputs(c: int) -> None:
    # a transposed convolution with padding_out >= stride (allowed below the dilation) hands the
    # weight gradient an input longer than its output gradient covers: missing outputs count as 0
    x, g = rng.uniform(-1, 1, (2, c, 1, 6)), rng.uniform(-1, 1, (2, 4, 1, 3))
    stride, padding, dilation, ws = (1, 1), (0, 1), (1, 2), (4, c, 1, 3)
    # conv_out(6, k=3, s=1, p=1, d=2) = 4 outputs; the gradient has 3
    gw = B.conv2d_backward_weight(t64(x), t64(g), ws, stride, padding, dilation, 1)
    g_full = np.concatenate([g, np.zeros((2, 4, 1, 1))], axis=3)
    xr = t64(x)
    wr = t64(np.zeros(ws)).requires_grad_()
    (aw,) = torch.autograd.grad(torch.nn.functional.conv2d(xr, wr, None, stride, padding, dilation), wr, t64(g_full))
    close(gw, aw.numpy())
    w = rng.uniform(-1, 1, ws)
    gx = B.conv2d_backward_input(t64(g), t64(w), x.shape, stride, padding, dilation, 1)
    close(gx, ModuleOps._conv_nd_backward_input(B, t64(g), t64(w), x.shape, stride, padding, dilation, 1).numpy())


# (x shape, weight shape, stride, padding, output_padding, dilation, groups)
CONV_T = [
    ((2, 3, 4, 3), (3, 4, 3, 3), (1, 1), (0, 0), (0, 0), (1, 1), 1),
    ((2, 4, 3, 4), (4, 3, 3, 2), (2, 3), (1, 0), (1, 2), (2, 1), 2),
    ((1, 2, 5), (2, 4, 3), (1,), (1,), (1,), (2,), 1),  # padding_out below the dilation, stride 1
    ((1, 2, 3, 2, 3), (2, 2, 2, 2, 2), (2, 1, 1), (0, 1, 0), (1, 0, 0), (1, 1, 1), 1),
]


@pytest.mark.parametrize("case", CONV_T, ids=str)
def test_conv_transpose_matches_scatter_reference(case: Any) -> None:
    xs, ws, stride, padding, out_pad, dilation, groups = case
    nd = len(xs) - 2
    x, w, b = rng.uniform(-1, 1, xs), rng.uniform(-1, 1, ws), rng.uniform(-1, 1, ws[1] * groups)
    op = {1: B.conv_transpose1d, 2: B.conv_transpose2d, 3: B.conv_transpose3d}[nd]
    y = op(t64(x), t64(w), t64(b), stride, padding, out_pad, dilation, groups)
    exp = conv_transpose_np(x, w, stride, padding, out_pad, dilation, groups) + b.reshape((1, -1) + (1,) * nd)
    close(y, exp)


def test_unfold4d_layout() -> None:
    # rows channel-major, then kernel row, then kernel column; columns the blocks in row-major order
    x = np.arange(2 * 3 * 4, dtype=np.float64).reshape(1, 2, 3, 4)
    y = B.unfold4d(t64(x), (2, 2), (1, 2), (0, 0), (1, 1))
    assert tuple(y.shape) == (1, 8, 4)  # 2 x 2 blocks
    assert y[0, :, 0].tolist() == [0, 1, 4, 5, 12, 13, 16, 17]  # block (0, 0): both channels
    assert y[0, 3, :].tolist() == [5, 7, 9, 11]  # channel 0, tap (1, 1) of each block


# ---------------------------------------------------------------------------- max pooling
# (x shape, kernel, stride, padding, dilation, ceil_mode)
MAX = [
    ((2, 3, 6, 6), (2, 2), (2, 2), (0, 0), (1, 1), False),
    ((1, 2, 7, 5), (3, 2), (2, 1), (1, 1), (1, 2), False),
    ((2, 2, 7, 8), (3, 3), (2, 2), (1, 1), (1, 1), True),  # overlapping windows, ceil mode
    ((1, 3, 5, 6), (2, 3), (2, 2), (1, 1), (2, 1), True),
    ((1, 1, 9, 9), (2, 2), (3, 3), (0, 0), (1, 1), True),  # stride > kernel: inputs in no window
]


@pytest.mark.parametrize("case", MAX, ids=str)
def test_max_pool2d_matches_contract_default(case: Any) -> None:
    xs, *args = case
    x = t64(distinct(*xs))
    v, i = B.max_pool2d_with_indices(x, *args)
    ev, ei = ModuleOps.max_pool2d_with_indices(B, x, *args)
    close(v, ev.numpy(), 0.0)
    assert i.dtype == torch.int64 and torch.equal(i, ei)
    close(B.max_pool2d(x, *args), ev.numpy(), 0.0)
    g = t64(rng.uniform(-1, 1, tuple(v.shape)))
    gx = B.max_pool2d_backward(g, i, xs, *args)
    close(gx, ModuleOps.max_pool2d_backward(B, g, ei, xs, *args).numpy())


def test_max_pool_ties_nan_and_int32_indices() -> None:
    nan = float("nan")
    x = torch.tensor([[[[1.0, 1.0, 2.0, nan, nan, 3.0], [1.0, 0.0, 2.0, 0.0, 1.0, nan]]]])
    v, i = B32.max_pool2d_with_indices(x, (2, 2), (2, 2), (0, 0), (1, 1), False)
    np.testing.assert_array_equal(v.numpy(), [[[[1.0, nan, nan]]]])
    # the first of tied maxima; the last NaN of a window (PyTorch)
    assert i.dtype == torch.int32 and i.tolist() == [[[[0, 3, 11]]]]
    gx = B32.max_pool2d_backward(torch.ones(1, 1, 1, 3), i, (1, 1, 2, 6), (2, 2), (2, 2), (0, 0), (1, 1), False)
    assert gx.flatten().tolist() == [1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1]
    v1, i1 = B32.max_pool1d_with_indices(torch.tensor([[[3.0, 5.0, 5.0, 1.0, 4.0]]]), (2,), (2,), (0,), (1,), True)
    assert v1.tolist() == [[[5.0, 5.0, 4.0]]] and i1.dtype == torch.int32 and i1.tolist() == [[[1, 2, 4]]]


def test_max_pool_backward_accumulates_overlapping_windows() -> None:
    x = torch.tensor([[[[0.0, 0.0, 0.0], [0.0, 9.0, 0.0], [0.0, 0.0, 0.0]]]])
    v, i = B.max_pool2d_with_indices(x, (2, 2), (1, 1), (0, 0), (1, 1), False)
    assert i.flatten().tolist() == [4, 4, 4, 4]  # the centre wins all four windows
    g = torch.tensor([[[[1.0, 2.0], [3.0, 4.0]]]])
    gx = B.max_pool2d_backward(g, i, (1, 1, 3, 3), (2, 2), (1, 1), (0, 0), (1, 1), False)
    assert gx.flatten().tolist() == [0, 0, 0, 0, 10, 0, 0, 0, 0]


def test_max_pool1d_matches_numpy() -> None:
    x = distinct(2, 3, 11)
    v, i = B.max_pool1d_with_indices(t64(x), (3,), (2,), (1,), (2,), True)
    xp = np.pad(x, ((0, 0), (0, 0), (1, 4)), constant_values=-np.inf)
    n_out = v.shape[2]  # ceil((11 + 2 - 4 - 1) / 2) + 1 = 5
    assert n_out == 5
    win = np.stack([xp[:, :, 2 * o + 2 * np.arange(3)] for o in range(n_out)], axis=2)  # [N, C, out, k]
    close(v, win.max(-1), 0.0)
    assert i.tolist() == (2 * np.arange(n_out)[:, None] + 2 * np.arange(3) - 1)[
        np.arange(n_out), win.argmax(-1)].tolist()
    close(B.max_pool1d(t64(x), (3,), (2,), (1,), (2,), True), win.max(-1), 0.0)


# ---------------------------------------------------------------------------- average pooling
# (x shape, kernel, stride, padding, count_include_pad, ceil_mode)
AVG = [
    ((2, 3, 6, 6), (2, 2), (2, 2), (0, 0), True, False),
    ((1, 2, 7, 5), (3, 2), (2, 1), (1, 1), False, False),
    ((2, 2, 7, 8), (3, 3), (2, 2), (1, 1), True, True),
    ((2, 2, 7, 8), (3, 3), (2, 2), (1, 1), False, True),
    ((1, 1, 5, 6), (2, 4), (3, 3), (1, 2), False, True),
]


@pytest.mark.parametrize("case", AVG, ids=str)
def test_avg_pool2d_matches_contract_default(case: Any) -> None:
    xs, *args = case
    x = t64(rng.uniform(-1, 1, xs))
    y = B.avg_pool2d(x, *args)
    close(y, ModuleOps.avg_pool2d(B, x, *args).numpy())
    g = t64(rng.uniform(-1, 1, tuple(y.shape)))
    close(B.avg_pool2d_backward(g, xs, *args), ModuleOps.avg_pool2d_backward(B, g, xs, *args).numpy())


def test_avg_pool_divisor_hand_computed() -> None:
    x = torch.ones(1, 1, 3, 3)
    # 2x2 windows, stride 2, padding 1: the windows hold 1, 2, 2 and 4 inputs, the rest padding
    assert B.avg_pool2d(x, (2, 2), (2, 2), (1, 1), True, False).flatten().tolist() == [0.25, 0.5, 0.5, 1.0]
    assert B.avg_pool2d(x, (2, 2), (2, 2), (1, 1), False, False).flatten().tolist() == [1.0] * 4
    # ceil mode, no padding: the last window is clipped to the input, and so is its divisor
    y = B.avg_pool1d(torch.tensor([[[1.0, 2.0, 3.0, 4.0, 5.0]]]), (2,), (2,), (0,), True, True)
    assert y.tolist() == [[[1.5, 3.5, 5.0]]]


def test_adaptive_avg_pool_matches_numpy() -> None:
    x = rng.uniform(-1, 1, (2, 3, 7, 5))
    y = B.adaptive_avg_pool2d(t64(x), (3, 2))
    rows, cols = [(0, 3), (2, 5), (4, 7)], [(0, 3), (2, 5)]  # [floor(i n / o), ceil((i + 1) n / o))
    exp = np.array([[x[:, :, a:b, c:d].mean((2, 3)) for c, d in cols] for a, b in rows]).transpose(2, 3, 0, 1)
    close(y, exp)
    g = t64(rng.uniform(-1, 1, (2, 3, 3, 2)))
    close(B.adaptive_avg_pool2d_backward(g, x.shape), ModuleOps.adaptive_avg_pool2d_backward(B, g, x.shape).numpy())
    x1 = rng.uniform(-1, 1, (2, 3, 7))
    close(B.adaptive_avg_pool1d(t64(x1), (3,)), np.stack([x1[:, :, a:b].mean(2) for a, b in rows], 2))


# ---------------------------------------------------------------------------- embedding
def test_embedding_and_backward() -> None:
    w = rng.uniform(-1, 1, (6, 3))
    idx = np.array([[1, 4, 1], [0, 5, 1]])
    for itype in (torch.int64, torch.int32):
        ti = torch.tensor(idx, dtype=itype)
        close(B.embedding(t64(w), ti), w[idx], 0.0)
        g = rng.uniform(-1, 1, (2, 3, 3))
        exp = np.zeros((6, 3))
        np.add.at(exp, idx.ravel(), g.reshape(6, 3))  # repeated indices accumulate
        close(B.embedding_backward(t64(g), ti, (6, 3)), exp)


def test_embedding_index_out_of_range_is_index_error() -> None:
    with pytest.raises(IndexError):
        B.embedding(torch.zeros(4, 2), torch.tensor([1, 4]))


# ---------------------------------------------------------------------------- interpolation
@pytest.mark.parametrize("size,out", [(2, 82), (3, 123), (2, 98), (5, 3), (4, 9)])
def test_interpolate_nearest_is_exact_floor(size: int, out: int) -> None:
    # src = floor(dst * size / out) exactly: torch's float32 scale is one pixel off at 2 -> 82 and
    # 3 -> 123, a float64 scale at 2 -> 98
    x = np.arange(size * 2, dtype=np.float64).reshape(1, 1, 2, size)
    y = B.interpolate(t64(x), (2, out), "nearest", False)
    src = (np.arange(out) * size) // out
    close(y, x[:, :, :, src], 0.0)
    g = rng.uniform(-1, 1, (1, 1, 2, out))
    exp = np.zeros((1, 1, 2, size))
    np.add.at(exp, (slice(None), slice(None), slice(None), src), g)
    close(B.interpolate_backward(t64(g), x.shape, (2, out), "nearest", False), exp)


@pytest.mark.parametrize("mode,align", [("bilinear", False), ("bilinear", True), ("bicubic", False),
                                        ("bicubic", True)])
@pytest.mark.parametrize("xs,out", [((1, 2, 4, 3), (7, 5)), ((2, 1, 6, 5), (3, 2)), ((1, 1, 5, 5), (1, 3))])
def test_interpolate_matches_contract_default(mode: str, align: bool, xs: Any, out: Any) -> None:
    x = t64(rng.uniform(-1, 1, xs))
    y = B.interpolate(x, out, mode, align)
    close(y, ModuleOps.interpolate(B, x, out, mode, align).numpy())
    g = t64(rng.uniform(-1, 1, tuple(y.shape)))
    gx = B.interpolate_backward(g, xs, out, mode, align)
    close(gx, ModuleOps.interpolate_backward(B, g, xs, out, mode, align).numpy())


def test_bilinear_hand_computed() -> None:
    x = torch.tensor([[[[0.0, 1.0]]]], dtype=torch.float64)
    # 2 -> 4 columns, src = (dst + 0.5) / 2 - 0.5 clamped at 0: 0, 0.25, 0.75, 1 (capped at the border)
    assert B.interpolate(x, (1, 4), "bilinear", False).flatten().tolist() == [0.0, 0.25, 0.75, 1.0]
    # align_corners: src = dst (2 - 1) / (4 - 1)
    y = B.interpolate(x, (1, 4), "bilinear", True).flatten().numpy()
    np.testing.assert_allclose(y, [0.0, 1 / 3, 2 / 3, 1.0], rtol=1e-15)


# ---------------------------------------------------------------------------- every primitive
def _calls(x: torch.Tensor, w: torch.Tensor, idx: torch.Tensor) -> dict[str, Any]:
    """One call of every module primitive of ``TorchModuleOps`` on ``x`` ``[2, 4, 6, 6]`` and ``w``
    ``[4, 4, 3, 3]`` (any float dtype)."""
    g = torch.ones(2, 4, 4, 4, dtype=x.dtype)
    p = ((1, 1, 1), (0, 1, 1), (1, 1, 1))
    c1 = x[:, :, 0]
    v, i = B.max_pool2d_with_indices(x, (2, 2), (2, 2), (0, 0), (1, 1), False)
    return {
        "conv1d": B.conv1d(c1, w[:, :, 0], None, (1,), (1,), (1,), 1),
        "conv2d": B.conv2d(x, w, w[0, 0, 0, :1].expand(4), (1, 1), (0, 0), (1, 1), 1),
        "conv3d": B.conv3d(x[:, :, None], w[:, :, None], None, *p, 1),
        "conv2d_backward_input": B.conv2d_backward_input(g, w, tuple(x.shape), (1, 1), (0, 0), (1, 1), 1),
        "conv2d_backward_input_fold": B.conv2d_backward_input(g, w[:, :1], (2, 1, 6, 6), (1, 1), (0, 0), (1, 1), 1),
        "conv2d_backward_weight": B.conv2d_backward_weight(x, g, tuple(w.shape), (1, 1), (0, 0), (1, 1), 1),
        "conv3d_backward_input": B.conv3d_backward_input(g[:, :, None], w[:, :, None], (2, 4, 1, 6, 6),
                                                         (1, 1, 1), (0, 0, 0), (1, 1, 1), 1),
        "conv3d_backward_weight": B.conv3d_backward_weight(x[:, :, None], g[:, :, None], (4, 4, 1, 3, 3),
                                                           (1, 1, 1), (0, 0, 0), (1, 1, 1), 1),
        "conv_transpose1d": B.conv_transpose1d(c1, w[:, :, 0], None, (2,), (1,), (1,), (1,), 1),
        "conv_transpose2d": B.conv_transpose2d(x, w, None, (2, 2), (1, 1), (1, 1), (1, 1), 1),
        "conv_transpose3d": B.conv_transpose3d(x[:, :, None], w[:, :, None], None, (1, 2, 2), (0, 1, 1),
                                               (0, 1, 1), (1, 1, 1), 1),
        "unfold4d": B.unfold4d(x, (3, 3), (1, 1), (1, 1), (1, 1)),
        "max_pool1d": B.max_pool1d(c1, (2,), (2,), (0,), (1,), False),
        "max_pool1d_with_indices": B.max_pool1d_with_indices(c1, (3,), (2,), (1,), (1,), True)[0],
        "max_pool2d": B.max_pool2d(x, (3, 3), (2, 2), (1, 1), (1, 1), True),
        "max_pool2d_with_indices": v,
        "max_pool2d_backward": B.max_pool2d_backward(v, i, tuple(x.shape), (2, 2), (2, 2), (0, 0), (1, 1), False),
        "avg_pool1d": B.avg_pool1d(c1, (3,), (2,), (1,), False, True),
        "avg_pool2d": B.avg_pool2d(x, (3, 3), (2, 2), (1, 1), False, True),
        "avg_pool2d_backward": B.avg_pool2d_backward(g, tuple(x.shape), (3, 3), (1, 1), (0, 0), True, False),
        "adaptive_avg_pool1d": B.adaptive_avg_pool1d(c1, (4,)),
        "adaptive_avg_pool2d": B.adaptive_avg_pool2d(x, (4, 5)),
        "adaptive_avg_pool2d_backward": B.adaptive_avg_pool2d_backward(g, tuple(x.shape)),
        "embedding": B.embedding(x[0, 0], idx),
        "embedding_backward": B.embedding_backward(x[0, :2, :3], idx, (6, 6)),
        "interpolate": B.interpolate(x, (9, 4), "bicubic", False),
        "interpolate_backward": B.interpolate_backward(g, tuple(x.shape), (4, 4), "bilinear", True),
        "interpolate_nearest": B.interpolate(x, (9, 4), "nearest", False),
        "interpolate_nearest_backward": B.interpolate_backward(g, tuple(x.shape), (4, 4), "nearest", False),
    }


def test_every_primitive_is_overridden() -> None:
    from ember_torch._module import TorchModuleOps

    contract = {n for n in vars(ModuleOps) if not n.startswith("_")}
    assert contract <= set(vars(TorchModuleOps)), contract - set(vars(TorchModuleOps))
    assert all(getattr(type(B), n) is getattr(TorchModuleOps, n) for n in contract)


def test_primitives_are_pure_and_untracked() -> None:
    x = torch.tensor(rng.uniform(-1, 1, (2, 4, 6, 6)), dtype=torch.float32)
    w = torch.tensor(rng.uniform(-1, 1, (4, 4, 3, 3)), dtype=torch.float32)
    idx = torch.tensor([[0, 3, 5], [5, 5, 1]])
    before = (x.clone(), w.clone(), idx.clone())
    for name, out in _calls(x, w, idx).items():
        assert not out.requires_grad and out.grad_fn is None, name
    assert torch.equal(x, before[0]) and torch.equal(w, before[1]) and torch.equal(idx, before[2])


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_low_precision_close_to_float64(dtype: torch.dtype) -> None:
    x = torch.tensor(rng.uniform(-1, 1, (2, 4, 6, 6)), dtype=dtype)
    w = torch.tensor(rng.uniform(-1, 1, (4, 4, 3, 3)), dtype=dtype)
    idx = torch.tensor([[0, 3, 5], [5, 5, 1]])
    low = _calls(x, w, idx)
    ref = _calls(x.double(), w.double(), idx)  # the same rounded inputs, in float64
    for name, out in low.items():
        assert out.dtype == dtype, name
        exp = ref[name].numpy()
        tol = 0.02 * max(1.0, float(np.abs(exp).max()))  # up to 36 products summed in 8-bit mantissas
        np.testing.assert_allclose(out.double().numpy(), exp, atol=tol, rtol=0.02, err_msg=name)
