"""Neural-network layers (Burn's ``burn::nn``): each layer has a ``XConfig(...).init(device) -> X``
and a ``forward`` (also callable: ``layer(x)``). Layers are immutable :class:`~ember.module.Module`
trees; everything is written with Ember tensor ops, so it runs and differentiates on every backend.

- Dense and embedding: :class:`Linear`, :class:`Embedding`, :class:`Dropout`, :class:`SwiGlu`.
- Convolution and pooling: :class:`Conv1d` / :class:`Conv2d` / :class:`Conv3d`,
  :class:`ConvTranspose1d` / 2d / 3d, :class:`MaxPool1d` / 2d, :class:`AvgPool1d` / 2d,
  :class:`AdaptiveAvgPool1d` / 2d, :class:`Interpolate1d` / 2d, with :class:`PaddingConfig2d` (``Valid``,
  ``Same``, ``Explicit``).
- Normalization: :class:`BatchNorm`, :class:`LayerNorm`, :class:`GroupNorm`, :class:`InstanceNorm`,
  :class:`RmsNorm`.
- Recurrent: :class:`Lstm`, :class:`BiLstm`, :class:`StackedLstm`, :class:`Gru`.
- Attention and transformers: :class:`MultiHeadAttention` (:class:`MhaInput`),
  :class:`TransformerEncoder`, :class:`TransformerDecoder`, :class:`PositionWiseFeedForward`,
  :class:`PositionalEncoding`, :class:`RotaryEncoding`.
- Activations: :class:`Relu`, :class:`LeakyRelu`, :class:`PRelu`, :class:`Gelu`, :class:`Sigmoid`,
  :class:`Tanh`, :class:`Silu` (:data:`Swish`), :class:`Elu`, :class:`Celu`, :class:`Selu`,
  :class:`Softplus`, :class:`Softsign`, :class:`HardSigmoid`, :class:`HardSwish`, :class:`Mish`, :class:`Glu`.
- Initializers: :class:`Constant`, :class:`Ones`, :class:`Zeros`, :class:`Uniform`, :class:`Normal`,
  :class:`KaimingUniform`, :class:`KaimingNormal`, :class:`XavierUniform`, :class:`XavierNormal`,
  :class:`Orthogonal`.
- Losses: :mod:`ember.nn.loss`.

>>> import ember
>>> from ember import nn
>>> dev = ember.backend("numpy").device()
>>> layer = nn.LinearConfig(784, 10).init(dev)
>>> layer(ember.Tensor.zeros([32, 784], dev)).shape
(32, 10)
"""

from __future__ import annotations

from . import loss
from ._activations import (
    Celu,
    CeluConfig,
    Elu,
    EluConfig,
    Gelu,
    GeluConfig,
    Glu,
    GluConfig,
    HardSigmoid,
    HardSigmoidConfig,
    HardSwish,
    LeakyRelu,
    LeakyReluConfig,
    Mish,
    PRelu,
    PReluConfig,
    Relu,
    Selu,
    Sigmoid,
    Silu,
    Softplus,
    SoftplusConfig,
    Softsign,
    Swish,
    Tanh,
)
from ._attention import MhaInput, MhaOutput, MultiHeadAttention, MultiHeadAttentionConfig
from ._attention_mask import GeneratePaddingMask, generate_autoregressive_mask, generate_padding_mask
from ._conv import Conv1d, Conv1dConfig, Conv2d, Conv2dConfig, Conv3d, Conv3dConfig
from ._conv_transpose import (
    ConvTranspose1d,
    ConvTranspose1dConfig,
    ConvTranspose2d,
    ConvTranspose2dConfig,
    ConvTranspose3d,
    ConvTranspose3dConfig,
)
from ._dropout import Dropout, DropoutConfig
from ._embedding import Embedding, EmbeddingConfig
from ._gru import Gru, GruConfig
from ._initializer import (
    Constant,
    Initializer,
    KaimingNormal,
    KaimingUniform,
    Normal,
    Ones,
    Orthogonal,
    Uniform,
    XavierNormal,
    XavierUniform,
    Zeros,
)
from ._interpolate import Interpolate1d, Interpolate1dConfig, Interpolate2d, Interpolate2dConfig, InterpolateMode
from ._linear import Linear, LinearConfig
from ._lstm import BiLstm, BiLstmConfig, Lstm, LstmConfig, LstmState
from ._lstm_stack import StackedLstm, StackedLstmConfig
from ._norm_batch import BatchNorm, BatchNormConfig
from ._norm_group import GroupNorm, GroupNormConfig
from ._norm_instance import InstanceNorm, InstanceNormConfig
from ._norm_layer import LayerNorm, LayerNormConfig
from ._norm_rms import RmsNorm, RmsNormConfig
from ._padding import PaddingConfig1d, PaddingConfig2d, PaddingConfig3d
from ._pool import (
    AdaptiveAvgPool1d,
    AdaptiveAvgPool1dConfig,
    AdaptiveAvgPool2d,
    AdaptiveAvgPool2dConfig,
    AvgPool1d,
    AvgPool1dConfig,
    AvgPool2d,
    AvgPool2dConfig,
    MaxPool1d,
    MaxPool1dConfig,
    MaxPool2d,
    MaxPool2dConfig,
)
from ._pos_encoding import PositionalEncoding, PositionalEncodingConfig, generate_sinusoids
from ._pwff import PositionWiseFeedForward, PositionWiseFeedForwardConfig
from ._rnn_gate import GateController
from ._rope import RotaryEncoding, RotaryEncodingConfig
from ._swiglu import SwiGlu, SwiGluConfig
from ._transformer_decoder import (
    TransformerDecoder,
    TransformerDecoderConfig,
    TransformerDecoderInput,
    TransformerDecoderLayer,
)
from ._transformer_encoder import (
    TransformerEncoder,
    TransformerEncoderConfig,
    TransformerEncoderInput,
    TransformerEncoderLayer,
)

