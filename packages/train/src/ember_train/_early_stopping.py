"""Early stopping (Burn's ``EarlyStoppingStrategy``, ``MetricEarlyStoppingStrategy``, ``StoppingCondition``)."""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

from ._store import Aggregate, Direction, MetricStore, Split
from ._strategy import default_direction, metric_name

__all__ = ["EarlyStoppingStrategy", "MetricEarlyStoppingStrategy", "StoppingCondition"]


@dataclass(frozen=True)
class StoppingCondition:
    """Burn's ``StoppingCondition::NoImprovementSince { n_epochs }``: stop when the best value is
    ``n_epochs`` or more epochs old. ``min_delta`` is the smallest change counted as an improvement
    (PyTorch Lightning's ``EarlyStopping.min_delta``; Burn has none, default 0)."""

    n_epochs: int
    min_delta: float = 0.0

    @staticmethod
    def no_improvement_since(n_epochs: int, min_delta: float = 0.0) -> StoppingCondition:
        return StoppingCondition(n_epochs, min_delta)


class EarlyStoppingStrategy(ABC):
    """Decides after each epoch whether training stops."""

    @abstractmethod
    def should_stop(self, epoch: int, store: MetricStore) -> bool:
        """Whether to stop after epoch ``epoch``."""

    def reason(self) -> str:
        return "early stopping"


class MetricEarlyStoppingStrategy(EarlyStoppingStrategy):
    """Stop when a metric has not improved for ``condition.n_epochs`` epochs (Burn's
    ``MetricEarlyStoppingStrategy::new(&LossMetric::new(), Aggregate::Mean, Direction::Lowest, Split::Valid,
    StoppingCondition::NoImprovementSince { n_epochs: 5 })``).

    Args:
        metric: a metric or its name. aggregate, direction, split: as Burn (``direction=None``: from the
            metric's ``higher_is_better``, lowest when unknown).
        condition: a :class:`StoppingCondition` or an int ``n_epochs``.
        warmup_epochs: never stop during the first ``warmup_epochs`` epochs (improvements still count).

    Raises:
        ValueError: ``n_epochs < 1`` or ``warmup_epochs < 0``.
    """

    def __init__(self, metric: Any, aggregate: Aggregate = Aggregate.MEAN, direction: Direction | None = None,
                 split: Split = Split.VALID, condition: StoppingCondition | int = 1, warmup_epochs: int = 0) -> None:
        if isinstance(condition, int):
            condition = StoppingCondition(condition)
        if condition.n_epochs < 1:
            raise ValueError(f"MetricEarlyStoppingStrategy: n_epochs must be >= 1, got {condition.n_epochs}.")
        if warmup_epochs < 0:
            raise ValueError(f"MetricEarlyStoppingStrategy: warmup_epochs must be >= 0, got {warmup_epochs}.")
        self.name = metric_name(metric)
        if direction is None:
            direction = default_direction(metric)
        self.aggregate = aggregate
        self.direction = Direction(direction)
        self.split = Split(split)
        self.condition = condition
        self.warmup_epochs = warmup_epochs
        self._why = ""

    def should_stop(self, epoch: int, store: MetricStore) -> bool:
        best_value = math.nan
        best_epoch = None
        sign = -1.0 if self.direction is Direction.HIGHEST else 1.0
        for e, v in store.history(self.name, self.split):
            if e > epoch:
                break
            if best_epoch is None or sign * v < sign * best_value - self.condition.min_delta:
                best_value, best_epoch = v, e
        if best_epoch is None or epoch <= self.warmup_epochs:
            return False
        stale = epoch - best_epoch
        if stale >= self.condition.n_epochs:
            self._why = (f"{self.split.value} {self.name} has not improved for {stale} epoch(s) "
                         f"(best {best_value:.6g} at epoch {best_epoch})")
            return True
        return False

    def reason(self) -> str:
        return self._why or "early stopping"
