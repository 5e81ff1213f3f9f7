"""``TransformerDecoder`` (Burn's ``nn::transformer::TransformerDecoder``; Vaswani et al. 2017)."""

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

__all__ = ["TransformerDecoderConfig", "TransformerDecoder", "TransformerDecoderLayer", "TransformerDecoderInput"]


@dataclass(frozen=True)
class TransformerDecoderInput:
    """The decoder input (Burn's ``TransformerDecoderInput``): ``target`` ``[batch, seq_t, d_model]``,
    ``memory`` ``[batch, seq_m, d_model]`` (the encoder output) and optional Bool masks
    ``target_mask_pad`` ``[batch, seq_t]``, ``target_mask_attn`` ``[batch, seq_t, seq_t]`` (e.g. causal),
    ``memory_mask_pad`` ``[batch, seq_m]``, ``memory_mask_attn`` ``[batch, seq_t, seq_m]``."""

    target: Tensor
    memory: Tensor
    target_mask_pad: Tensor | None = None
    target_mask_attn: Tensor | None = None
    memory_mask_pad: Tensor | None = None
    memory_mask_attn: Tensor | None = None

    def with_target_mask_pad(self, m: Tensor | None) -> TransformerDecoderInput:
        return replace(self, target_mask_pad=m)

    def with_target_mask_attn(self, m: Tensor | None) -> TransformerDecoderInput:
        return replace(self, target_mask_attn=m)

    def with_memory_mask_pad(self, m: Tensor | None) -> TransformerDecoderInput:
        return replace(self, memory_mask_pad=m)

    def with_memory_mask_attn(self, m: Tensor | None) -> TransformerDecoderInput:
        return replace(self, memory_mask_attn=m)


@config
class TransformerDecoderConfig:
    """Configuration of :class:`TransformerDecoder` (Burn's ``TransformerDecoderConfig``); fields as
    :class:`~ember.nn.TransformerEncoderConfig` (``dropout`` 0.1, ``norm_first`` ``False``,
    ``KaimingUniform(gain=1/sqrt(3))``)."""

    d_model: int
    d_ff: int
    n_heads: int
    n_layers: int
    dropout: float = 0.1
    norm_first: bool = False
    quiet_softmax: bool = False
    initializer: AnyInitializer = KaimingUniform(gain=1.0 / math.sqrt(3.0), fan_out_only=False)

    def init(self, device: Device) -> TransformerDecoder:
        """A new :class:`TransformerDecoder`.

        Raises:
            ConfigError: ``n_heads`` does not divide ``d_model``, ``n_layers < 1``, or another bad size.
        """
        if self.n_layers < 1:
            raise config_error("TransformerDecoderConfig", f"n_layers must be >= 1, got {self.n_layers}.")
        return TransformerDecoder(layers=[self._layer(device) for _ in range(self.n_layers)])

    def _layer(self, device: Device) -> TransformerDecoderLayer:
        def mha() -> MultiHeadAttention:
            return MultiHeadAttentionConfig(self.d_model, self.n_heads, self.dropout, quiet_softmax=self.quiet_softmax,
                                            initializer=self.initializer).init(device)

        def norm() -> LayerNorm:
            return LayerNormConfig(self.d_model).init(device)

        pwff = PositionWiseFeedForwardConfig(self.d_model, self.d_ff, self.dropout, self.initializer).init(device)
        return TransformerDecoderLayer(self_attn=mha(), cross_attn=mha(), pwff=pwff, norm_1=norm(), norm_2=norm(),
                                       norm_3=norm(), dropout=Dropout(prob=self.dropout), norm_first=self.norm_first)


class TransformerDecoderLayer(Module):
    """Masked self-attention, cross-attention over ``memory``, then feed-forward; each with dropout and a
    residual connection, normalized after (post-norm) or before (pre-norm) as in Burn::

        post-norm:  x = norm_1(x + sa(x)); x = norm_2(x + ca(x, mem)); x = norm_3(x + ff(x))
        pre-norm:   x = x + sa(norm_1(x)); x = x + ca(norm_2(x), mem); x = x + ff(norm_3(x))

    Same as PyTorch's ``nn.TransformerDecoderLayer(batch_first=True, activation="gelu")``.
    """

    self_attn: MultiHeadAttention
    cross_attn: MultiHeadAttention
    pwff: PositionWiseFeedForward
    norm_1: LayerNorm
    norm_2: LayerNorm
    norm_3: LayerNorm
    dropout: Dropout
    norm_first: bool = False

    def forward(self, x: Tensor, input: TransformerDecoderInput) -> Tensor:  # noqa: A002
        d = self.dropout.forward

        def sa(t: Tensor) -> Tensor:
            return d(self.self_attn.forward(MhaInput.self_attn(t).with_mask_pad(input.target_mask_pad)
                                            .with_mask_attn(input.target_mask_attn)).context)

        def ca(t: Tensor) -> Tensor:
            return d(self.cross_attn.forward(MhaInput(t, input.memory, input.memory)
                                             .with_mask_pad(input.memory_mask_pad)
                                             .with_mask_attn(input.memory_mask_attn)).context)

        if self.norm_first:
            x = x + sa(self.norm_1.forward(x))
            x = x + ca(self.norm_2.forward(x))
            return x + d(self.pwff.forward(self.norm_3.forward(x)))
        x = self.norm_1.forward(x + sa(x))
        x = self.norm_2.forward(x + ca(x))
        return self.norm_3.forward(x + d(self.pwff.forward(x)))


class TransformerDecoder(Module):
    """A stack of :class:`TransformerDecoderLayer` (Burn's ``TransformerDecoder``; no final norm).

    ``forward(TransformerDecoderInput)``: ``target [batch, seq_t, d_model] -> [batch, seq_t, d_model]``.
    """

    layers: list[TransformerDecoderLayer]

    def forward(self, input: TransformerDecoderInput) -> Tensor:  # noqa: A002 - Burn's name
        x = input.target
        for layer in self.layers:
            x = layer.forward(x, input)
        return x
