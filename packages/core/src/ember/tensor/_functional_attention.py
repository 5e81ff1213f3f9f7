"""``scaled_dot_product_attention``: the attention primitive as a function of tensors (re-exported by
:mod:`ember.tensor.functional`; used by :class:`~ember.nn.MultiHeadAttention`)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from .._errors import DeviceError, KindError, ShapeError
from .._kind import Bool, Float, Kind
from ._core import wrap

if TYPE_CHECKING:
    from ._tensor import Tensor

__all__ = ["scaled_dot_product_attention"]

_OP = "scaled_dot_product_attention"
_LAYOUT = {"q": "[batch, heads, seq_q, d_k]", "k": "[batch, heads, seq_k, d_k]", "v": "[batch, heads, seq_k, d_v]"}


def _check(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, dropout: Tensor | None) -> None:
    for name, t in (("q", q), ("k", k), ("v", v)):
        if t.kind is not Float:
            raise KindError(f"{_OP}: {name} must be a Float tensor, got {t.kind}; convert it with .float() first.")
        if t.rank != 4:
            raise ShapeError(f"{_OP}: expected {name} of shape {_LAYOUT[name]} (rank 4), got {list(t.shape)}.")
        if t.device is not q.device:
            raise DeviceError(f"{_OP}: {name} lives on {t.device}, q on {q.device}; move it with .to_device().")
        if t.dtype != q.dtype:
            raise KindError(f"{_OP}: {name} is {t.dtype}, q {q.dtype}; cast them to one float dtype.")
    (b, h, sq, dk), ks, vs = q.shape, k.shape, v.shape
    if ks[:2] != (b, h) or vs[:2] != (b, h) or ks[3] != dk or vs[2] != ks[2]:
        raise ShapeError(f"{_OP}: q {list(q.shape)}, k {list(ks)} and v {list(vs)} must share [batch, heads], q and "
                         f"k d_k, k and v seq_k (q {_LAYOUT['q']}, k {_LAYOUT['k']}, v {_LAYOUT['v']}).")
    full = (b, h, sq, ks[2])
    extras: tuple[tuple[str, Tensor | None, Kind, str], ...] = (
        ("mask", mask, Bool, "a Bool tensor (True = masked)"),
        ("dropout", dropout, Float, "a Float tensor (the weights' multiplier)"))
    for name, extra, kind, what in extras:
        if extra is None:
            continue
        if extra.kind is not kind:
            raise KindError(f"{_OP}: {name} must be {what}, got {extra.kind}.")
        if extra.device is not q.device:
            raise DeviceError(f"{_OP}: {name} lives on {extra.device}, q on {q.device}; move it with .to_device().")
        if kind is Float and extra.dtype != q.dtype:
            raise KindError(f"{_OP}: {name} is {extra.dtype}, q {q.dtype}; cast it to q's dtype.")
        ts = extra.shape
        if len(ts) > 4 or any(m not in (1, n) for m, n in zip(ts[::-1], full[::-1])):
            raise ShapeError(f"{_OP}: {name} {list(ts)} does not broadcast to [batch, heads, seq_q, seq_k] = "
                             f"{list(full)}.")


def scaled_dot_product_attention(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None,
                                 dropout: Tensor | None = None, scale: float | None = None,
                                 min_float: float = -1.0e4, quiet: bool = False) -> Tensor:
    """Scaled dot-product attention (Vaswani et al. 2017, eq. 1; PyTorch's ``F.scaled_dot_product_attention``
    with :class:`~ember.nn.MultiHeadAttention`'s masking and dropout)::

        S = (q k^T) * scale,  S[mask] = min_float,  out = (softmax(S, dim=-1) * dropout) v
                                                               (quiet_softmax with ``quiet``; no dropout: no product)

    One backend primitive (a fused kernel where the backend has one: torch's flash attention) and one
    ``Autodiff`` node; the attention weights are not returned (recompute them with
    :func:`~ember.tensor.activation.softmax` when needed).

    Args:
        q: Float ``[batch, heads, seq_q, d_k]``.
        k: Float ``[batch, heads, seq_k, d_k]``, of ``q``'s dtype and device.
        v: Float ``[batch, heads, seq_k, d_v]``, of ``q``'s dtype and device.
        mask: Bool, broadcastable to ``[batch, heads, seq_q, seq_k]``; ``True`` replaces the score by
            ``min_float`` (note: the opposite of PyTorch's boolean ``attn_mask``). ``None``: no mask.
        dropout: Float, broadcastable to ``[batch, heads, seq_q, seq_k]``: the multiplier of the attention weights
            after the softmax, e.g. :meth:`~ember.nn.Dropout.multiplier` (``keep / (1 - p)``, Srivastava et al. 2014;
            PyTorch draws it inside from ``dropout_p``). A constant: no gradient flows to it. ``None``: no dropout.
        scale: the factor of the scores; default ``1 / sqrt(d_k)`` (the paper).
        min_float: the score of masked positions (default ``-1e4``, Burn's; ``-inf`` gives exact zeros, and NaN for
            a row masked entirely unless ``quiet``).
        quiet: use :func:`~ember.tensor.activation.quiet_softmax` (Miller 2023: a row may attend to nothing).

    Returns:
        ``[batch, heads, seq_q, d_v]``, differentiable in ``q``, ``k`` and ``v``.

    Raises:
        KindError: a non-Float ``q``/``k``/``v``/``dropout``, different dtypes, a non-Bool mask.
        ShapeError: ranks other than 4, mismatched sizes, a mask or dropout that does not broadcast.
        DeviceError: tensors on different devices.
    """
    _check(q, k, v, mask, dropout)
    s = 1.0 / math.sqrt(q.shape[3]) if scale is None else float(scale)
    out, _ = q.ops.attention(q.primitive, k.primitive, v.primitive, None if mask is None else mask.primitive,
                             None if dropout is None else dropout.primitive, s, float(min_float), bool(quiet))
    return wrap(out, q, Float)
