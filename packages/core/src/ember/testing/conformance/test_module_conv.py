"""Convolutions (``ember.tensor.functional``): conv1d/2d/3d, conv_transpose1d/2d/3d and unfold4d.

Forward against the naive float64 loops of :mod:`._module_helpers` on every float dtype, and
against ``torch.nn.functional`` in float64 where torch is installed; gradients by central finite
differences under ``Autodiff`` in float64; the contract's composite defaults against the same
references on the backend under test; errors.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from ember import Float, KindError, ShapeError, Tensor
from ember.autodiff import gradcheck
from ember.backend._ops_module import ModuleOps
from ember.tensor import functional as M
from ember.testing import assert_close

from ._module_helpers import conv_backward_ref, conv_ref, conv_transpose_ref, ftensor, held, low_precision, unfold4d_ref

rng = np.random.default_rng(2024)


def U(*shape: int) -> np.ndarray:
    return rng.uniform(-1.0, 1.0, shape)


def _tol(device: Any, terms: int) -> dict[str, float]:
    """Low-precision dtypes accumulate rounding over ``terms`` products."""
    if low_precision(device):
        return {"atol": 0.02 * np.sqrt(terms), "rtol": 0.05}
    return {}


def _tup(v: Any, n: int) -> tuple[int, ...]:
    return (v,) * n if isinstance(v, int) else tuple(v)


# (x shape, weight shape, bias, stride, padding, dilation, groups)
CONV2D = [
    ((2, 3, 6, 5), (4, 3, 3, 3), True, 1, 0, 1, 1),
    ((2, 4, 7, 6), (6, 2, 3, 2), True, (2, 1), (1, 2), (2, 1), 2),
    ((1, 6, 5, 5), (6, 1, 3, 3), False, 2, 1, 1, 6),  # depthwise
    ((1, 2, 4, 4), (3, 2, 1, 1), True, 1, 0, 1, 1),  # 1x1
    ((2, 4, 9, 8), (8, 1, 2, 3), True, (3, 2), (2, 0), (1, 2), 4),
    ((2, 8, 6, 5), (4, 8, 3, 3), True, 1, 1, 1, 1),  # >= 4 channels per group, stride 1
    ((2, 8, 6, 7), (4, 4, 3, 2), False, 1, (0, 1), (2, 1), 2),
    ((1, 1, 5, 5), (2, 1, 5, 5), True, 1, 0, 1, 1),  # kernel == input
]
CONV1D = [
    ((2, 3, 9), (4, 3, 3), True, 1, 0, 1, 1),
    ((2, 4, 10), (6, 2, 2), False, 2, 1, 3, 2),
    ((1, 8, 7), (8, 8, 3), True, 1, 2, 1, 1),
]
CONV3D = [
    ((1, 2, 4, 5, 4), (3, 2, 2, 3, 2), True, 1, 0, 1, 1),
    ((2, 4, 5, 4, 5), (4, 2, 3, 2, 2), False, (2, 1, 2), (1, 0, 1), (1, 2, 1), 2),
]
# (x shape, weight shape, bias, stride, padding, padding_out, dilation, groups)
CONVT2D = [
    ((2, 3, 4, 3), (3, 4, 3, 3), True, 1, 0, 0, 1, 1),
    ((2, 4, 3, 4), (4, 3, 3, 2), True, (2, 3), (1, 0), (1, 2), (2, 1), 2),
    ((1, 2, 3, 3), (2, 1, 2, 2), False, 2, 1, 1, 1, 2),
]
CONVT1D = [
    ((2, 3, 5), (3, 2, 3), True, 2, 1, 1, 1, 1),
    ((1, 4, 4), (4, 1, 2), False, 1, 0, 0, 2, 2),
    ((1, 2, 5), (2, 4, 3), True, 1, 1, 1, 2, 1),  # padding_out below the dilation, stride 1
]
CONVT3D = [
    ((1, 2, 3, 2, 3), (2, 2, 2, 2, 2), True, (2, 1, 1), (0, 1, 0), (1, 0, 0), 1, 1),
]
_CONV: dict[int, tuple[Any, list[Any]]] = {1: (M.conv1d, CONV1D), 2: (M.conv2d, CONV2D), 3: (M.conv3d, CONV3D)}
_CONVT: dict[int, tuple[Any, list[Any]]] = {
    1: (M.conv_transpose1d, CONVT1D), 2: (M.conv_transpose2d, CONVT2D), 3: (M.conv_transpose3d, CONVT3D),
}
_CONV_PARAMS = [(nd, i) for nd, (_, cases) in _CONV.items() for i in range(len(cases))]
_CONVT_PARAMS = [(nd, i) for nd, (_, cases) in _CONVT.items() for i in range(len(cases))]


def _conv_args(nd: int, i: int) -> tuple[Any, ...]:
    xs, ws, bias, s, p, d, g = _CONV[nd][1][i]
    return xs, ws, bias, _tup(s, nd), _tup(p, nd), _tup(d, nd), g


def _convt_args(nd: int, i: int) -> tuple[Any, ...]:
    xs, ws, bias, s, p, po, d, g = _CONVT[nd][1][i]
    return xs, ws, bias, _tup(s, nd), _tup(p, nd), _tup(po, nd), _tup(d, nd), g


# ---------------------------------------------------------------------------- forward
@pytest.mark.parametrize(("nd", "i"), _CONV_PARAMS, ids=[f"conv{nd}d-{i}" for nd, i in _CONV_PARAMS])
def test_module_conv_forward(float_device: Any, nd: int, i: int) -> None:
    xs, ws, bias, s, p, d, g = _conv_args(nd, i)
    x, w = ftensor(U(*xs), float_device), ftensor(U(*ws), float_device)
    b = ftensor(U(ws[0]), float_device) if bias else None
    y = _CONV[nd][0](x, w, b, M.ConvOptions(s, p, d, g))
    assert y.kind is Float and y.dtype is float_device.backend.float_dtype
    exp = conv_ref(held(x), held(w), None if b is None else held(b), s, p, d, g)
    assert_close(y, exp, **_tol(float_device, int(np.prod(ws[1:]))))


@pytest.mark.parametrize(("nd", "i"), _CONVT_PARAMS, ids=[f"conv_transpose{nd}d-{i}" for nd, i in _CONVT_PARAMS])
def test_module_conv_transpose_forward(float_device: Any, nd: int, i: int) -> None:
    xs, ws, bias, s, p, po, d, g = _convt_args(nd, i)
    x, w = ftensor(U(*xs), float_device), ftensor(U(*ws), float_device)
    b = ftensor(U(ws[1] * g), float_device) if bias else None
    y = _CONVT[nd][0](x, w, b, M.ConvTransposeOptions(s, p, po, d, g))
    exp = conv_transpose_ref(held(x), held(w), None if b is None else held(b), s, p, po, d, g)
    assert_close(y, exp, **_tol(float_device, int(np.prod(ws[2:])) * xs[1]))


def test_module_conv2d_hand_computed(device: Any) -> None:
    # 3x3 input, 2x2 kernel of ones: every output is the sum of a 2x2 block, plus the bias
    x = Tensor.from_floats([[[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]]], device)
    w = Tensor.ones([1, 1, 2, 2], device)
    b = Tensor.from_floats([0.5], device)
    assert_close(M.conv2d(x, w, b), [[[[12.5, 16.5], [24.5, 28.5]]]])
    # stride 2 with padding 1 sees the corners only
    assert_close(M.conv2d(x, w, None, M.ConvOptions(stride=2, padding=1)), [[[[1.0, 5.0], [11.0, 28.0]]]])


@pytest.mark.parametrize("case", [
    ((2, 3, 5, 6), (2, 2), 1, 0, 1),
    ((1, 2, 6, 5), (3, 2), (2, 1), (1, 0), (1, 2)),
], ids=str)
def test_module_unfold4d(float_device: Any, case: Any) -> None:
    xs, k, s, p, d = case
    x = ftensor(U(*xs), float_device)
    y = M.unfold4d(x, k, M.UnfoldOptions(s, p, d))
    assert_close(y, unfold4d_ref(held(x), _tup(k, 2), _tup(s, 2), _tup(p, 2), _tup(d, 2)))


# ---------------------------------------------------------------------------- against torch
@pytest.mark.parametrize(("nd", "i"), _CONV_PARAMS, ids=[f"conv{nd}d-{i}" for nd, i in _CONV_PARAMS])
def test_module_conv_matches_torch(f64_device: Any, nd: int, i: int) -> None:
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    xs, ws, bias, s, p, d, g = _conv_args(nd, i)
    x, w, b = U(*xs), U(*ws), U(ws[0]) if bias else None
    y = _CONV[nd][0](ftensor(x, f64_device), ftensor(w, f64_device), None if b is None else ftensor(b, f64_device),
                     M.ConvOptions(s, p, d, g))
    fn = (F.conv1d, F.conv2d, F.conv3d)[nd - 1]
    exp = fn(torch.tensor(x), torch.tensor(w), None if b is None else torch.tensor(b), s, p, d, g)
    assert_close(y, exp.numpy())


@pytest.mark.parametrize(("nd", "i"), _CONVT_PARAMS, ids=[f"conv_transpose{nd}d-{i}" for nd, i in _CONVT_PARAMS])
def test_module_conv_transpose_matches_torch(f64_device: Any, nd: int, i: int) -> None:
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    xs, ws, bias, s, p, po, d, g = _convt_args(nd, i)
    x, w, b = U(*xs), U(*ws), U(ws[1] * g) if bias else None
    y = _CONVT[nd][0](ftensor(x, f64_device), ftensor(w, f64_device),
                      None if b is None else ftensor(b, f64_device), M.ConvTransposeOptions(s, p, po, d, g))
    fn = (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)[nd - 1]
    exp = fn(torch.tensor(x), torch.tensor(w), None if b is None else torch.tensor(b), s, p, po, g, d)
    assert_close(y, exp.numpy())


def test_module_unfold4d_matches_torch(f64_device: Any) -> None:
    torch = pytest.importorskip("torch")
    x = U(2, 3, 6, 7)
    y = M.unfold4d(ftensor(x, f64_device), (3, 2), M.UnfoldOptions((2, 1), (1, 0), (1, 2)))
    exp = torch.nn.functional.unfold(torch.tensor(x), (3, 2), dilation=(1, 2), padding=(1, 0), stride=(2, 1))
    assert_close(y, exp.numpy())


# ---------------------------------------------------------------------------- gradients
@pytest.mark.parametrize(("nd", "i"), _CONV_PARAMS, ids=[f"conv{nd}d-{i}" for nd, i in _CONV_PARAMS])
def test_module_conv_gradcheck(ad_device: Any, nd: int, i: int) -> None:
    xs, ws, bias, s, p, d, g = _conv_args(nd, i)
    fn = _CONV[nd][0]
    opts = M.ConvOptions(s, p, d, g)
    if bias:
        gradcheck(lambda x, w, b: fn(x, w, b, opts), [U(*xs), U(*ws), U(ws[0])], ad_device)
    else:
        gradcheck(lambda x, w: fn(x, w, None, opts), [U(*xs), U(*ws)], ad_device)


@pytest.mark.parametrize(("nd", "i"), _CONVT_PARAMS, ids=[f"conv_transpose{nd}d-{i}" for nd, i in _CONVT_PARAMS])
def test_module_conv_transpose_gradcheck(ad_device: Any, nd: int, i: int) -> None:
    xs, ws, bias, s, p, po, d, g = _convt_args(nd, i)
    fn = _CONVT[nd][0]
    opts = M.ConvTransposeOptions(s, p, po, d, g)
    if bias:
        gradcheck(lambda x, w, b: fn(x, w, b, opts), [U(*xs), U(*ws), U(ws[1] * g)], ad_device)
    else:
        gradcheck(lambda x, w: fn(x, w, None, opts), [U(*xs), U(*ws)], ad_device)


def test_module_unfold4d_gradcheck(ad_device: Any) -> None:
    gradcheck(lambda x: M.unfold4d(x, (2, 3), M.UnfoldOptions((1, 2), (1, 1), (2, 1))), [U(1, 2, 5, 6)], ad_device)


def test_module_conv_only_weight_tracked(ad_device: Any) -> None:
    # an untracked input gets no gradient; the weight's is still right
    x = ftensor(U(2, 3, 5, 5), ad_device)
    w = ftensor(U(4, 3, 3, 3), ad_device).require_grad()
    grads = M.conv2d(x, w).sum().backward()
    assert x.grad(grads) is None
    # d(sum y)/dw[o, c, i, j] = sum over batch and outputs of the input under tap (i, j)
    xv = held(x)
    exp = np.stack([xv[:, :, i:i + 3, j:j + 3].sum(axis=(0, 2, 3)) for i in range(3) for j in range(3)], -1)
    assert_close(w.grad(grads), np.broadcast_to(exp.reshape(3, 3, 3), (4, 3, 3, 3)))


# ---------------------------------------------------------------------------- the backward primitive
_MASKS = [(True, True, True), (False, True, False), (True, False, False), (False, False, True)]
_BACK_PARAMS = [(nd, i, m) for nd, i in _CONV_PARAMS if nd > 1 for m in range(len(_MASKS))]


@pytest.mark.parametrize(("nd", "i", "m"), _BACK_PARAMS, ids=[f"conv{nd}d-{i}-mask{m}" for nd, i, m in _BACK_PARAMS])
def test_module_conv_backward_primitive(float_device: Any, nd: int, i: int, m: int) -> None:
    """``conv{2,3}d_backward`` (the three gradients in one call, what the ``conv`` rule calls) against the
    float64 reference, only the masked gradients computed; and equal to the contract's composite default."""
    B = float_device.backend
    r = np.random.default_rng(7)  # its own generator: the module's draws stay those of the other tests
    xs, ws, _, s, p, d, g = _conv_args(nd, i)
    x, w = ftensor(r.uniform(-1, 1, xs), float_device), ftensor(r.uniform(-1, 1, ws), float_device)
    ys = conv_ref(held(x), held(w), None, s, p, d, g).shape
    gy = ftensor(r.uniform(-1, 1, ys), float_device)
    mask = _MASKS[m]
    name = f"conv{nd}d_backward"
    args = (gy.primitive, x.primitive, w.primitive, s, p, d, g, mask)
    got = getattr(B, name)(*args)
    want = getattr(ModuleOps, name)(B, *args)
    refs = conv_backward_ref(held(x), held(w), held(gy), s, p, d, g)
    tol = _tol(float_device, int(np.prod(ys[2:])) * ys[0])
    assert len(got) == 3
    for part, like, on, r, c, ref in zip(("x", "weight", "bias"), (xs, ws, ys[1:2]), mask, got, want, refs):
        if not on:
            assert r is None and c is None, part
            continue
        t = Tensor(r, float_device)
        assert t.shape == like and t.dtype == float_device.backend.float_dtype, part
        assert_close(t, ref, **tol)
        assert_close(t, held(Tensor(c, float_device)), **tol)


