"""Checkpointing strategies (Burn's ``CheckpointingStrategy``, ``KeepLastNCheckpoints``,
``MetricCheckpointingStrategy``, ``ComposedCheckpointingStrategy``).

Each strategy says which epochs it wants kept (:meth:`keep`); the Learner saves the current epoch when a
strategy keeps it and deletes saved epochs no strategy keeps any more (Burn's ``CheckpointingAction``).
Burn's default (and Ember's): keep the last 2 checkpoints and the best by validation loss.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

from ._store import Aggregate, Direction, MetricStore, Split

__all__ = ["CheckpointingStrategy", "CheckpointingAction", "KeepLastNCheckpoints", "MetricCheckpointingStrategy",
           "ComposedCheckpointingStrategy", "default_checkpointing_strategy", "default_direction", "metric_name"]


@dataclass(frozen=True)
class CheckpointingAction:
    """``Save`` (the current epoch) or ``Delete(epoch)`` (Burn's enum)."""

    kind: str
    epoch: int

    @staticmethod
    def save(epoch: int) -> CheckpointingAction:
        return CheckpointingAction("save", epoch)

    @staticmethod
    def delete(epoch: int) -> CheckpointingAction:
        return CheckpointingAction("delete", epoch)


def metric_name(metric: Any) -> str:
    """A metric's name from a metric object or a string."""
    if isinstance(metric, str):
        return metric
    name = getattr(metric, "name", None)
    if callable(name):
        return str(name())
    raise TypeError(f"expected a metric or a metric name, got {metric!r}.")


def default_direction(metric: Any) -> Direction:
    """``HIGHEST`` when the metric (object, or built-in metric name) is better higher, else ``LOWEST``."""
    from ._summary import known_direction

    hib = known_direction(metric) if isinstance(metric, str) else getattr(metric, "higher_is_better", None)
    return Direction.HIGHEST if hib else Direction.LOWEST


class CheckpointingStrategy(ABC):
    """Decides which epochs' checkpoints to keep."""

    @abstractmethod
    def keep(self, epoch: int, store: MetricStore) -> set[int]:
        """Epochs (``<= epoch``) this strategy wants kept after epoch ``epoch`` ended."""

    def checkpointing(self, epoch: int, store: MetricStore, saved: set[int]) -> list[CheckpointingAction]:
        """Burn's ``checkpointing``: the actions after epoch ``epoch`` given the epochs already ``saved``."""
        keep = self.keep(epoch, store)
        actions = [CheckpointingAction.save(epoch)] if epoch in keep else []
        actions += [CheckpointingAction.delete(e) for e in sorted(saved) if e not in keep and e != epoch]
        return actions


class KeepLastNCheckpoints(CheckpointingStrategy):
    """Keep the ``n`` most recent epochs (Burn's ``KeepLastNCheckpoints::new(n)``).

    Raises:
        ValueError: ``n < 1``.
    """

    def __init__(self, n: int) -> None:
        if not isinstance(n, int) or n < 1:
            raise ValueError(f"KeepLastNCheckpoints: n must be an int >= 1, got {n!r}.")
        self.n = n

    def keep(self, epoch: int, store: MetricStore) -> set[int]:
        return set(range(max(1, epoch - self.n + 1), epoch + 1))

    def __repr__(self) -> str:
        return f"KeepLastNCheckpoints({self.n})"


class MetricCheckpointingStrategy(CheckpointingStrategy):
    """Keep the epoch with the best aggregated value of a metric (Burn's ``MetricCheckpointingStrategy::new(
    &metric, Aggregate::Mean, Direction::Lowest, Split::Valid)``).

    Args:
        metric: a metric object or its name (``"Loss"``).
        aggregate: as Burn (``Aggregate.MEAN``).
        direction: as Burn; ``None`` takes the metric's ``higher_is_better`` (for a name, the built-in
            metric's; lowest when unknown).
        split: as Burn (``Split.VALID``).
    """

    def __init__(self, metric: Any, aggregate: Aggregate = Aggregate.MEAN, direction: Direction | None = None,
                 split: Split = Split.VALID) -> None:
        self.name = metric_name(metric)
        if direction is None:
            direction = default_direction(metric)
        self.aggregate = aggregate
        self.direction = Direction(direction)
        self.split = Split(split)

    def keep(self, epoch: int, store: MetricStore) -> set[int]:
        best = store.find_epoch(self.name, self.direction, self.split, up_to=epoch)
        return {best if best is not None else epoch}

    def __repr__(self) -> str:
        return f"MetricCheckpointingStrategy({self.name!r}, {self.direction.value}, {self.split.value})"


class ComposedCheckpointingStrategy(CheckpointingStrategy):
    """Keeps what any of its strategies keeps (Burn's ``ComposedCheckpointingStrategy::builder().add(..)
    .build()``)."""

    def __init__(self, strategies: list[CheckpointingStrategy] | None = None) -> None:
        self.strategies = list(strategies or [])

    @staticmethod
    def builder() -> ComposedCheckpointingStrategy:
        return ComposedCheckpointingStrategy()

    def add(self, strategy: CheckpointingStrategy) -> ComposedCheckpointingStrategy:
        self.strategies.append(strategy)
        return self

    def build(self) -> ComposedCheckpointingStrategy:
        return self

    def keep(self, epoch: int, store: MetricStore) -> set[int]:
        out: set[int] = set()
        for s in self.strategies:
            out |= s.keep(epoch, store)
        return out

    def __repr__(self) -> str:
        return f"ComposedCheckpointingStrategy({self.strategies!r})"


def default_checkpointing_strategy() -> ComposedCheckpointingStrategy:
    """Burn's default: keep the last 2 epochs and the best by mean validation ``Loss``."""
    return ComposedCheckpointingStrategy([
        KeepLastNCheckpoints(2),
        MetricCheckpointingStrategy("Loss", Aggregate.MEAN, Direction.LOWEST, Split.VALID),
    ])
