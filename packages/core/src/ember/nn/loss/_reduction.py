"""``Reduction``: how a loss reduces its element-wise values (Burn's ``nn::loss::Reduction``)."""

from __future__ import annotations

import enum

from ...tensor import Tensor

__all__ = ["Reduction", "reduce"]


class Reduction(str, enum.Enum):
    """``MEAN`` (the mean over every element), ``SUM``, ``AUTO`` (the loss's default: the mean, as
    Burn), ``BATCH_MEAN`` (the sum divided by the batch size, dim 0: the mathematically correct
    KL divergence, PyTorch's ``"batchmean"``). The result has shape ``[1]``."""

    MEAN = "mean"
    SUM = "sum"
    AUTO = "auto"
    BATCH_MEAN = "batchmean"


def reduce(loss: Tensor, reduction: Reduction | str) -> Tensor:
    """``loss`` (any shape) reduced to ``[1]``.

    Raises:
        ValueError: an unknown reduction.
    """
    try:
        r = Reduction(reduction)
    except ValueError:
        raise ValueError(f"unknown reduction {reduction!r}; expected one of {[m.value for m in Reduction]}.") from None
    if r is Reduction.SUM:
        return loss.sum()
    if r is Reduction.BATCH_MEAN:
        return loss.sum() * (1.0 / max(loss.shape[0], 1) if loss.rank else 1.0)
    return loss.mean()
