"""``TransformerEncoder`` (Burn's ``nn::transformer::TransformerEncoder``; Vaswani et al. 2017)."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from ..backend._device import Device
from ..config import config
from ..module import Module
from ..tensor import Tensor
from ._attention import MhaInput, MultiHeadAttention, MultiHeadAttentionConfig
from ._checks import config_error
from ._dropout import Dropout
from ._initializer import AnyInitializer, KaimingUniform
from ._norm_layer import LayerNorm, LayerNormConfig
from ._pwff import PositionWiseFeedForward, PositionWiseFeedForwardConfig

__all__ = ["TransformerEncoderConfig", "TransformerEncoder", "TransformerEncoderLayer", "TransformerEncoderInput"]


@dataclass(frozen=True)
class TransformerEncoderInput:
    """``tensor`` ``[batch, seq_length, d_model]`` with optional ``mask_pad`` Bool ``[batch, seq_length]``
    and ``mask_attn`` Bool ``[batch, seq_length, seq_length]`` (Burn's ``TransformerEncoderInput``)."""

    tensor: Tensor
    mask_pad: Tensor | None = None
    mask_attn: Tensor | None = None

    def with_mask_pad(self, mask_pad: Tensor | None) -> TransformerEncoderInput:
        return replace(self, mask_pad=mask_pad)

    def with_mask_attn(self, mask_attn: Tensor | None) -> TransformerEncoderInput:
        return replace(self, mask_attn=mask_attn)


@config
class TransformerEncoderConfig:
    """Configuration of :class:`TransformerEncoder` (Burn's ``TransformerEncoderConfig``).

    Args:
        d_model: model size; ``n_heads`` must divide it.
        d_ff: hidden size of the feed-forward blocks.
        n_heads: attention heads.
        n_layers: encoder layers.
        dropout: default 0.1 (Burn).
        norm_first: pre-norm layers (``True``) or post-norm as the paper (``False``, Burn's default).
        quiet_softmax: attention with :func:`~ember.tensor.activation.quiet_softmax`.
        initializer: default ``KaimingUniform(gain=1/sqrt(3))`` (Burn).
    """

    d_model: int
    d_ff: int
    n_heads: int
    n_layers: int
    dropout: float = 0.1
    norm_first: bool = False
    quiet_softmax: bool = False
    initializer: AnyInitializer = KaimingUniform(gain=1.0 / math.sqrt(3.0), fan_out_only=False)

    def init(self, device: Device) -> TransformerEncoder:
        """A new :class:`TransformerEncoder`.

        Raises:
            ConfigError: ``n_heads`` does not divide ``d_model``, ``n_layers < 1``, or another bad size.
        """
        if self.n_layers < 1:
            raise config_error("TransformerEncoderConfig", f"n_layers must be >= 1, got {self.n_layers}.")
        return TransformerEncoder(layers=[self._layer(device) for _ in range(self.n_layers)])

    def _layer(self, device: Device) -> TransformerEncoderLayer:
        mha = MultiHeadAttentionConfig(self.d_model, self.n_heads, self.dropout, quiet_softmax=self.quiet_softmax,
                                       initializer=self.initializer).init(device)
        pwff = PositionWiseFeedForwardConfig(self.d_model, self.d_ff, self.dropout, self.initializer).init(device)
        return TransformerEncoderLayer(
            mha=mha, pwff=pwff, norm_1=LayerNormConfig(self.d_model).init(device),
            norm_2=LayerNormConfig(self.d_model).init(device), dropout=Dropout(prob=self.dropout),
            norm_first=self.norm_first,
        )


class TransformerEncoderLayer(Module):
    """Self-attention then feed-forward, each with dropout and a residual connection (Burn's layer)::

        post-norm:  x = norm_1(x + dropout(mha(x)));  x = norm_2(x + dropout(pwff(x)))
        pre-norm:   x = x + dropout(mha(norm_1(x)));  x = x + dropout(pwff(norm_2(x)))

    Same as PyTorch's ``nn.TransformerEncoderLayer(batch_first=True, activation="gelu")`` with
    ``norm_first``. Shapes: ``[batch, seq_length, d_model] -> same``.
    """

    mha: MultiHeadAttention
    pwff: PositionWiseFeedForward
    norm_1: LayerNorm
    norm_2: LayerNorm
    dropout: Dropout
    norm_first: bool = False

    def forward(self, x: Tensor, mask_pad: Tensor | None = None, mask_attn: Tensor | None = None) -> Tensor:
        def attn(t: Tensor) -> Tensor:
            return self.dropout.forward(self.mha.forward(
                MhaInput.self_attn(t).with_mask_pad(mask_pad).with_mask_attn(mask_attn)).context)

        if self.norm_first:
            x = x + attn(self.norm_1.forward(x))
            return x + self.dropout.forward(self.pwff.forward(self.norm_2.forward(x)))
        x = self.norm_1.forward(x + attn(x))
        return self.norm_2.forward(x + self.dropout.forward(self.pwff.forward(x)))


class TransformerEncoder(Module):
    """A stack of :class:`TransformerEncoderLayer` (Burn's ``TransformerEncoder``; no final norm).

    ``forward(TransformerEncoderInput)``: ``[batch, seq_length, d_model] -> same``.
    """

    layers: list[TransformerEncoderLayer]

    def forward(self, input: TransformerEncoderInput) -> Tensor:  # noqa: A002 - Burn's name
        x = input.tensor
        for layer in self.layers:
            x = layer.forward(x, input.mask_pad, input.mask_attn)
        return x
