"""Exponential decay, Burn's ``ExponentialLrScheduler`` (PyTorch's ``ExponentialLR``)."""

from __future__ import annotations

from typing import Any

from ..._errors import ConfigError
from ...config import config
from ._base import LrScheduler, check_record

__all__ = ["ExponentialLrSchedulerConfig", "ExponentialLrScheduler"]


@config
class ExponentialLrSchedulerConfig:
    """``lr = initial_lr * gamma^i`` at iteration ``i = 0, 1, 2, ...`` (the first :meth:`step` returns
    ``initial_lr``), as Burn; PyTorch's ``ExponentialLR`` gives the same sequence.

    Args:
        initial_lr: the first learning rate (> 0; Burn also requires <= 1, Ember does not).
        gamma: the factor per iteration, in (0, 1].
    """

    initial_lr: float
    gamma: float

    def init(self) -> ExponentialLrScheduler:
        """The scheduler.

        Raises:
            ConfigError: ``initial_lr <= 0`` or ``gamma`` outside (0, 1].
        """
        if not self.initial_lr > 0.0:
            raise ConfigError(f"ExponentialLrSchedulerConfig.initial_lr: expected > 0, got {self.initial_lr}.")
        if not 0.0 < self.gamma <= 1.0:
            raise ConfigError(f"ExponentialLrSchedulerConfig.gamma: expected a value in (0, 1], got {self.gamma}.")
        return ExponentialLrScheduler(self)


class ExponentialLrScheduler(LrScheduler):
    """See :class:`ExponentialLrSchedulerConfig`."""

    def __init__(self, cfg: ExponentialLrSchedulerConfig) -> None:
        self.gamma = float(cfg.gamma)
        self.previous_lr = float(cfg.initial_lr) / self.gamma

    def step(self) -> float:
        self.previous_lr *= self.gamma
        return self.previous_lr

    def to_record(self) -> dict[str, Any]:
        return {"previous_lr": self.previous_lr}

    def load_record(self, record: Any) -> ExponentialLrScheduler:
        self.previous_lr = float(check_record("ExponentialLrScheduler", record, ("previous_lr",))["previous_lr"])
        return self
