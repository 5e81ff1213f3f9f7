"""Schedulers run one after another (warm-up then decay), Burn's ``SequentialLrScheduler``."""

from __future__ import annotations

import bisect
from typing import Any

from ..._errors import ConfigError, RecordError
from ...config import config
from ._any import LrSchedulerConfigs, build_child
from ._base import LrScheduler

__all__ = ["SequentialLrSchedulerConfig", "SequentialLrScheduler"]


@config
class SequentialLrSchedulerConfig:
    """Schedulers used one after another: the ``k``-th takes over after ``milestones[k-1]`` steps and starts at
    its own first step (Burn's ``SequentialLrScheduler``; PyTorch's ``SequentialLR``). A linear warm-up of 100
    steps followed by a cosine decay of 900::

        SequentialLrSchedulerConfig(
            [LinearLrSchedulerConfig(1e-5, 1e-2, 100), CosineAnnealingLrSchedulerConfig(1e-2, 900)],
            milestones=[100],
        ).init()

    Args:
        schedulers: ``N >= 1`` child configs (Linear, CosineAnnealing, Exponential, Step, Noam, ConstantLr or a
            float).
        milestones: ``N - 1`` step counts, > 0 and strictly increasing.
    """

    schedulers: list[LrSchedulerConfigs]
    milestones: list[int]

    def init(self) -> SequentialLrScheduler:
        """The scheduler.

        Raises:
            ConfigError: no scheduler, ``len(milestones) != len(schedulers) - 1``, milestones not > 0 and
                strictly increasing, or an invalid child config.
        """
        if not self.schedulers:
            raise ConfigError("SequentialLrSchedulerConfig.schedulers: at least one scheduler is required.")
        if len(self.milestones) + 1 != len(self.schedulers):
            raise ConfigError(
                f"SequentialLrSchedulerConfig.milestones: expected {len(self.schedulers) - 1} milestones (one less "
                f"than the {len(self.schedulers)} schedulers), got {len(self.milestones)}."
            )
        ms = list(self.milestones)
        if any(m <= 0 for m in ms) or any(b <= a for a, b in zip(ms, ms[1:])):
            raise ConfigError(
                f"SequentialLrSchedulerConfig.milestones: expected values > 0 and strictly increasing, got {ms}."
            )
        return SequentialLrScheduler([build_child(c) for c in self.schedulers], ms)


class SequentialLrScheduler(LrScheduler):
    """See :class:`SequentialLrSchedulerConfig`."""

    def __init__(self, schedulers: list[LrScheduler], milestones: list[int]) -> None:
        self.schedulers = schedulers
        self.milestones = milestones
        self.current = 0

    def step(self) -> float:
        index = bisect.bisect_right(self.milestones, self.current)
        lr = self.schedulers[index].step()
        self.current += 1
        return lr

    def to_record(self) -> dict[str, Any]:
        return {"step": self.current, "schedulers": [s.to_record() for s in self.schedulers]}

    def load_record(self, record: Any) -> SequentialLrScheduler:
        children = record.get("schedulers") if isinstance(record, dict) else None
        step = record.get("step") if isinstance(record, dict) else None
        if not isinstance(children, list) or len(children) != len(self.schedulers) or not isinstance(step, int):
            raise RecordError(
                "SequentialLrScheduler.load_record: expected {'step': int, 'schedulers': [...]} with "
                f"{len(self.schedulers)} child records (from SequentialLrScheduler.to_record())."
            )
        for s, r in zip(self.schedulers, children):
            s.load_record(r)
        self.current = step
        return self
