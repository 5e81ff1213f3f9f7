"""Combination of several schedulers stepped together, Burn's ``ComposedLrScheduler``."""

from __future__ import annotations

import enum
from typing import Any

from ..._errors import RecordError
from ...config import config
from ._any import LrSchedulerConfigs, build_child
from ._base import LrScheduler

__all__ = ["ComposedLrSchedulerConfig", "ComposedLrScheduler", "SchedulerReduction"]


class SchedulerReduction(str, enum.Enum):
    """How :class:`ComposedLrSchedulerConfig` combines its schedulers' rates (Burn's ``SchedulerReduction``)."""

    Avg = "avg"
    Sum = "sum"
    Prod = "prod"


@config
class ComposedLrSchedulerConfig:
    """Several schedulers stepped together; each step returns the reduction (``Prod`` by default, as Burn) of
    their rates. E.g. a cosine shape times a warm-up ramp::

        ComposedLrSchedulerConfig().linear(LinearLrSchedulerConfig(0.01, 1.0, 100)).cosine(
            CosineAnnealingLrSchedulerConfig(1e-3, 1000)).init()

    Args:
        schedulers: the child configs (Linear, CosineAnnealing, Exponential, Step, Noam, ConstantLr or a float).
        reduction: :class:`SchedulerReduction` ``Avg``, ``Sum`` or ``Prod``.
    """

    schedulers: list[LrSchedulerConfigs] = ()  # type: ignore[assignment]
    reduction: SchedulerReduction = SchedulerReduction.Prod

    def _add(self, cfg: Any) -> ComposedLrSchedulerConfig:
        return self.with_schedulers([*self.schedulers, cfg])  # type: ignore[attr-defined, no-any-return]

    def linear(self, cfg: Any) -> ComposedLrSchedulerConfig:
        """A copy with a :class:`LinearLrSchedulerConfig` appended (Burn's builder)."""
        return self._add(cfg)

    def cosine(self, cfg: Any) -> ComposedLrSchedulerConfig:
        """A copy with a :class:`CosineAnnealingLrSchedulerConfig` appended."""
        return self._add(cfg)

    def exponential(self, cfg: Any) -> ComposedLrSchedulerConfig:
        """A copy with an :class:`ExponentialLrSchedulerConfig` appended."""
        return self._add(cfg)

    def noam(self, cfg: Any) -> ComposedLrSchedulerConfig:
        """A copy with a :class:`NoamLrSchedulerConfig` appended."""
        return self._add(cfg)

    def push(self, cfg: Any) -> ComposedLrSchedulerConfig:
        """A copy with any child appended: a scheduler config (Step, ConstantLr ...) or a float (constant).

        (There is deliberately no ``step(cfg)`` builder: ``step`` is the scheduler method.)
        """
        return self._add(float(cfg) if isinstance(cfg, int) and not isinstance(cfg, bool) else cfg)

    def init(self) -> ComposedLrScheduler:
        """The scheduler.

        Raises:
            ConfigError: a child config is invalid.
        """
        return ComposedLrScheduler([build_child(c) for c in self.schedulers], SchedulerReduction(self.reduction))


class ComposedLrScheduler(LrScheduler):
    """See :class:`ComposedLrSchedulerConfig`."""

    def __init__(self, schedulers: list[LrScheduler], reduction: SchedulerReduction) -> None:
        self.schedulers = schedulers
        self.reduction = reduction

    def step(self) -> float:
        lrs = [s.step() for s in self.schedulers]
        if self.reduction is SchedulerReduction.Prod:
            out = 1.0
            for lr in lrs:
                out *= lr
            return out
        if self.reduction is SchedulerReduction.Sum:
            return float(sum(lrs))
        n = float(len(lrs))
        out = 0.0
        for lr in lrs:
            out += lr / n
        return out

    def to_record(self) -> dict[str, Any]:
        return {"schedulers": [s.to_record() for s in self.schedulers]}

    def load_record(self, record: Any) -> ComposedLrScheduler:
        children = record.get("schedulers") if isinstance(record, dict) else None
        if not isinstance(children, list) or len(children) != len(self.schedulers):
            n = len(children) if isinstance(children, list) else "no"
            raise RecordError(
                f"ComposedLrScheduler.load_record: expected {{'schedulers': [...]}} with {len(self.schedulers)} "
                f"child records, got {n}."
            )
        for s, r in zip(self.schedulers, children):
            s.load_record(r)
        return self
