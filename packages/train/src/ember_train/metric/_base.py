"""Metric interfaces (Burn's ``Metric``, ``Numeric``, ``MetricEntry``, ``NumericEntry``, ``MetricMetadata``)."""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar

__all__ = ["Metric", "Numeric", "MetricEntry", "NumericEntry", "MetricMetadata", "NumericMetricState",
           "DeviceMetric", "file_name"]


@dataclass(frozen=True)
class MetricMetadata:
    """What a metric knows about the step besides its input (Burn's ``MetricMetadata``).

    Attributes:
        items_processed / items_total: the data loader's progress in the epoch.
        epoch / epoch_total: 1-based epoch and the number of epochs.
        iteration: 1-based iteration inside the epoch.
        lr: the learning rate of the step (``None`` in validation).
    """

    items_processed: int
    items_total: int
    epoch: int
    epoch_total: int
    iteration: int
    lr: float | None = None


@dataclass(frozen=True)
class MetricEntry:
    """One update of a metric (Burn's ``MetricEntry``): its name, a display string and the line written
    to the metric's log file."""

    name: str
    formatted: str
    serialize: str


@dataclass(frozen=True)
class NumericEntry:
    """A numeric value, optionally aggregated over ``count`` items (Burn's ``NumericEntry``).

    Serialized as ``"value"`` or ``"value,count"``; an epoch's value is the ``count``-weighted mean.
    """

    value: float
    count: int | None = None

    def serialize(self) -> str:
        return repr(float(self.value)) if self.count is None else f"{float(self.value)!r},{self.count}"

    @staticmethod
    def deserialize(line: str) -> NumericEntry:
        """Parse a log line. Raises: ValueError on a line that is not ``v`` or ``v,n``."""
        parts = line.strip().split(",")
        if len(parts) == 1:
            return NumericEntry(float(parts[0]))
        if len(parts) == 2:
            return NumericEntry(float(parts[0]), int(parts[1]))
        raise ValueError(f"not a numeric metric entry: {line!r}")


def file_name(metric_name: str) -> str:
    """The log file stem of a metric: its name with spaces and path separators replaced by ``_``."""
    return metric_name.replace("/", "_").replace("\\", "_").replace(" ", "_")


class Metric(ABC):
    """A metric updated with each step's output (Burn's ``Metric`` trait).

    Subclasses set ``input_type`` (the class the step output is adapted to, see
    :func:`ember_train.adaptor`; ``object`` takes any output) and implement :meth:`name`,
    :meth:`update` and :meth:`clear`. A metric that is also :class:`Numeric` can be plotted, used for early
    stopping and checkpoint selection.
    """

    input_type: ClassVar[type] = object

    @abstractmethod
    def name(self) -> str:
        """The display name, also the log file stem (``Accuracy`` -> ``Accuracy.log``)."""

    @abstractmethod
    def update(self, item: Any, metadata: MetricMetadata) -> MetricEntry:
        """Update with one step's input; return the entry to log and display."""

    def clear(self) -> None:  # noqa: B027 - optional hook
        """Reset the running state at the end of an epoch."""

    def available(self) -> str | None:
        """``None`` when the metric can run here, else the reason it is skipped (e.g. no sensor)."""
        return None


class Numeric(ABC):
    """A metric with a numeric value (Burn's ``Numeric``).

    ``higher_is_better`` gives the direction used by the summary ("best"), early stopping and checkpoint
    strategies when none is given (``None``: unknown, the summary then shows the minimum).
    """

    higher_is_better: ClassVar[bool | None] = None

    @abstractmethod
    def value(self) -> float:
        """The current value (of the last update)."""

    def running_value(self) -> float:
        """The epoch's running (weighted mean) value; defaults to :meth:`value`."""
        return self.value()


class NumericMetricState:
    """Running state of a numeric metric (Burn's ``NumericMetricState``): last value and the
    count-weighted mean over the epoch."""

    __slots__ = ("sum", "count", "current")

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.sum = 0.0
        self.count = 0.0
        self.current = math.nan

    def update(self, value: float, count: float, name: str, unit: str = "", precision: int = 4) -> MetricEntry:
        self.current = value
        if count > 0 and math.isfinite(value):
            self.sum += value * count
            self.count += count
        running = self.running()
        formatted = f"epoch {running:.{precision}f}{unit} - batch {value:.{precision}f}{unit}"
        n = int(count) if float(count).is_integer() else None
        return MetricEntry(name, formatted, NumericEntry(value, n).serialize())

    def running(self) -> float:
        return self.sum / self.count if self.count else math.nan


class DeviceMetric(Metric, Numeric):
    """A numeric metric computed on the tensors' device and read back lazily.

    Subclasses implement :meth:`compute` returning ``(value, weight)`` where each is a Python number or a
    scalar tensor (shape ``[1]``). The Learner gathers the tensors of many steps and converts them to host
    numbers in one transfer per logging interval (so metrics never force a device sync per step); calling
    :meth:`update` directly converts at once.
    """

    unit: ClassVar[str] = ""
    precision: ClassVar[int] = 4
    #: how data-parallel ranks' ``(value, weight)`` of one step combine before :meth:`finalize`: ``"mean"`` (the
    #: default: the values are means over ``weight`` items, combined as a weighted mean, e.g. a mean loss and its
    #: batch size) or ``"sum"`` (both are summed, e.g. a count of correct items and a count of items)
    distributed_reduce: ClassVar[str] = "mean"

    def __init__(self) -> None:
        self._state = NumericMetricState()

    @abstractmethod
    def compute(self, item: Any, metadata: MetricMetadata) -> tuple[Any, Any]:
        """``(value, weight)`` for one step: numbers or ``[1]`` tensors on the item's device."""

    def finalize(self, value: float, weight: float) -> tuple[float, float]:
        """Host-side last step on the transferred ``(value, weight)`` (default: unchanged). Lets
        :meth:`compute` return raw counts and do the division here, saving device ops per step."""
        return value, weight

    def record(self, value: float, weight: float) -> MetricEntry:
        """Feed a host value already finalized (what :meth:`update` and the Learner's flush do)."""
        return self._state.update(value, weight, self.name(), self.unit, self.precision)

    def update(self, item: Any, metadata: MetricMetadata) -> MetricEntry:
        value, weight = self.finalize(*(_host(x) for x in self.compute(item, metadata)))
        return self.record(value, weight)

    def clear(self) -> None:
        self._state.reset()

    def value(self) -> float:
        return self._state.current

    def running_value(self) -> float:
        return self._state.running()


def _host(x: Any) -> float:
    if isinstance(x, (int, float)):
        return float(x)
    return float(x.to_numpy().reshape(-1)[0])
