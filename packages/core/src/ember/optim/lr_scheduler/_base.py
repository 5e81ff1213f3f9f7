"""``LrScheduler``: the learning-rate scheduler protocol (Burn's ``LrScheduler``) and ``ConstantLr``."""

from __future__ import annotations

from typing import Any

from ..._errors import ConfigError, RecordError
from ...config import config

__all__ = ["LrScheduler", "ConstantLr", "as_lr_scheduler", "check_record"]


class LrScheduler:
    """A learning-rate scheduler: :meth:`step` advances one iteration and returns its learning rate.

    ::

        scheduler = CosineAnnealingLrSchedulerConfig(1e-3, num_iters=1000).init()
        for batch in loader:
            model = optim.step(scheduler.step(), model, grads)

    The position is saved with :meth:`to_record` (a dict of numbers) and restored with :meth:`load_record`.
    """

    def step(self) -> float:
        """Advance one iteration; returns the learning rate to use for it."""
        raise NotImplementedError

    def to_record(self) -> dict[str, Any]:
        """The state (plain numbers)."""
        raise NotImplementedError

    def load_record(self, record: Any) -> LrScheduler:
        """Restore a state made by :meth:`to_record`; returns ``self``.

        Raises:
            RecordError: the record does not belong to this kind of scheduler.
        """
        raise NotImplementedError


def check_record(owner: str, record: Any, keys: tuple[str, ...]) -> dict[str, Any]:
    """``record`` if it is a dict holding ``keys`` with numbers, else a :class:`~ember.RecordError`."""
    if not isinstance(record, dict) or any(k not in record for k in keys):
        found = sorted(record) if isinstance(record, dict) else type(record).__name__
        raise RecordError(
            f"{owner}.load_record: expected a record with keys {list(keys)} (from {owner}.to_record()), got {found}."
        )
    for k in keys:
        v = record[k]
        if not isinstance(v, (int, float)) or isinstance(v, bool):
            raise RecordError(f"{owner}.load_record: {k!r} must be a number, got {type(v).__name__} {v!r}.")
    return record


@config
class ConstantLr(LrScheduler):
    """A constant learning rate (Burn's ``ConstantLr``; a plain float means the same everywhere a scheduler
    is accepted).

    Args:
        lr: the learning rate (>= 0).
    """

    lr: float

    def __post_init__(self) -> None:
        if not self.lr >= 0.0:
            raise ConfigError(f"ConstantLr.lr: expected a learning rate >= 0, got {self.lr}.")

    def init(self) -> ConstantLr:
        """Itself (a constant scheduler has no state)."""
        return self

    def step(self) -> float:
        return self.lr

    def to_record(self) -> dict[str, Any]:
        return {}

    def load_record(self, record: Any) -> ConstantLr:
        if not isinstance(record, dict):
            raise RecordError(f"ConstantLr.load_record: expected a dict record, got {type(record).__name__}.")
        return self


def as_lr_scheduler(value: Any) -> LrScheduler:
    """A scheduler from a float (constant), a scheduler config (``init()``'d) or a scheduler (as is).

    Raises:
        TypeError: anything else. ConfigError: an invalid config or a negative rate.
    """
    if isinstance(value, LrScheduler):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return ConstantLr(float(value))
    init = getattr(value, "init", None)
    if callable(init):
        out = init()
        if isinstance(out, LrScheduler):
            return out
    raise TypeError(
        f"expected a learning rate (float), an LrScheduler or a scheduler config, got {type(value).__name__}."
    )
