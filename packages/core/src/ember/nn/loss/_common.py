"""Shared checks of the losses."""

from __future__ import annotations

from ..._errors import ShapeError
from ...tensor import Tensor
from .._checks import check_float

__all__ = ["same_shape"]


def same_shape(loss: str, predictions: Tensor, targets: Tensor, names: tuple[str, str] = ("predictions", "targets"),
               ) -> None:
    """Both Float with one shape, else KindError / ShapeError naming the loss."""
    check_float(loss, predictions, names[0])
    check_float(loss, targets, names[1])
    if predictions.shape != targets.shape:
        raise ShapeError(f"{loss}: {names[0]} {list(predictions.shape)} and {names[1]} {list(targets.shape)} must have "
                         "the same shape.")
