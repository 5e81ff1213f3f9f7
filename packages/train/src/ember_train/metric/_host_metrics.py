"""Host-side metrics: ``LearningRateMetric`` and ``IterationSpeedMetric`` (Burn's)."""

from __future__ import annotations

import math
import time
from typing import Any, ClassVar

from ._base import Metric, MetricEntry, MetricMetadata, Numeric, NumericEntry, NumericMetricState

__all__ = ["LearningRateMetric", "IterationSpeedMetric", "HostNumericMetric"]


class HostNumericMetric(Metric, Numeric):
    """A numeric metric computed from host numbers (base of the system metrics); subclasses implement
    :meth:`measure` returning a float (NaN when unknown)."""

    unit: ClassVar[str] = ""
    precision: ClassVar[int] = 2

    def __init__(self) -> None:
        self._state = NumericMetricState()

    def measure(self, metadata: MetricMetadata) -> float:
        raise NotImplementedError

    def update(self, item: Any, metadata: MetricMetadata) -> MetricEntry:
        v = float(self.measure(metadata))
        self._state.current = v
        if math.isfinite(v):
            self._state.sum += v
            self._state.count += 1
        return MetricEntry(self.name(), f"{v:.{self.precision}f}{self.unit}", NumericEntry(v).serialize())

    def clear(self) -> None:
        self._state.reset()

    def value(self) -> float:
        return self._state.current

    def running_value(self) -> float:
        return self._state.running()


class LearningRateMetric(HostNumericMetric):
    """The learning rate of each training step (Burn's ``LearningRateMetric``); NaN in validation."""

    precision: ClassVar[int] = 3

    def name(self) -> str:
        return "Learning Rate"

    def measure(self, metadata: MetricMetadata) -> float:
        return math.nan if metadata.lr is None else float(metadata.lr)

    def update(self, item: Any, metadata: MetricMetadata) -> MetricEntry:
        e = super().update(item, metadata)
        return MetricEntry(e.name, f"{self.value():.3e}", e.serialize)


class IterationSpeedMetric(HostNumericMetric):
    """Iterations per second since the epoch started (Burn's ``IterationSpeedMetric``)."""

    higher_is_better: ClassVar[bool | None] = True
    unit: ClassVar[str] = " iter/s"

    def __init__(self) -> None:
        super().__init__()
        self._start: float | None = None

    def name(self) -> str:
        return "Iteration Speed"

    def measure(self, metadata: MetricMetadata) -> float:
        now = time.perf_counter()
        if self._start is None or metadata.iteration <= 1:
            self._start = now
            return math.nan
        return (metadata.iteration - 1) / max(now - self._start, 1e-9)

    def clear(self) -> None:
        super().clear()
        self._start = None
