"""``LrSchedulerConfigs``: the scheduler configs that Composed and Sequential schedulers may hold."""

from __future__ import annotations

from typing import Any, Union

from ._base import ConstantLr, LrScheduler
from ._cosine import CosineAnnealingLrSchedulerConfig
from ._exponential import ExponentialLrSchedulerConfig
from ._linear import LinearLrSchedulerConfig
from ._noam import NoamLrSchedulerConfig
from ._step import StepLrSchedulerConfig

__all__ = ["LrSchedulerConfigs", "build_child"]

#: a child scheduler: one of these configs, or a float (a constant rate)
LrSchedulerConfigs = Union[  # noqa: UP007
    LinearLrSchedulerConfig,
    CosineAnnealingLrSchedulerConfig,
    ExponentialLrSchedulerConfig,
    StepLrSchedulerConfig,
    NoamLrSchedulerConfig,
    ConstantLr,
    float,
]
"""A child scheduler of ``ComposedLrSchedulerConfig`` / ``SequentialLrSchedulerConfig``: one of these configs, or a
float (a constant rate)."""


def build_child(cfg: Any) -> LrScheduler:
    """The scheduler of a child config (a float becomes a :class:`ConstantLr`)."""
    if isinstance(cfg, (int, float)) and not isinstance(cfg, bool):
        return ConstantLr(float(cfg))
    return cfg.init()  # type: ignore[no-any-return]
