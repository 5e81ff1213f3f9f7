"""Metrics (Burn's ``burn_train::metric``).

- Interfaces: :class:`Metric` (``name``, ``update(input, metadata) -> MetricEntry``, ``clear``,
  ``input_type``) and :class:`Numeric` (``value``, ``higher_is_better``); :class:`DeviceMetric` computes
  on the device and is read back lazily by the Learner.
- Built-ins: :class:`AccuracyMetric` (pad token), :class:`TopKAccuracyMetric`, :class:`LossMetric`,
  :class:`LearningRateMetric`, :class:`IterationSpeedMetric`, :class:`PrecisionMetric`,
  :class:`RecallMetric`, :class:`FBetaScoreMetric`, :class:`AurocMetric`, :class:`HammingScore`,
  :class:`CpuUse`, :class:`CpuMemory`, :class:`CpuTemperature`.
- Inputs: :class:`AccuracyInput`, :class:`TopKAccuracyInput`, :class:`LossInput`,
  :class:`ConfusionStatsInput`, :class:`AurocInput`, :class:`HammingScoreInput`.
"""

from __future__ import annotations

from . import _builtin_adaptors  # noqa: F401 - registers the built-in adaptors
from ._accuracy import AccuracyMetric, TopKAccuracyMetric
from ._auroc import AurocMetric
from ._base import (
    DeviceMetric,
    Metric,
    MetricEntry,
    MetricMetadata,
    Numeric,
    NumericEntry,
    NumericMetricState,
)
from ._confusion import ClassReduction, FBetaScoreMetric, PrecisionMetric, RecallMetric
from ._hamming import HammingScore
from ._host_metrics import HostNumericMetric, IterationSpeedMetric, LearningRateMetric
from ._inputs import (
    AccuracyInput,
    AurocInput,
    ConfusionStatsInput,
    HammingScoreInput,
    LossInput,
    TopKAccuracyInput,
)
from ._loss import LossMetric
from ._system import CpuMemory, CpuTemperature, CpuUse

__all__ = [
    "AccuracyInput",
    "AccuracyMetric",
    "AurocInput",
    "AurocMetric",
    "ClassReduction",
    "ConfusionStatsInput",
    "CpuMemory",
    "CpuTemperature",
    "CpuUse",
    "DeviceMetric",
    "FBetaScoreMetric",
    "HammingScore",
    "HammingScoreInput",
    "HostNumericMetric",
    "IterationSpeedMetric",
    "LearningRateMetric",
    "LossInput",
    "LossMetric",
    "Metric",
    "MetricEntry",
    "MetricMetadata",
    "Numeric",
    "NumericEntry",
    "NumericMetricState",
    "PrecisionMetric",
    "RecallMetric",
    "TopKAccuracyInput",
    "TopKAccuracyMetric",
]
