"""Step decay, Burn's ``StepLrScheduler`` (PyTorch's ``StepLR``)."""

from __future__ import annotations

from typing import Any

from ..._errors import ConfigError
from ...config import config
from ._base import LrScheduler, check_record

__all__ = ["StepLrSchedulerConfig", "StepLrScheduler"]


@config
class StepLrSchedulerConfig:
    """``lr = initial_lr * gamma^(i // step_size)`` at iteration ``i = 0, 1, 2, ...`` (Burn; equal to PyTorch's
    ``StepLR(step_size, gamma)``).

    Args:
        initial_lr: the first rate.
        step_size: iterations between two decays (>= 1).
        gamma: the decay factor (Burn: 0.1).
    """

    initial_lr: float
    step_size: int
    gamma: float = 0.1

    def init(self) -> StepLrScheduler:
        """The scheduler.

        Raises:
            ConfigError: ``step_size < 1``.
        """
        if self.step_size < 1:
            raise ConfigError(f"StepLrSchedulerConfig.step_size: expected >= 1, got {self.step_size}.")
        return StepLrScheduler(self)


class StepLrScheduler(LrScheduler):
    """See :class:`StepLrSchedulerConfig`."""

    def __init__(self, cfg: StepLrSchedulerConfig) -> None:
        self.init_lr = float(cfg.initial_lr)
        self.step_size = int(cfg.step_size)
        self.gamma = float(cfg.gamma)
        self.iter_idx = -1

    def step(self) -> float:
        self.iter_idx += 1
        return self.init_lr * self.gamma ** (self.iter_idx // self.step_size)

    def to_record(self) -> dict[str, Any]:
        return {"iter_idx": self.iter_idx}

    def load_record(self, record: Any) -> StepLrScheduler:
        self.iter_idx = int(check_record("StepLrScheduler", record, ("iter_idx",))["iter_idx"])
        return self
