"""``PrecisionMetric``, ``RecallMetric``, ``FBetaScoreMetric`` (Burn's classification metrics).

Predictions are decided per class from ``ConfusionStatsInput.predictions`` ``[batch, num_classes]``:
``top_k`` marks the ``k`` highest scores of each row (multi-class, default ``k = 1``), ``threshold`` marks
scores ``>= threshold`` (binary / multi-label; give probabilities). Targets are Bool ``[batch, num_classes]``.
Per class: ``TP``, ``FP = predicted - TP``, ``FN = actual - TP``. ``Micro`` sums the counts over classes
first; ``Macro`` averages the per-class scores over the classes where the score is defined (its
denominator is non-zero), as scikit-learn with ``zero_division`` left out. Values are fractions in [0, 1].
"""

from __future__ import annotations

from enum import Enum
from typing import Any, ClassVar

from ._base import DeviceMetric, MetricMetadata
from ._inputs import ConfusionStatsInput

__all__ = ["ClassReduction", "PrecisionMetric", "RecallMetric", "FBetaScoreMetric"]


class ClassReduction(Enum):
    """How per-class scores combine (Burn's ``ClassReduction``)."""

    MICRO = "Micro"
    MACRO = "Macro"


class _ConfusionMetric(DeviceMetric):
    input_type: ClassVar[type] = ConfusionStatsInput
    higher_is_better: ClassVar[bool | None] = True
    base_name: ClassVar[str] = ""

    def __init__(self, *, top_k: int | None = None, threshold: float | None = None,
                 class_reduction: ClassReduction = ClassReduction.MACRO) -> None:
        super().__init__()
        if top_k is not None and threshold is not None:
            raise ValueError(f"{type(self).__name__}: give top_k or threshold, not both.")
        if top_k is None and threshold is None:
            top_k = 1
        if top_k is not None and (not isinstance(top_k, int) or top_k < 1):
            raise ValueError(f"{type(self).__name__}: top_k must be an int >= 1, got {top_k!r}.")
        self.top_k = top_k
        self.threshold = threshold
        self.class_reduction = ClassReduction(class_reduction)

    @classmethod
    def binary(cls, threshold: float = 0.5) -> Any:
        """Binary classification: the positive class when its score is ``>= threshold`` (Burn's ``binary``)."""
        return cls(threshold=threshold, class_reduction=ClassReduction.MICRO)

    @classmethod
    def multiclass(cls, top_k: int = 1, class_reduction: ClassReduction = ClassReduction.MACRO) -> Any:
        """Multi-class: the ``top_k`` best classes of each item are predicted (Burn's ``multiclass``)."""
        return cls(top_k=top_k, class_reduction=class_reduction)

    @classmethod
    def multilabel(cls, threshold: float = 0.5, class_reduction: ClassReduction = ClassReduction.MACRO) -> Any:
        """Multi-label: each class whose score is ``>= threshold`` (Burn's ``multilabel``)."""
        return cls(threshold=threshold, class_reduction=class_reduction)

    def name(self) -> str:
        rule = f"TopK({self.top_k})" if self.top_k is not None else f"Threshold({self.threshold})"
        return f"{self.base_name} @ {rule} [{self.class_reduction.value}]"

    def _counts(self, item: ConfusionStatsInput) -> tuple[Any, Any, Any]:
        """Per-class ``(tp, predicted, actual)`` Float ``[1, num_classes]`` (Micro: ``[1, 1]``)."""
        scores = item.predictions
        if scores.rank == 1:
            scores = scores.reshape([-1, 1])
        targets = item.targets.reshape(list(scores.shape)).bool()
        if self.top_k is not None:
            k = min(self.top_k, int(scores.shape[1]))
            idx = scores.argtopk(k, 1)                               # [batch, k]
            pred = scores.zeros_like().scatter(1, idx, idx.ones_like().float()).greater_elem(0.5)
        else:
            pred = scores.greater_equal_elem(float(self.threshold))  # type: ignore[arg-type]
        tp = pred.bool_and(targets).float().sum_dim(0)
        predicted = pred.float().sum_dim(0)
        actual = targets.float().sum_dim(0)
        if self.class_reduction is ClassReduction.MICRO:
            tp, predicted, actual = tp.sum(), predicted.sum(), actual.sum()
        return tp, predicted, actual

    def _score(self, tp: Any, predicted: Any, actual: Any) -> tuple[Any, Any]:
        raise NotImplementedError

    def compute(self, item: ConfusionStatsInput, metadata: MetricMetadata) -> tuple[Any, Any]:
        num, den = self._score(*self._counts(item))
        defined = den.greater_elem(0.0).float()
        per_class = num.div(den.clamp_min(1e-12)).mul(defined)
        n_defined = defined.sum()
        value = per_class.sum().div(n_defined.clamp_min(1.0))
        return value.reshape([1]), int(item.predictions.shape[0])


class PrecisionMetric(_ConfusionMetric):
    """``TP / (TP + FP)`` (Burn's ``PrecisionMetric``)."""

    base_name: ClassVar[str] = "Precision"

    def _score(self, tp: Any, predicted: Any, actual: Any) -> tuple[Any, Any]:
        return tp, predicted


class RecallMetric(_ConfusionMetric):
    """``TP / (TP + FN)`` (Burn's ``RecallMetric``)."""

    base_name: ClassVar[str] = "Recall"

    def _score(self, tp: Any, predicted: Any, actual: Any) -> tuple[Any, Any]:
        return tp, actual


class FBetaScoreMetric(_ConfusionMetric):
    """``(1 + β²) TP / ((1 + β²) TP + β² FN + FP)`` (Burn's ``FBetaScoreMetric``; β = 1 is F1).

    Args:
        beta: weight of recall against precision, ``> 0``.
    """

    base_name: ClassVar[str] = "FBetaScore"

    def __init__(self, beta: float = 1.0, **kwargs: Any) -> None:
        if not beta > 0:
            raise ValueError(f"FBetaScoreMetric: beta must be > 0, got {beta!r}.")
        super().__init__(**kwargs)
        self.beta = float(beta)

    @classmethod
    def binary(cls, threshold: float = 0.5, beta: float = 1.0) -> Any:  # type: ignore[override]
        return cls(beta, threshold=threshold, class_reduction=ClassReduction.MICRO)

    @classmethod
    def multiclass(cls, top_k: int = 1, class_reduction: ClassReduction = ClassReduction.MACRO,  # type: ignore[override]
                   beta: float = 1.0) -> Any:
        return cls(beta, top_k=top_k, class_reduction=class_reduction)

    @classmethod
    def multilabel(cls, threshold: float = 0.5, class_reduction: ClassReduction = ClassReduction.MACRO,  # type: ignore[override]
                   beta: float = 1.0) -> Any:
        return cls(beta, threshold=threshold, class_reduction=class_reduction)

    def name(self) -> str:
        return super().name().replace("FBetaScore", f"FBetaScore ({self.beta:g})", 1)

    def _score(self, tp: Any, predicted: Any, actual: Any) -> tuple[Any, Any]:
        b2 = self.beta * self.beta
        num = tp.mul_scalar(1.0 + b2)
        # (1+b²)TP + b²FN + FP = (1+b²)TP + b²(actual-TP) + (predicted-TP) = b²·actual + predicted
        den = actual.mul_scalar(b2).add(predicted)
        return num, den
