"""``MultiHeadAttention`` (Burn's ``nn::attention::MultiHeadAttention``; Vaswani et al. 2017)."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from .._errors import ShapeError
from .._kind import Bool
from ..backend._device import Device
from ..config import config
from ..module import Module
from ..tensor import Tensor
from ..tensor import activation as A
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


@dataclass(frozen=True)
class MhaOutput:
    """``weights`` ``[batch, n_heads, seq_q, seq_k]`` (attention probabilities, after dropout) and
    ``context`` ``[batch, seq_q, d_model]`` (Burn's ``MhaOutput``)."""

    weights: Tensor
    context: Tensor


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
        scores = (qh @ kh.swap_dims(2, 3)) * (1.0 / math.sqrt(self.d_k))
        if input.mask_pad is not None:
            m = _mask(layer, "mask_pad", input.mask_pad, [batch, seq_k])
            scores = scores.mask_fill(m.reshape([batch, 1, 1, seq_k]), self.min_float)
        if input.mask_attn is not None:
            m = _mask(layer, "mask_attn", input.mask_attn, [batch, seq_q, seq_k])
            scores = scores.mask_fill(m.reshape([batch, 1, seq_q, seq_k]), self.min_float)
        weights = A.quiet_softmax(scores, 3) if self.quiet_softmax else A.softmax(scores, 3)
        weights = self.dropout.forward(weights)
        context = (weights @ vh).swap_dims(1, 2).reshape([batch, seq_q, d_model])
        return MhaOutput(weights=weights, context=self.output.forward(context))

    __call__ = forward

    def _heads(self, x: Tensor) -> Tensor:
        b, s, _ = x.shape
        return x.reshape([b, s, self.n_heads, self.d_k]).swap_dims(1, 2)


def _mask(layer: str, name: str, m: Tensor, shape: list[int]) -> Tensor:
    if not isinstance(m, Tensor) or m.kind is not Bool:
        raise TypeError(f"{layer}: {name} must be a Bool tensor of shape {shape} (True = masked).")
    if list(m.shape) != shape:
        raise ShapeError(f"{layer}: {name} must have shape {shape}, got {list(m.shape)}.")
    return m
