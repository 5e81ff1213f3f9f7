"""Linear interpolation between two rates, Burn's ``LinearLrScheduler`` (PyTorch's ``LinearLR``)."""

from __future__ import annotations

from typing import Any

from ..._errors import ConfigError
from ...config import config
from ._base import LrScheduler, check_record

__all__ = ["LinearLrSchedulerConfig", "LinearLrScheduler"]


@config
class LinearLrSchedulerConfig:
    """From ``initial_lr`` to ``final_lr`` in ``num_iters`` equal steps, then constant (Burn). At iteration
    ``i = 0, 1, 2, ...``::

        lr = initial_lr + (final_lr - initial_lr) * min(i, num_iters) / num_iters

    (warm-up when ``final_lr > initial_lr``). Equal to PyTorch's ``LinearLR(start_factor=initial_lr / base,
    end_factor=final_lr / base, total_iters=num_iters)`` on a base rate ``base``.

    Args:
        initial_lr: the first rate (> 0). final_lr: the last rate (>= 0). num_iters: >= 1.
    """

    initial_lr: float
    final_lr: float
    num_iters: int

    def init(self) -> LinearLrScheduler:
        """The scheduler.

        Raises:
            ConfigError: ``initial_lr <= 0``, ``final_lr < 0`` or ``num_iters < 1``.
        """
        if not self.initial_lr > 0.0:
            raise ConfigError(f"LinearLrSchedulerConfig.initial_lr: expected > 0, got {self.initial_lr}.")
        if not self.final_lr >= 0.0:
            raise ConfigError(f"LinearLrSchedulerConfig.final_lr: expected >= 0, got {self.final_lr}.")
        if self.num_iters < 1:
            raise ConfigError(f"LinearLrSchedulerConfig.num_iters: expected >= 1, got {self.num_iters}.")
        return LinearLrScheduler(self)


class LinearLrScheduler(LrScheduler):
    """See :class:`LinearLrSchedulerConfig`."""

    def __init__(self, cfg: LinearLrSchedulerConfig) -> None:
        self.final_lr = float(cfg.final_lr)
        self.step_size = (float(cfg.final_lr) - float(cfg.initial_lr)) / cfg.num_iters
        self.remaining_iters = int(cfg.num_iters) + 1

    def step(self) -> float:
        if self.remaining_iters > 0:
            self.remaining_iters -= 1
        return self.final_lr - self.step_size * self.remaining_iters

    def to_record(self) -> dict[str, Any]:
        return {"remaining_iters": self.remaining_iters}

    def load_record(self, record: Any) -> LinearLrScheduler:
        rec = check_record("LinearLrScheduler", record, ("remaining_iters",))
        self.remaining_iters = int(rec["remaining_iters"])
        return self