# ---------------------------------------------------------------------------- contract defaults
def test_module_conv_contract_defaults(f64_device: Any) -> None:
    """The composite defaults of ``ModuleOps`` (used by backends without their own kernels) on
    this backend's primitives, against the references."""
    B = f64_device.backend
    x, w, b = U(2, 4, 7, 6), U(6, 2, 3, 2), U(6)
    xp, wp, bp = (ftensor(a, f64_device).primitive for a in (x, w, b))
    s, p, d, g = (2, 1), (1, 2), (2, 1), 2
    y = ModuleOps.conv2d(B, xp, wp, bp, s, p, d, g)
    exp = conv_ref(x, w, b, s, p, d, g)
    np.testing.assert_allclose(B.to_numpy(y), exp, atol=1e-10)
    gy = U(*exp.shape)
    gyp = ftensor(gy, f64_device).primitive
    # adjoint identities: <conv(x, w), gy> = <x, bwd_input(gy)> = <w, bwd_weight(x, gy)>
    lhs = float((conv_ref(x, w, None, s, p, d, g) * gy).sum())
    gx = B.to_numpy(ModuleOps.conv2d_backward_input(B, gyp, wp, x.shape, s, p, d, g))
    gw = B.to_numpy(ModuleOps.conv2d_backward_weight(B, xp, gyp, w.shape, s, p, d, g))
    assert abs(float((x * gx).sum()) - lhs) < 1e-9
    assert abs(float((w * gw).sum()) - lhs) < 1e-9
    wt = U(4, 3, 3, 2)
    yt = ModuleOps.conv_transpose2d(B, ftensor(x[:, :4], f64_device).primitive, ftensor(wt, f64_device).primitive,
                                    None, (2, 1), (1, 0), (1, 0), (1, 2), 1)
    np.testing.assert_allclose(B.to_numpy(yt), conv_transpose_ref(x[:, :4], wt, None, (2, 1), (1, 0), (1, 0),
                                                                  (1, 2), 1), atol=1e-10)
    # a transposed conv whose padding_out (below the dilation) makes its output longer than the
    # adjoint convolution's windows cover: <convT(x, w), g> = <w, conv_backward_weight(g, x)>
    x2, w2 = U(1, 2, 1, 5), U(2, 4, 1, 3)
    opts = ((1, 1), (0, 1), (0, 1), (1, 2), 1)
    y2 = conv_transpose_ref(x2, w2, None, *opts)
    g2 = U(*y2.shape)
    p2 = [ftensor(a, f64_device).primitive for a in (x2, w2, g2)]
    yt2 = B.to_numpy(ModuleOps.conv_transpose2d(B, p2[0], p2[1], None, *opts))
    np.testing.assert_allclose(yt2, y2, atol=1e-10)
    gw2 = B.to_numpy(ModuleOps.conv2d_backward_weight(B, p2[2], p2[0], w2.shape, (1, 1), (0, 1), (1, 2), 1))
    assert abs(float((w2 * gw2).sum()) - float((y2 * g2).sum())) < 1e-9
    u = ModuleOps.unfold4d(B, xp, (2, 2), (1, 2), (1, 0), (1, 1))
    np.testing.assert_allclose(B.to_numpy(u), unfold4d_ref(x, (2, 2), (1, 2), (1, 0), (1, 1)), atol=1e-12)


