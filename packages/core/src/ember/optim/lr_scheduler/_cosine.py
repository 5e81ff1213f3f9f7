"""Cosine annealing with warm restarts (Loshchilov & Hutter, SGDR, 2017), Burn's ``CosineAnnealingLrScheduler``."""

from __future__ import annotations

import math
from typing import Any

from ..._errors import ConfigError
from ...config import config
from ._base import LrScheduler, check_record

__all__ = ["CosineAnnealingLrSchedulerConfig", "CosineAnnealingLrScheduler"]


@config
class CosineAnnealingLrSchedulerConfig:
    """Cosine annealing from ``initial_lr`` to ``min_lr`` over ``num_iters`` iterations, then a restart
    (Burn's schedule; SGDR, arXiv:1608.03983). At iteration ``i = 0, 1, 2, ...``, with ``c = i mod (num_iters + 1)``::

        lr = min_lr + 0.5 * (initial_lr - min_lr) * (1 + cos(pi * c / num_iters))

    so the first step gives ``initial_lr``, step ``num_iters + 1`` gives ``min_lr`` and the next restarts at
    ``initial_lr``. The first ``num_iters + 1`` values equal PyTorch's ``CosineAnnealingLR(T_max=num_iters,
    eta_min=min_lr)``.

    Args:
        initial_lr: the maximal rate (> 0).
        num_iters: iterations from ``initial_lr`` to ``min_lr`` (>= 1).
        min_lr: the minimal rate (default 0, in [0, initial_lr]).
    """

    initial_lr: float
    num_iters: int
    min_lr: float = 0.0

    def init(self) -> CosineAnnealingLrScheduler:
        """The scheduler.

        Raises:
            ConfigError: ``initial_lr <= 0``, ``min_lr`` outside [0, initial_lr], ``num_iters < 1``.
        """
        if not self.initial_lr > 0.0:
            raise ConfigError(f"CosineAnnealingLrSchedulerConfig.initial_lr: expected > 0, got {self.initial_lr}.")
        if not 0.0 <= self.min_lr <= self.initial_lr:
            raise ConfigError(
                f"CosineAnnealingLrSchedulerConfig.min_lr: expected a value in [0, initial_lr={self.initial_lr}], "
                f"got {self.min_lr}."
            )
        if self.num_iters < 1:
            raise ConfigError(f"CosineAnnealingLrSchedulerConfig.num_iters: expected >= 1, got {self.num_iters}.")
        return CosineAnnealingLrScheduler(self)


class CosineAnnealingLrScheduler(LrScheduler):
    """See :class:`CosineAnnealingLrSchedulerConfig`."""

    def __init__(self, cfg: CosineAnnealingLrSchedulerConfig) -> None:
        self.max_lr = float(cfg.initial_lr)
        self.min_lr = float(cfg.min_lr)
        self.num_iters = int(cfg.num_iters)
        self.current_iter = -1

    def step(self) -> float:
        self.current_iter = (self.current_iter + 1) % (self.num_iters + 1)
        cos = math.cos(self.current_iter / self.num_iters * math.pi)
        return self.min_lr + 0.5 * (self.max_lr - self.min_lr) * (1.0 + cos)

    def to_record(self) -> dict[str, Any]:
        return {"current_iter": self.current_iter}

    def load_record(self, record: Any) -> CosineAnnealingLrScheduler:
        self.current_iter = int(check_record("CosineAnnealingLrScheduler", record, ("current_iter",))["current_iter"])
        return self
