"""Losses (Burn's ``burn::nn::loss``; PyTorch's formulas where Burn has none).

Each loss is a :class:`~ember.module.Module` (configs where there are options); ``forward`` returns a
``[1]`` tensor, differentiable under ``Autodiff``. ``Reduction`` picks mean / sum where a loss offers it.

>>> import ember
>>> from ember.nn.loss import CrossEntropyLossConfig
>>> dev = ember.backend("numpy").device()
>>> loss = CrossEntropyLossConfig().init(dev)
>>> logits = ember.Tensor.from_floats([[2.0, 0.0], [0.0, 2.0]], dev)
>>> round(loss(logits, ember.Tensor.from_ints([0, 1], dev)).into_scalar(), 4)
0.1269
"""

from __future__ import annotations

from ._binary_cross_entropy import BinaryCrossEntropyLoss, BinaryCrossEntropyLossConfig
from ._cosine_embedding import CosineEmbeddingLoss, CosineEmbeddingLossConfig
from ._cross_entropy import CrossEntropyLoss, CrossEntropyLossConfig
from ._ctc import CTCLoss, CTCLossConfig
from ._huber import HuberLoss, HuberLossConfig
from ._kl_div import KLDivLoss, KLDivLossConfig
from ._mse import MseLoss
from ._poisson import PoissonNllLoss, PoissonNllLossConfig
from ._reduction import Reduction
from ._smooth_l1 import SmoothL1Loss, SmoothL1LossConfig

__all__ = [
    "BinaryCrossEntropyLoss",
    "BinaryCrossEntropyLossConfig",
    "CTCLoss",
    "CTCLossConfig",
    "CosineEmbeddingLoss",
    "CosineEmbeddingLossConfig",
    "CrossEntropyLoss",
    "CrossEntropyLossConfig",
    "HuberLoss",
    "HuberLossConfig",
    "KLDivLoss",
    "KLDivLossConfig",
    "MseLoss",
    "PoissonNllLoss",
    "PoissonNllLossConfig",
    "Reduction",
    "SmoothL1Loss",
    "SmoothL1LossConfig",
]
