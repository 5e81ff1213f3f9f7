"""Step outputs (Burn's ``TrainOutput``, ``ClassificationOutput``, ``RegressionOutput``,
``MultiLabelClassificationOutput``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from ember import Tensor
from ember.autodiff import Gradients

__all__ = ["TrainOutput", "ClassificationOutput", "RegressionOutput", "MultiLabelClassificationOutput"]

T = TypeVar("T")


class TrainOutput(Generic[T]):
    """What ``model.train_step(batch)`` returns (Burn's ``TrainOutput::new(model, grads, item)``).

    Args:
        model: the module the gradients belong to (used to map them to parameters).
        grads: the ``Gradients`` of ``loss.backward()`` or an ``ember.optim.GradientsParams``; the first
            is converted with ``GradientsParams.from_grads(grads, model)`` as Burn does.
        item: the step's output given to the metrics (e.g. a :class:`ClassificationOutput`).
    """

    __slots__ = ("grads", "item")

    def __init__(self, model: Any, grads: Any, item: T) -> None:
        if isinstance(grads, Gradients):
            from ember.optim import GradientsParams

            grads = GradientsParams.from_grads(grads, model)
        self.grads = grads
        self.item = item

    def __repr__(self) -> str:
        return f"TrainOutput(item={type(self.item).__name__})"


@dataclass(frozen=True)
class ClassificationOutput:
    """Output of a classification step (Burn's ``ClassificationOutput``).

    Attributes:
        loss: the mean loss, a Float tensor of shape ``[1]``.
        output: the logits (or scores), Float ``[batch, num_classes]``.
        targets: the class indices, Int ``[batch]``.
    """

    loss: Tensor
    output: Tensor
    targets: Tensor

    def batch_size(self) -> int:
        return int(self.targets.shape[0])


@dataclass(frozen=True)
class RegressionOutput:
    """Output of a regression step (Burn's ``RegressionOutput``).

    Attributes:
        loss: the mean loss, Float ``[1]``.
        output: the predictions, Float ``[batch, num_targets]``.
        targets: the targets, Float ``[batch, num_targets]``.
    """

    loss: Tensor
    output: Tensor
    targets: Tensor

    def batch_size(self) -> int:
        return int(self.targets.shape[0])


@dataclass(frozen=True)
class MultiLabelClassificationOutput:
    """Output of a multi-label classification step (Burn's ``MultiLabelClassificationOutput``).

    Attributes:
        loss: the mean loss, Float ``[1]``.
        output: the logits, Float ``[batch, num_classes]``.
        targets: the labels, Int ``[batch, num_classes]`` of 0/1.
    """

    loss: Tensor
    output: Tensor
    targets: Tensor

    def batch_size(self) -> int:
        return int(self.targets.shape[0])
