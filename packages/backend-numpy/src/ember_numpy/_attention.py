"""The attention primitive in numpy (issue 22): the contract's formulas with as few passes and temporaries as
numpy allows.

Forward: the scores are the one ``[batch, heads, seq_q, seq_k]`` array; scale, mask, softmax (or quiet softmax)
run in place in it, op for op as the composite (so the values are the composite's), and it is kept as the
probabilities ``P``. Backward (the flash-attention identity of Dao et al. 2022, sec. 3.1 and appendix B.2):
``rowsum(dP * P) = rowsum(dO * O)`` since ``O = P V``, a reduction over ``d_v`` instead of ``seq_k``, so
``dS = (dP - rowsum(dO * O)) * P`` is two in-place passes over ``dP``, and the scale is applied to ``dQ`` and
``dK`` (``d_k`` wide) rather than to ``dS``. float16 goes to the composite (numpy's matmul has no float16 BLAS).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember.backend._ops_attention import AttentionOps

from ._quiet import quiet

__all__ = ["NumpyAttentionOps"]

_BLAS = (np.dtype(np.float32), np.dtype(np.float64))


@quiet
def _forward(q: Any, k: Any, v: Any, mask: Any, scale: float, min_float: float, quiet_: bool) -> tuple[Any, Any]:
    s = np.matmul(q, np.swapaxes(k, 2, 3))
    s *= scale
    if mask is not None:
        np.copyto(s, min_float, where=mask)
    m = s.max(axis=3, keepdims=True)
    if quiet_:  # exp(s - m) / (sum + exp(-m)), m = max(0, max s): quiet_softmax
        np.maximum(m, 0.0, out=m)
    s -= m
    np.exp(s, out=s)
    den = s.sum(axis=3, keepdims=True)
    if quiet_:
        np.negative(m, out=m)
        den += np.exp(m, out=m)
    s /= den
    out = np.matmul(s, v)
    return out, (s, out)


@quiet
def _backward(grad: Any, q: Any, k: Any, v: Any, mask: Any, residual: Any, scale: float) -> tuple[Any, Any, Any]:
    p, out = residual
    gv = np.matmul(np.swapaxes(p, 2, 3), grad)
    gs = np.matmul(grad, np.swapaxes(v, 2, 3))
    gs -= np.einsum("bhqd,bhqd->bhq", grad, out)[..., None]
    gs *= p
    if mask is not None:
        np.copyto(gs, 0.0, where=mask)
    gq = np.matmul(gs, k)
    gq *= scale
    gk = np.matmul(np.swapaxes(gs, 2, 3), q)
    gk *= scale
    return gq, gk, gv


class NumpyAttentionOps(AttentionOps):
    """Attention in place on the scores array, forward and backward (float32 and float64)."""

    def attention(self, q: Any, k: Any, v: Any, mask: Any | None, scale: float, min_float: float,
                  quiet: bool) -> tuple[Any, Any]:
        if q.dtype not in _BLAS:
            return super().attention(q, k, v, mask, scale, min_float, quiet)
        return _forward(q, k, v, mask, scale, min_float, quiet)  # type: ignore[no-any-return]

    def attention_backward(self, grad: Any, q: Any, k: Any, v: Any, mask: Any | None, residual: Any, scale: float,
                           min_float: float, quiet: bool) -> tuple[Any, Any, Any]:
        if q.dtype not in _BLAS:
            return super().attention_backward(grad, q, k, v, mask, residual, scale, min_float, quiet)
        return _backward(grad, q, k, v, mask, residual, scale)  # type: ignore[no-any-return]
