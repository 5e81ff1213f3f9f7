"""The attention primitive in numpy (issue 22): the contract's formulas with as few passes and temporaries as
numpy allows.

Forward: the scores are the one ``[batch, heads, seq_q, seq_k]`` array; scale, mask, softmax (or quiet softmax)
run in place in it, op for op as the composite (so the values are the composite's), and it is kept as the
probabilities ``P`` (the dropout multiplier ``D``, if any, applied into a scratch block). Backward (the
flash-attention identity of Dao et al. 2022, sec. 3.1 and appendix B.2): ``rowsum(dP * P) = rowsum(dO * O)``
since ``O = (P * D) V`` and ``dP = (dO V^T) * D``, a reduction over ``d_v`` instead of ``seq_k``, so
``dS = (dP - rowsum(dO * O)) * P`` is two in-place passes over ``dP``, and the scale is applied to ``dQ`` and
``dK`` (``d_k`` wide) rather than to ``dS``. Both run over blocks of batch rows whose scores fit the L2 cache
(:data:`BLOCK_BYTES`), the matmuls writing into the preallocated results: on this repository's 2-core Zen 4, at
``[16, 8, 128, 32]`` float32 and one BLAS thread, forward and backward take 21-22 ms in blocks of 2 rows against
25-30 ms unblocked and 33-43 ms for the composite (medians of 7, interleaved, a loaded machine). float16 goes to
the composite (numpy's matmul has no float16 BLAS).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember.backend.contract import AttentionOps

from ._quiet import quiet

__all__ = ["NumpyAttentionOps"]

_BLAS = (np.dtype(np.float32), np.dtype(np.float64))


#: bytes of scores per block of batch rows: the block's scores and their temporaries stay in the core's L2 cache
BLOCK_BYTES = 1 << 20


def _rows(s_shape: tuple[int, ...], itemsize: int) -> int:
    """Batch rows per block: as many as fit :data:`BLOCK_BYTES` of scores, at least one."""
    return max(1, BLOCK_BYTES // max(1, s_shape[1] * s_shape[2] * s_shape[3] * itemsize))


def _full(a: Any, shape: tuple[int, ...]) -> Any:
    """``a`` broadcast to ``shape`` (a view, sliced by batch rows), or ``None``."""
    return None if a is None else np.broadcast_to(a, shape)


@quiet
def _forward(q: Any, k: Any, v: Any, mask: Any, dropout: Any, scale: float, min_float: float,
             quiet_: bool) -> tuple[Any, Any]:
    b, h, sq, _ = q.shape
    p = np.empty((b, h, sq, k.shape[2]), q.dtype)
    out = np.empty((b, h, sq, v.shape[3]), q.dtype)
    kt = np.swapaxes(k, 2, 3)
    m4, d4 = _full(mask, p.shape), _full(dropout, p.shape)
    n = _rows(p.shape, p.itemsize)
    dropped = None if d4 is None else np.empty((min(n, b),) + p.shape[1:], p.dtype)
    for i in range(0, b, n):
        s = p[i:i + n]
        np.matmul(q[i:i + n], kt[i:i + n], out=s)
        s *= scale
        if m4 is not None:
            np.copyto(s, min_float, where=m4[i:i + n])
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
        if dropped is not None:
            s = np.multiply(s, d4[i:i + n], out=dropped[: s.shape[0]])
        np.matmul(s, v[i:i + n], out=out[i:i + n])
    return out, (p, out)


@quiet
def _backward(grad: Any, q: Any, k: Any, v: Any, mask: Any, dropout: Any, residual: Any,
              scale: float) -> tuple[Any, Any, Any]:
    p, out = residual
    b = p.shape[0]
    gq, gk, gv = np.empty(q.shape, q.dtype), np.empty(k.shape, k.dtype), np.empty(v.shape, v.dtype)
    rowsum = np.einsum("bhqd,bhqd->bhq", grad, out)[..., None]  # rowsum(dP * P), dropout or not
    vt = np.swapaxes(v, 2, 3)
    m4, d4 = _full(mask, p.shape), _full(dropout, p.shape)
    n = _rows(p.shape, p.itemsize)
    scratch = np.empty((min(n, b),) + p.shape[1:], p.dtype)
    dropped = None if d4 is None else np.empty_like(scratch)
    for i in range(0, b, n):
        pb = p[i:i + n]
        r = pb.shape[0]
        gs = scratch[:r]
        pd = pb if dropped is None else np.multiply(pb, d4[i:i + n], out=dropped[:r])
        np.matmul(np.swapaxes(pd, 2, 3), grad[i:i + n], out=gv[i:i + n])
        np.matmul(grad[i:i + n], vt[i:i + n], out=gs)
        if d4 is not None:
            gs *= d4[i:i + n]
        gs -= rowsum[i:i + n]
        gs *= pb
        if m4 is not None:
            np.copyto(gs, 0.0, where=m4[i:i + n])
        np.matmul(gs, k[i:i + n], out=gq[i:i + n])
        np.matmul(np.swapaxes(gs, 2, 3), q[i:i + n], out=gk[i:i + n])
    gq *= scale
    gk *= scale
    return gq, gk, gv


class NumpyAttentionOps(AttentionOps):
    """Attention in place on the scores array, forward and backward (float32 and float64)."""

    def attention(self, q: Any, k: Any, v: Any, mask: Any | None, dropout: Any | None, scale: float,
                  min_float: float, quiet: bool) -> tuple[Any, Any]:
        if q.dtype not in _BLAS:
            return super().attention(q, k, v, mask, dropout, scale, min_float, quiet)
        return _forward(q, k, v, mask, dropout, scale, min_float, quiet)  # type: ignore[no-any-return]

    def attention_backward(self, grad: Any, q: Any, k: Any, v: Any, mask: Any | None, dropout: Any | None,
                           residual: Any, scale: float, min_float: float, quiet: bool) -> tuple[Any, Any, Any]:
        if q.dtype not in _BLAS:
            return super().attention_backward(grad, q, k, v, mask, dropout, residual, scale, min_float, quiet)
        return _backward(grad, q, k, v, mask, dropout, residual, scale)  # type: ignore[no-any-return]