__all__ = [
    "AdaptiveAvgPool1d", "AdaptiveAvgPool1dConfig", "AdaptiveAvgPool2d", "AdaptiveAvgPool2dConfig",
    "AvgPool1d", "AvgPool1dConfig", "AvgPool2d", "AvgPool2dConfig",
    "BatchNorm", "BatchNormConfig", "BiLstm", "BiLstmConfig",
    "Celu", "CeluConfig", "Constant",
    "Conv1d", "Conv1dConfig", "Conv2d", "Conv2dConfig", "Conv3d", "Conv3dConfig",
    "ConvTranspose1d", "ConvTranspose1dConfig", "ConvTranspose2d", "ConvTranspose2dConfig",
    "ConvTranspose3d", "ConvTranspose3dConfig",
    "Dropout", "DropoutConfig", "Elu", "EluConfig", "Embedding", "EmbeddingConfig",
    "GateController", "Gelu", "GeluConfig", "GeneratePaddingMask", "Glu", "GluConfig", "GroupNorm", "GroupNormConfig",
    "Gru", "GruConfig", "HardSigmoid", "HardSigmoidConfig", "HardSwish",
    "Initializer", "InstanceNorm", "InstanceNormConfig",
    "Interpolate1d", "Interpolate1dConfig", "Interpolate2d", "Interpolate2dConfig", "InterpolateMode",
    "KaimingNormal", "KaimingUniform", "LayerNorm", "LayerNormConfig", "LeakyRelu", "LeakyReluConfig",
    "Linear", "LinearConfig", "Lstm", "LstmConfig", "LstmState",
    "MaxPool1d", "MaxPool1dConfig", "MaxPool2d", "MaxPool2dConfig",
    "MhaInput", "MhaOutput", "Mish", "MultiHeadAttention", "MultiHeadAttentionConfig",
    "Normal", "Ones", "Orthogonal", "PRelu", "PReluConfig",
    "PaddingConfig1d", "PaddingConfig2d", "PaddingConfig3d",
    "PositionWiseFeedForward", "PositionWiseFeedForwardConfig", "PositionalEncoding", "PositionalEncodingConfig",
    "Relu", "RmsNorm", "RmsNormConfig", "RotaryEncoding", "RotaryEncodingConfig",
    "Selu", "Sigmoid", "Silu", "Softplus", "SoftplusConfig", "Softsign", "StackedLstm", "StackedLstmConfig",
    "SwiGlu", "SwiGluConfig", "Swish", "Tanh",
    "TransformerDecoder", "TransformerDecoderConfig", "TransformerDecoderInput", "TransformerDecoderLayer",
    "TransformerEncoder", "TransformerEncoderConfig", "TransformerEncoderInput", "TransformerEncoderLayer",
    "Uniform", "XavierNormal", "XavierUniform", "Zeros",
    "generate_autoregressive_mask", "generate_padding_mask", "generate_sinusoids", "loss",
]
