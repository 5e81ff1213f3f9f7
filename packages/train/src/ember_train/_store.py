"""Epoch aggregates of the numeric metrics (Burn's event store: ``Aggregate``, ``Direction``, ``Split``)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from enum import Enum

from .metric._base import NumericEntry

__all__ = ["Aggregate", "Direction", "Split", "MetricStore", "aggregate_entries"]


class Aggregate(Enum):
    """How an epoch's iterations combine (Burn's ``Aggregate``): the count-weighted mean."""

    MEAN = "mean"


class Direction(Enum):
    """Which way is better (Burn's ``Direction``)."""

    LOWEST = "lowest"
    HIGHEST = "highest"


class Split(Enum):
    """Training or validation (Burn's ``Split``)."""

    TRAIN = "train"
    VALID = "valid"


def aggregate_entries(entries: Iterable[NumericEntry]) -> float:
    """The count-weighted mean of finite entries (entries without a count weigh 1); NaN when none."""
    s = 0.0
    n = 0.0
    for e in entries:
        if not math.isfinite(e.value):
            continue
        w = 1.0 if e.count is None else float(e.count)
        s += e.value * w
        n += w
    return s / n if n else math.nan


class MetricStore:
    """Per split, metric and epoch: the weighted sum and count of the numeric entries logged.

    The Learner fills it as it logs; on resume it is refilled from the metric loggers' files.
    """

    def __init__(self) -> None:
        self._data: dict[tuple[Split, str], dict[int, list[float]]] = {}

    def add(self, split: Split, name: str, epoch: int, entry: NumericEntry) -> None:
        if not math.isfinite(entry.value):
            return
        w = 1.0 if entry.count is None else float(entry.count)
        acc = self._data.setdefault((split, name), {}).setdefault(epoch, [0.0, 0.0])
        acc[0] += entry.value * w
        acc[1] += w

    def reset_epoch(self, split: Split, epoch: int) -> None:
        for (s, _), epochs in self._data.items():
            if s is split:
                epochs.pop(epoch, None)

    def load(self, split: Split, name: str, epoch: int, entries: Iterable[NumericEntry]) -> None:
        self._data.setdefault((split, name), {}).pop(epoch, None)
        for e in entries:
            self.add(split, name, epoch, e)

    def names(self, split: Split) -> list[str]:
        return [n for (s, n) in self._data if s is split]

    def epochs(self, split: Split, name: str) -> list[int]:
        return sorted(self._data.get((split, name), {}))

    def aggregate(self, name: str, epoch: int, split: Split, aggregate: Aggregate = Aggregate.MEAN) -> float | None:
        """The epoch's value, ``None`` when nothing was logged (Burn's ``EventStoreClient::aggregate``)."""
        acc = self._data.get((split, name), {}).get(epoch)
        if not acc or acc[1] == 0:
            return None
        return acc[0] / acc[1]

    def history(self, name: str, split: Split) -> list[tuple[int, float]]:
        """``(epoch, value)`` for every logged epoch, in order."""
        out = []
        for e in self.epochs(split, name):
            v = self.aggregate(name, e, split)
            if v is not None:
                out.append((e, v))
        return out

    def find_epoch(self, name: str, direction: Direction, split: Split, up_to: int | None = None) -> int | None:
        """The epoch with the best value (the earliest on ties; Burn's ``find_epoch``), ``None`` if none."""
        best: tuple[float, int] | None = None
        for e, v in self.history(name, split):
            if up_to is not None and e > up_to:
                continue
            key = -v if direction is Direction.HIGHEST else v
            if best is None or key < best[0]:
                best = (key, e)
        return None if best is None else best[1]
