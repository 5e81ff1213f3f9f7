"""``MultiHeadAttention`` (Burn's ``nn::attention::MultiHeadAttention``; Vaswani et al. 2017)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

from .._errors import ShapeError
from .._kind import Bool
from ..backend._device import Device
from ..config import config
from ..module import Module
from ..tensor import Tensor
from ..tensor import activation as A
from ..tensor import functional as M
from ._checks import check_dim, check_float, check_rank, config_error
from ._dropout import Dropout
from ._initializer import AnyInitializer, KaimingUniform
from ._linear import Linear, LinearConfig

__all__ = ["MultiHeadAttentionConfig", "MultiHeadAttention", "MhaInput", "MhaOutput"]

_LAYOUT = "[batch, seq_length, d_model]"


@dataclass(frozen=True)
class MhaInput:
    """The input of :class:`MultiHeadAttention` (Burn's ``MhaInput``).

    Fields: ``query`` ``[batch, seq_q, d_model]``, ``key`` / ``value`` ``[batch, seq_k, d_model]``,
    ``mask_pad`` Bool ``[batch, seq_k]`` (``True`` = padding, never attended), ``mask_attn`` Bool
    ``[batch, seq_q, seq_k]`` (``True`` = blocked; e.g. :func:`generate_autoregressive_mask`).

    Build with ``MhaInput.self_attn(x)`` or ``MhaInput(query, key, value)``, then
    ``.with_mask_pad(m)`` / ``.with_mask_attn(m)`` (Burn's ``mask_pad`` / ``mask_attn``).
    """

    query: Tensor
    key: Tensor
    value: Tensor
    mask_pad: Tensor | None = None
    mask_attn: Tensor | None = None

    @staticmethod
    def self_attn(tensor: Tensor) -> MhaInput:
        """Self-attention: ``query = key = value = tensor``."""
        return MhaInput(tensor, tensor, tensor)

    def with_mask_pad(self, mask_pad: Tensor | None) -> MhaInput:
        return replace(self, mask_pad=mask_pad)

    def with_mask_attn(self, mask_attn: Tensor | None) -> MhaInput:
        return replace(self, mask_attn=mask_attn)


class MhaOutput:
    """``weights`` ``[batch, n_heads, seq_q, seq_k]`` (attention probabilities, after dropout) and
    ``context`` ``[batch, seq_q, d_model]`` (Burn's ``MhaOutput``).

    :class:`MultiHeadAttention` runs the fused attention primitive, which never forms the weights: ``weights``
    computes them on first read (softmax of the masked scores times the same dropout multiplier, differentiable),
    so a caller that only reads ``context`` does not pay for them.
    """

    __slots__ = ("context", "_weights", "_compute")

    def __init__(self, weights: Tensor, context: Tensor) -> None:
        self.context = context
        self._weights: Tensor | None = weights
        self._compute: Callable[[], Tensor] | None = None

    @classmethod
    def lazy(cls, weights: Callable[[], Tensor], context: Tensor) -> MhaOutput:
        """An output whose ``weights`` are ``weights()``, called once on the first read."""
        out = cls.__new__(cls)
        out.context, out._weights, out._compute = context, None, weights
        return out

    @property
    def weights(self) -> Tensor:
        if self._weights is None:
            assert self._compute is not None
            self._weights, self._compute = self._compute(), None
        return self._weights

    def __repr__(self) -> str:
        w = "<not computed>" if self._weights is None else repr(self._weights)
        return f"MhaOutput(weights={w}, context={self.context!r})"


@config
class MultiHeadAttentionConfig:
    """Configuration of :class:`MultiHeadAttention` (Burn's ``MultiHeadAttentionConfig``).

    Args:
        d_model: model size; must be divisible by ``n_heads``.
        n_heads: heads (each of size ``d_k = d_model / n_heads``).
        dropout: dropout on the attention weights (default 0.1, Burn).
        min_float: the score given to masked positions before the softmax (default ``-1e4``, Burn; use
            ``float("-inf")`` for exact zeros, as PyTorch).
        quiet_softmax: use :func:`~ember.tensor.activation.quiet_softmax` (a row may attend to nothing).
        initializer: for the four projections; default ``KaimingUniform(gain=1/sqrt(3))`` (Burn).
    """

    d_model: int
    n_heads: int
    dropout: float = 0.1
    min_float: float = -1.0e4
    quiet_softmax: bool = False
    initializer: AnyInitializer = KaimingUniform(gain=1.0 / math.sqrt(3.0), fan_out_only=False)

    def init(self, device: Device) -> MultiHeadAttention:
        """A new :class:`MultiHeadAttention`.

        Raises:
            ConfigError: ``n_heads`` does not divide ``d_model``, a size below 1, or ``dropout``
                outside ``[0, 1]``.
        """
        if self.d_model < 1 or self.n_heads < 1:
            raise config_error("MultiHeadAttentionConfig", f"d_model ({self.d_model}) and n_heads ({self.n_heads}) "
                               "must be >= 1.")
        if self.d_model % self.n_heads:
            raise config_error("MultiHeadAttentionConfig", f"n_heads ({self.n_heads}) must divide d_model "
                               f"({self.d_model}); each head has d_model / n_heads features.")
        if not 0.0 <= self.dropout <= 1.0:
            raise config_error("MultiHeadAttentionConfig", f"dropout must be in [0, 1], got {self.dropout}.")

        def lin() -> Linear:
            return LinearConfig(self.d_model, self.d_model, True, self.initializer).init(device)

        return MultiHeadAttention(
            query=lin(), key=lin(), value=lin(), output=lin(), dropout=Dropout(prob=self.dropout),
            n_heads=self.n_heads, d_k=self.d_model // self.n_heads, min_float=self.min_float,
            quiet_softmax=self.quiet_softmax,
        )


class MultiHeadAttention(Module):
    """Multi-head scaled dot-product attention (Burn's ``MultiHeadAttention``)::

        Q, K, V = query(q), key(k), value(v)               split into n_heads of d_k
        weights = softmax(Q K^T / sqrt(d_k), masked -> min_float)    [batch, heads, seq_q, seq_k]
        context = output(concat_heads(dropout(weights) V))

    Params: ``query``, ``key``, ``value``, ``output``: ``Linear [d_model, d_model]`` with bias.
    PyTorch's ``nn.MultiheadAttention`` (``batch_first=True``) maps as ``query.weight =
    in_proj_weight[0:d].T``, ``key ... = [d:2d].T``, ``value ... = [2d:3d].T``, ``output.weight =
    out_proj.weight.T``. Dropout is applied to the attention weights after the softmax (as PyTorch
    and the paper; Burn drops the scores before the softmax). Masked scores take ``min_float``.

    The attention itself is one primitive (:func:`ember.tensor.functional.scaled_dot_product_attention`: torch's flash
    kernels, numpy's in-place kernel, one ``Autodiff`` node), the dropout applied inside it as the multiplier
    :meth:`Dropout.multiplier` draws; the output's ``weights`` are computed only when read.

    Raises (forward):
        ShapeError: a wrong rank or ``d_model``, key/value of different lengths, masks of the wrong shape.
        KindError: non-Float inputs or non-Bool masks.
    """

    query: Linear
    key: Linear
    value: Linear
    output: Linear
    dropout: Dropout
    n_heads: int
    d_k: int
    min_float: float = -1.0e4
    quiet_softmax: bool = False

    def forward(self, input: MhaInput) -> MhaOutput:  # noqa: A002 - Burn's name
        layer = "MultiHeadAttention"
        d_model = self.n_heads * self.d_k
        for name in ("query", "key", "value"):
            t = check_float(layer, getattr(input, name), name)
            check_rank(layer, t, 3, _LAYOUT, name)
            check_dim(layer, t, 2, d_model, _LAYOUT, "d_model", name)
        q, k, v = input.query, input.key, input.value
        batch, seq_q = q.shape[0], q.shape[1]
        seq_k = k.shape[1]
        if v.shape[:2] != k.shape[:2] or k.shape[0] != batch:
            raise ShapeError(f"{layer}: key {list(k.shape)} and value {list(v.shape)} must share [batch, seq_k] and "
                             f"the batch of query {list(q.shape)}.")
        qh = self._heads(self.query.forward(q))
        kh = self._heads(self.key.forward(k))
        vh = self._heads(self.value.forward(v))
        mask = _masks(layer, input, batch, seq_q, seq_k)
        # the dropout of the weights as a multiplier: the same draw as Dropout.forward on the weights would make
        drop = self.dropout.multiplier(qh, [batch, self.n_heads, seq_q, seq_k])
        ctx = M.scaled_dot_product_attention(qh, kh, vh, mask, drop, 1.0 / math.sqrt(self.d_k), self.min_float,
                                             self.quiet_softmax)

        def weights() -> Tensor:
            w = self._weights(qh, kh, mask)
            return w if drop is None else w * drop

        return MhaOutput.lazy(weights, self.output.forward(self._merge(ctx)))

    def _heads(self, x: Tensor) -> Tensor:
        b, s, _ = x.shape
        return x.reshape([b, s, self.n_heads, self.d_k]).swap_dims(1, 2)

    def _merge(self, ctx: Tensor) -> Tensor:
        b, _, s, _ = ctx.shape
        return ctx.swap_dims(1, 2).reshape([b, s, self.n_heads * self.d_k])

    def _weights(self, qh: Tensor, kh: Tensor, mask: Tensor | None) -> Tensor:
        """``softmax(Q K^T / sqrt(d_k), masked -> min_float)``, before dropout."""
        scores = (qh @ kh.swap_dims(2, 3)) * (1.0 / math.sqrt(self.d_k))
        if mask is not None:
            scores = scores.mask_fill(mask, self.min_float)
        return A.quiet_softmax(scores, 3) if self.quiet_softmax else A.softmax(scores, 3)


def _masks(layer: str, input: MhaInput, batch: int, seq_q: int, seq_k: int) -> Tensor | None:  # noqa: A002
    """``mask_pad`` and ``mask_attn`` as one Bool mask ``[batch, 1, 1 or seq_q, seq_k]`` (both give ``min_float``,
    so filling with their union equals filling with each in turn), or ``None``."""
    mask = None
    if input.mask_pad is not None:
        mask = _mask(layer, "mask_pad", input.mask_pad, [batch, seq_k]).reshape([batch, 1, 1, seq_k])
    if input.mask_attn is not None:
        attn = _mask(layer, "mask_attn", input.mask_attn, [batch, seq_q, seq_k]).reshape([batch, 1, seq_q, seq_k])
        mask = attn if mask is None else mask | attn
    return mask


def _mask(layer: str, name: str, m: Tensor, shape: list[int]) -> Tensor:
    if not isinstance(m, Tensor) or m.kind is not Bool:
        raise TypeError(f"{layer}: {name} must be a Bool tensor of shape {shape} (True = masked).")
    if list(m.shape) != shape:
        raise ShapeError(f"{layer}: {name} must have shape {shape}, got {list(m.shape)}.")
    return m
