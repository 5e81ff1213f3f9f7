"""Noam: linear warm-up then inverse square-root decay (Vaswani et al., 2017), Burn's ``NoamLrScheduler``."""

from __future__ import annotations

from typing import Any

from ..._errors import ConfigError
from ...config import config
from ._base import LrScheduler, check_record

__all__ = ["NoamLrSchedulerConfig", "NoamLrScheduler"]


@config
class NoamLrSchedulerConfig:
    """The Noam schedule of *Attention Is All You Need* (Vaswani et al., 2017, eq. 3). At step ``t = 1, 2, ...``::

        lr(t) = factor * model_size^-0.5 * min(t^-0.5, t * warmup_steps^-1.5)

    It grows linearly for ``warmup_steps`` steps, peaks at ``t = warmup_steps``, then decays as ``t^-0.5``.

    Args:
        factor: overall scale.
        warmup_steps: warm-up length (Burn: 4000, > 0).
        model_size: the model width ``d_model`` (Burn: 512, > 0).
    """

    factor: float
    warmup_steps: int = 4000
    model_size: int = 512

    def init(self) -> NoamLrScheduler:
        """The scheduler.

        Raises:
            ConfigError: ``warmup_steps`` or ``model_size`` is 0.
        """
        if self.warmup_steps <= 0:
            raise ConfigError(f"NoamLrSchedulerConfig.warmup_steps: expected > 0, got {self.warmup_steps}.")
        if self.model_size <= 0:
            raise ConfigError(f"NoamLrSchedulerConfig.model_size: expected > 0, got {self.model_size}.")
        return NoamLrScheduler(self)


class NoamLrScheduler(LrScheduler):
    """See :class:`NoamLrSchedulerConfig`."""

    def __init__(self, cfg: NoamLrSchedulerConfig) -> None:
        self.factor = float(cfg.factor)
        self.warmup_steps = float(cfg.warmup_steps)
        self.model_size = float(cfg.model_size)
        self.current = 0.0

    def step(self) -> float:
        self.current += 1.0
        t = self.current
        return self.factor * self.model_size**-0.5 * min(t**-0.5, t * self.warmup_steps**-1.5)

    def to_record(self) -> dict[str, Any]:
        return {"step": self.current}

    def load_record(self, record: Any) -> NoamLrScheduler:
        self.current = float(check_record("NoamLrScheduler", record, ("step",))["step"])
        return self
