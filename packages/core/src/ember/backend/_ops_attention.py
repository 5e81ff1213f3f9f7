"""The scaled dot-product attention primitive (issue 22), forward and backward, so that a backend can run attention
as one fused kernel (torch: ``torch.nn.functional.scaled_dot_product_attention``, its flash-attention kernels) and
``Autodiff`` records one node instead of six (matmul, scale, mask, softmax, matmul and their copies).

The defaults are composites of the matmul, mask, softmax and reduction primitives, the computation of
:class:`~ember.nn.MultiHeadAttention` (Vaswani et al. 2017, eq. 1), op for op::

    forward:   S = (Q K^T) * scale,  S[mask] = min_float,  P = softmax(S) (or quiet_softmax),  O = (P * D) V
    backward:  dV = (P * D)^T dO,  dP = (dO V^T) * D,  dS = P * (dP - rowsum(dP * P)),  dS[mask] = 0,
               dQ = (dS * scale) K,  dK = (dS * scale)^T Q

with ``D`` the dropout multiplier of the weights (a keep mask over ``1 - p``, drawn by the caller, a constant), or
no multiplication at all without dropout

(the softmax backward is the same for ``quiet_softmax``, ``exp(x_i) / (1 + sum_j exp(x_j))``: its Jacobian is
``P_i (delta_ij - P_j)`` too; masked scores are replaced, not shifted, so their gradient is 0).

``residual`` is what the forward keeps for the backward; its content belongs to the backend (the composite keeps
``P``; a fused kernel its own statistics) and only that backend's :meth:`AttentionOps.attention_backward` reads it.
"""

from __future__ import annotations

from typing import Any

from ._ops_activation import quiet_softmax_composite

__all__ = ["AttentionOps"]

_T = (0, 1, 3, 2)  # the last two dims exchanged


def _softmax_last(B: Any, s: Any, quiet: bool) -> Any:
    """``softmax`` over the last dim of a rank-4 ``s``, or ``quiet_softmax`` as
    :func:`ember.tensor.activation.quiet_softmax` computes it."""
    return quiet_softmax_composite(B, s, 3) if quiet else B.softmax(s, 3)


class AttentionOps:
    """The attention primitive; see the module docstring for the formulas.

    The defaults call primitives of the other op groups through ``B = self`` typed ``Any`` (the mixin only ever
    runs as part of a :class:`~ember.backend.Backend`).
    """

    def attention(self, q: Any, k: Any, v: Any, mask: Any | None, dropout: Any | None, scale: float,
                  min_float: float, quiet: bool) -> tuple[Any, Any]:
        """Scaled dot-product attention of ``heads`` independent heads.

        Args:
            q: Float ``[batch, heads, seq_q, d_k]`` (strided views allowed, as for ``k`` and ``v``).
            k: ``[batch, heads, seq_k, d_k]``, ``q``'s dtype.
            v: ``[batch, heads, seq_k, d_v]``, ``q``'s dtype.
            mask: Bool, broadcastable to ``[batch, heads, seq_q, seq_k]``, ``True`` where a score is replaced by
                ``min_float``; or ``None``.
            dropout: Float, broadcastable to ``[batch, heads, seq_q, seq_k]``, the factor of the weights after the
                softmax (inverted dropout: ``keep / (1 - p)``); no gradient flows to it. ``None``: no dropout.
            scale: the factor of the scores (``1 / sqrt(d_k)`` in the paper).
            min_float: the score of masked positions (Burn's default ``-1e4``; ``-inf`` gives exact zeros).
            quiet: ``quiet_softmax`` instead of ``softmax`` (a row may attend to nothing).

        Returns:
            ``(out [batch, heads, seq_q, d_v], residual)``; ``residual`` is opaque (only this backend's
            :meth:`attention_backward` reads it).
        """
        B: Any = self
        s = B.mul(B.matmul(q, B.permute(k, _T)), scale)
        if mask is not None:
            s = B.mask_fill(s, mask, min_float)
        p = _softmax_last(B, s, quiet)
        return B.matmul(p if dropout is None else B.mul(p, dropout), v), p

    def attention_backward(self, grad: Any, q: Any, k: Any, v: Any, mask: Any | None, dropout: Any | None,
                           residual: Any, scale: float, min_float: float, quiet: bool) -> tuple[Any, Any, Any]:
        """Gradients of :meth:`attention`'s ``out`` with respect to ``(q, k, v)``.

        Args:
            grad: the gradient of ``out``, ``[batch, heads, seq_q, d_v]``.
            q: the forward's.
            k: the forward's.
            v: the forward's.
            mask: the forward's.
            dropout: the forward's.
            residual: what :meth:`attention` returned with ``out``.
            scale: the forward's.
            min_float: the forward's.
            quiet: the forward's.

        Returns:
            ``(grad_q like q, grad_k like k, grad_v like v)``.
        """
        B: Any = self
        p = residual
        gp = B.matmul(grad, B.permute(v, _T))
        if dropout is None:
            gv = B.matmul(B.permute(p, _T), grad)
        else:
            gv = B.matmul(B.permute(B.mul(p, dropout), _T), grad)
            gp = B.mul(gp, dropout)
        gs = B.softmax_backward(gp, p, 3)
        if mask is not None:
            gs = B.mask_fill(gs, mask, 0.0)
        gs = B.mul(gs, scale)
        return B.matmul(gs, k), B.matmul(B.permute(gs, _T), q), gv
