"""Learning-rate schedulers (Burn's ``burn::lr_scheduler``).

``XConfig(...).init()`` gives an :class:`LrScheduler`; ``scheduler.step()`` advances one iteration and returns
its learning rate; ``to_record()`` / ``load_record(record)`` save and restore the position. A plain float
works wherever a scheduler is accepted (:func:`as_lr_scheduler`, :class:`ConstantLr`).

Examples:
    >>> from ember.optim.lr_scheduler import StepLrSchedulerConfig
    >>> s = StepLrSchedulerConfig(0.5, step_size=2, gamma=0.1).init()
    >>> [round(s.step(), 6) for _ in range(5)]
    [0.5, 0.5, 0.05, 0.05, 0.005]
"""

from __future__ import annotations

from ._any import LrSchedulerConfigs
from ._base import ConstantLr, LrScheduler, as_lr_scheduler
from ._composed import ComposedLrScheduler, ComposedLrSchedulerConfig, SchedulerReduction
from ._cosine import CosineAnnealingLrScheduler, CosineAnnealingLrSchedulerConfig
from ._exponential import ExponentialLrScheduler, ExponentialLrSchedulerConfig
from ._linear import LinearLrScheduler, LinearLrSchedulerConfig
from ._noam import NoamLrScheduler, NoamLrSchedulerConfig
from ._sequential import SequentialLrScheduler, SequentialLrSchedulerConfig
from ._step import StepLrScheduler, StepLrSchedulerConfig

__all__ = [
    "ComposedLrScheduler",
    "ComposedLrSchedulerConfig",
    "ConstantLr",
    "CosineAnnealingLrScheduler",
    "CosineAnnealingLrSchedulerConfig",
    "ExponentialLrScheduler",
    "ExponentialLrSchedulerConfig",
    "LinearLrScheduler",
    "LinearLrSchedulerConfig",
    "LrScheduler",
    "LrSchedulerConfigs",
    "NoamLrScheduler",
    "NoamLrSchedulerConfig",
    "SchedulerReduction",
    "SequentialLrScheduler",
    "SequentialLrSchedulerConfig",
    "StepLrScheduler",
    "StepLrSchedulerConfig",
    "as_lr_scheduler",
]
