"""Metric input types (Burn's ``AccuracyInput``, ``LossInput``, ...). Step outputs are converted to these
by adaptors (see :mod:`ember_train._adaptor`)."""

from __future__ import annotations

from dataclasses import dataclass

from ember import Tensor

__all__ = ["AccuracyInput", "TopKAccuracyInput", "LossInput", "ConfusionStatsInput", "AurocInput",
           "HammingScoreInput"]


@dataclass(frozen=True)
class AccuracyInput:
    """``outputs`` Float ``[batch, num_classes]`` (logits or probabilities), ``targets`` Int ``[batch]``."""

    outputs: Tensor
    targets: Tensor


@dataclass(frozen=True)
class TopKAccuracyInput:
    """``outputs`` Float ``[batch, num_classes]``, ``targets`` Int ``[batch]``."""

    outputs: Tensor
    targets: Tensor


@dataclass(frozen=True)
class LossInput:
    """``tensor``: the loss, Float ``[1]``; ``batch_size`` weights it in the epoch mean (Burn weights each
    iteration by 1; ``None`` does that too)."""

    tensor: Tensor
    batch_size: int | None = None


@dataclass(frozen=True)
class ConfusionStatsInput:
    """``predictions`` Float ``[batch, num_classes]`` (scores; with a threshold rule, probabilities),
    ``targets`` Bool ``[batch, num_classes]`` (one-hot for multi-class). Burn's ``ConfusionStatsInput``."""

    predictions: Tensor
    targets: Tensor


@dataclass(frozen=True)
class AurocInput:
    """``predictions`` Float ``[batch, 2]`` (or ``[batch]``) positive-class scores, ``targets`` Int ``[batch]``
    of 0/1 (Burn's ``AurocInput``)."""

    predictions: Tensor
    targets: Tensor


@dataclass(frozen=True)
class HammingScoreInput:
    """``outputs`` Float ``[batch, num_classes]`` (logits), ``targets`` Int ``[batch, num_classes]`` of 0/1."""

    outputs: Tensor
    targets: Tensor
