"""The attention primitive (``ember.tensor.functional.scaled_dot_product_attention`` and ``attention_backward``).

Forward against an independent float64 numpy reference on every float dtype, with and without a mask and a
dropout multiplier, with ``quiet_softmax`` and a row masked entirely; gradients by finite differences under
``Autodiff`` in float64 (the backend's own backward kernel); the backend's forward and backward against the
contract's composites on every float dtype; one tracked output; errors.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from ember import KindError, ShapeError, Tensor
from ember.autodiff import gradcheck
from ember.backend._ops_attention import AttentionOps
from ember.tensor import functional as M
from ember.testing import assert_close

from ._module_helpers import ftensor, held

rng = np.random.default_rng(23)
MIN = -1e4

#: (batch, heads, seq_q, seq_k, d_k, d_v)
SIZES = [(2, 3, 4, 5, 6, 3), (1, 2, 7, 7, 4, 4), (3, 1, 1, 6, 2, 5)]


def _qkv(size: tuple[int, ...], device: Any) -> tuple[Tensor, Tensor, Tensor]:
    b, h, sq, sk, dk, dv = size
    return tuple(ftensor(rng.normal(0.0, 1.0, (b, h, s, d)), device)  # type: ignore[return-value]
                 for s, d in ((sq, dk), (sk, dk), (sk, dv)))


def _mask(size: tuple[int, ...], device: Any, full_row: bool = False) -> tuple[Tensor, np.ndarray]:
    """A Bool mask ``[batch, 1, seq_q, seq_k]`` (broadcast over the heads), as a tensor and as numpy."""
    b, _, sq, sk, _, _ = size
    m = rng.random((b, 1, sq, sk)) < 0.4
    if full_row:
        m[0, 0, 0, :] = True
    return Tensor.from_data(m, device), m


def _drop(size: tuple[int, ...], device: Any) -> tuple[Tensor, np.ndarray]:
    """A dropout multiplier ``[batch, heads, seq_q, seq_k]``: 0 or 1 / (1 - 0.3), as a tensor and as numpy."""
    b, h, sq, sk, _, _ = size
    d = (rng.random((b, h, sq, sk)) >= 0.3) / 0.7
    t = ftensor(d, device)
    return t, held(t)


def _ref(q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: np.ndarray | None, scale: float, min_float: float,
         quiet: bool, drop: np.ndarray | None = None) -> np.ndarray:
    """(softmax((q k^T) scale with masked scores replaced) * drop) v, written row by row in float64."""
    b, h, sq, _ = q.shape
    out = np.zeros((b, h, sq, v.shape[3]))
    for i in range(b):
        for j in range(h):
            for r in range(sq):
                s = np.array([float(np.dot(q[i, j, r], kk)) * scale for kk in k[i, j]])
                if mask is not None:
                    s = np.where(np.broadcast_to(mask, (b, h, sq, s.size))[i, j, r], min_float, s)
                top = max(float(s.max()), 0.0) if quiet else float(s.max())
                e = np.exp(s - top)
                w = e / (e.sum() + (math.exp(-top) if quiet else 0.0))
                if drop is not None:
                    w = w * drop[i, j, r]
                out[i, j, r] = w @ v[i, j]
    return out


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("masked,quiet", [(False, False), (True, False), (False, True), (True, True)])
def test_attention_forward(float_device: Any, size: tuple[int, ...], masked: bool, quiet: bool) -> None:
    q, k, v = _qkv(size, float_device)
    mask, m = _mask(size, float_device) if masked else (None, None)
    out = M.scaled_dot_product_attention(q, k, v, mask, quiet=quiet)
    assert out.shape == size[:3] + (size[5],) and out.dtype == q.dtype
    assert_close(out, _ref(held(q), held(k), held(v), m, 1.0 / math.sqrt(size[4]), MIN, quiet))


@pytest.mark.parametrize("masked", [False, True])
def test_attention_forward_with_dropout(float_device: Any, masked: bool) -> None:
    size = SIZES[0]
    q, k, v = _qkv(size, float_device)
    mask, m = _mask(size, float_device) if masked else (None, None)
    drop, d = _drop(size, float_device)
    out = M.scaled_dot_product_attention(q, k, v, mask, drop)
    assert_close(out, _ref(held(q), held(k), held(v), m, 1.0 / math.sqrt(size[4]), MIN, False, d))


def test_attention_scale_min_float_and_a_row_masked_entirely(float_device: Any) -> None:
    size = (2, 2, 3, 4, 3, 2)
    q, k, v = _qkv(size, float_device)
    mask, m = _mask(size, float_device, full_row=True)
    for min_float, quiet in ((MIN, False), (-50.0, False), (float("-inf"), True)):
        out = M.scaled_dot_product_attention(q, k, v, mask, scale=0.3, min_float=min_float, quiet=quiet)
        assert_close(out, _ref(held(q), held(k), held(v), m, 0.3, min_float, quiet))


@pytest.mark.parametrize("masked,quiet,dropped", [(False, False, False), (True, False, False), (True, True, False),
                                                   (False, False, True), (True, True, True)])
def test_attention_gradcheck(ad_device: Any, masked: bool, quiet: bool, dropped: bool) -> None:
    size = (2, 2, 3, 4, 3, 2)
    b, h, sq, sk, dk, dv = size
    m = (rng.random((b, 1, sq, sk)) < 0.4) if masked else None
    if m is not None:
        m[1, 0, 2, :] = True  # a row masked entirely: uniform weights, no gradient to its scores
    d = (rng.random((b, h, sq, sk)) >= 0.3) / 0.7 if dropped else None

    def fn(q: Tensor, k: Tensor, v: Tensor) -> Tensor:
        mask = None if m is None else Tensor.from_data(m, q.device)
        drop = None if d is None else ftensor(d, q.device)
        return M.scaled_dot_product_attention(q, k, v, mask, drop, scale=0.6, quiet=quiet)

    gradcheck(fn, [rng.normal(0.0, 1.0, (b, h, sq, dk)), rng.normal(0.0, 1.0, (b, h, sk, dk)),
                   rng.normal(0.0, 1.0, (b, h, sk, dv))], ad_device)


@pytest.mark.parametrize("masked,quiet,dropped", [(False, False, False), (True, False, False), (False, True, False),
                                                   (False, False, True), (True, True, True)])
def test_primitives_equal_the_composites(float_device: Any, masked: bool, quiet: bool, dropped: bool) -> None:
    B = float_device.backend
    size = (2, 3, 5, 6, 4, 3)
    q, k, v = _qkv(size, float_device)
    mask = _mask(size, float_device)[0].primitive if masked else None
    drop = _drop(size, float_device)[0].primitive if dropped else None
    raw = (q.primitive, k.primitive, v.primitive, mask, drop)
    out, residual = B.attention(*raw, 0.5, MIN, quiet)
    want, want_residual = AttentionOps.attention(B, *raw, 0.5, MIN, quiet)
    assert_close(Tensor(out, float_device), held(Tensor(want, float_device)))
    grad = ftensor(rng.normal(0.0, 1.0, size[:3] + (size[5],)), float_device).primitive
    got = B.attention_backward(grad, *raw, residual, 0.5, MIN, quiet)
    wants = AttentionOps.attention_backward(B, grad, *raw, want_residual, 0.5, MIN, quiet)
    assert len(got) == 3
    for name, p, w, like in zip("qkv", got, wants, (q, k, v)):
        t = Tensor(p, float_device)
        assert t.shape == like.shape and t.dtype == like.dtype, name
        assert_close(t, held(Tensor(w, float_device)))


def test_strided_inputs(float_device: Any) -> None:
    """Heads split from ``[batch, seq, heads * d]`` and swapped (the layout of MultiHeadAttention): views."""
    x = ftensor(rng.normal(0.0, 1.0, (2, 5, 12)), float_device)
    qh = x.reshape([2, 5, 3, 4]).swap_dims(1, 2)
    out = M.scaled_dot_product_attention(qh, qh, qh)
    a = held(qh)
    assert_close(out, _ref(a, a, a, None, 0.5, MIN, False))


def test_tracked_output(ad_device: Any) -> None:
    q, k, v = _qkv((1, 2, 3, 3, 2, 2), ad_device)
    k = k.require_grad()
    out = M.scaled_dot_product_attention(q, k, v)
    assert out.is_require_grad()
    grads = out.sum().backward()
    assert k.grad(grads) is not None and q.grad(grads) is None
    assert not M.scaled_dot_product_attention(q, k.detach(), v).is_require_grad()


def test_attention_errors(device: Any) -> None:
    q, k, v = _qkv((2, 2, 3, 4, 3, 2), device)
    with pytest.raises(ShapeError, match="rank 4"):
        M.scaled_dot_product_attention(q.reshape([4, 3, 3]), k, v)
    with pytest.raises(ShapeError, match="must share"):
        M.scaled_dot_product_attention(q, k, v.slice([(0, 2), (0, 2), (0, 3), (0, 2)]))
    with pytest.raises(KindError, match="k must be a Float"):
        M.scaled_dot_product_attention(q, k.int(), v)
    with pytest.raises(KindError, match="mask must be a Bool"):
        M.scaled_dot_product_attention(q, k, v, ftensor(np.zeros((2, 1, 3, 4)), device))
    with pytest.raises(ShapeError, match="mask .* does not broadcast"):
        M.scaled_dot_product_attention(q, k, v, Tensor.from_data(np.zeros((2, 1, 3, 3), bool), device))
    with pytest.raises(KindError, match="dropout must be a Float"):
        M.scaled_dot_product_attention(q, k, v, None, Tensor.from_data(np.zeros((2, 1, 3, 4), bool), device))
    with pytest.raises(ShapeError, match="dropout .* does not broadcast"):
        M.scaled_dot_product_attention(q, k, v, None, ftensor(np.ones((3, 2, 3, 4)), device))