# ---------------------------------------------------------------------------- errors
def test_module_conv_errors(device: Any) -> None:
    x = Tensor.zeros([2, 3, 8, 8], device)
    w = Tensor.zeros([4, 3, 3, 3], device)
    with pytest.raises(ShapeError, match=r"conv2d.*\[batch, channels_in, height, width\].*\[3, 8, 8\]"):
        M.conv2d(Tensor.zeros([3, 8, 8], device), w)
    with pytest.raises(ShapeError, match=r"conv2d: expected weight.*got shape \[4, 3, 3\]"):
        M.conv2d(x, Tensor.zeros([4, 3, 3], device))
    with pytest.raises(ShapeError, match=r"x has 3 channels.*channels_in = 2"):
        M.conv2d(x, Tensor.zeros([4, 2, 3, 3], device))
    with pytest.raises(ShapeError, match=r"groups=2 must divide channels_in \(3\)"):
        M.conv2d(x, w, None, M.ConvOptions(groups=2))
    with pytest.raises(ShapeError, match=r"groups=2 must divide .*channels_out \(3\)"):
        M.conv2d(Tensor.zeros([2, 4, 8, 8], device), Tensor.zeros([3, 2, 3, 3], device), None, M.ConvOptions(groups=2))
    with pytest.raises(ShapeError, match="larger than the padded input"):
        M.conv2d(Tensor.zeros([1, 3, 2, 2], device), w)
    with pytest.raises(ShapeError, match="larger than the padded input"):
        M.conv2d(Tensor.zeros([1, 3, 5, 5], device), w, None, M.ConvOptions(dilation=3))
    with pytest.raises(ShapeError, match=r"bias must have shape \[channels_out\] = \[4\]"):
        M.conv2d(x, w, Tensor.zeros([3], device))
    with pytest.raises(KindError, match="conv2d"):
        M.conv2d(x.int(), w)
    with pytest.raises(ValueError, match="stride must be >= 1"):
        M.conv2d(x, w, None, M.ConvOptions(stride=0))
    with pytest.raises(ValueError, match="padding must be an int or a sequence of 2 ints"):
        M.conv2d(x, w, None, M.ConvOptions(padding=(1, 1, 1)))
    with pytest.raises(ShapeError, match=r"conv1d.*\[batch, channels_in, length\]"):
        M.conv1d(x, w)
    with pytest.raises(ShapeError, match=r"conv3d.*\[batch, channels_in, depth, height, width\]"):
        M.conv3d(x, w)


def test_module_conv_transpose_errors(device: Any) -> None:
    x = Tensor.zeros([2, 3, 4, 4], device)
    with pytest.raises(ShapeError, match=r"weight layout is \[channels_in, channels_out / groups"):
        M.conv_transpose2d(x, Tensor.zeros([4, 3, 3, 3], device))
    with pytest.raises(ValueError, match="padding_out"):
        M.conv_transpose2d(x, Tensor.zeros([3, 2, 3, 3], device), None, M.ConvTransposeOptions(stride=2, padding_out=2))
    with pytest.raises(ShapeError, match="groups=2 must divide channels_in"):
        M.conv_transpose2d(x, Tensor.zeros([3, 2, 3, 3], device), None, M.ConvTransposeOptions(groups=2))
    with pytest.raises(ShapeError, match=r"bias must have shape \[channels_out\] = \[2\]"):
        M.conv_transpose2d(x, Tensor.zeros([3, 2, 3, 3], device), Tensor.zeros([3], device))
    with pytest.raises(ShapeError, match="output would have spatial size"):
        M.conv_transpose2d(Tensor.zeros([1, 3, 1, 1], device), Tensor.zeros([3, 2, 1, 1], device), None,
                           M.ConvTransposeOptions(padding=1))
