"""Record helpers for optimizers and schedulers of any origin (``to_record`` / ``load_record``)."""

from __future__ import annotations

from typing import Any

from ._errors import LearnerError

__all__ = ["state_record", "load_state", "as_scheduler", "ConstantLr"]


def state_record(obj: Any, what: str) -> Any:
    """``obj.to_record()`` (Burn) or ``obj.into_record()``."""
    for name in ("to_record", "into_record"):
        fn = getattr(obj, name, None)
        if callable(fn):
            return fn()
    raise LearnerError(
        f"the {what} ({type(obj).__name__}) has no to_record()/into_record(), so it cannot be checkpointed; "
        "give it one (returning a record tree) or train without a checkpointer."
    )


def load_state(obj: Any, record: Any, what: str) -> Any:
    """``obj.load_record(record)``: the object returned, or ``obj`` when it updates in place."""
    fn = getattr(obj, "load_record", None)
    if not callable(fn):
        raise LearnerError(f"the {what} ({type(obj).__name__}) has no load_record(record); it cannot be resumed.")
    out = fn(record)
    return obj if out is None else out


class ConstantLr:
    """A constant learning rate (Burn's ``impl LrScheduler for f64``); used for a plain float ``lr``
    when ``ember.optim`` has no ``ConstantLr``."""

    def __init__(self, lr: float) -> None:
        if not lr >= 0:
            raise LearnerError(f"the learning rate must be >= 0, got {lr!r}.")
        self.lr = float(lr)

    def step(self) -> float:
        return self.lr

    def to_record(self) -> dict[str, Any]:
        return {"lr": self.lr}

    def load_record(self, record: Any) -> ConstantLr:
        return self

    def __repr__(self) -> str:
        return f"ConstantLr({self.lr})"


def as_scheduler(lr_or_scheduler: Any) -> Any:
    """A scheduler with ``step() -> float`` from a float, a scheduler, or a scheduler config (``init()``).

    Raises:
        LearnerError: anything else.
    """
    if isinstance(lr_or_scheduler, (int, float)) and not isinstance(lr_or_scheduler, bool):
        try:
            from ember.optim import ConstantLr as OptimConstant  # type: ignore[attr-defined]

            return OptimConstant(float(lr_or_scheduler))
        except (ImportError, AttributeError, TypeError):
            return ConstantLr(float(lr_or_scheduler))
    if callable(getattr(lr_or_scheduler, "step", None)):
        return lr_or_scheduler
    init = getattr(lr_or_scheduler, "init", None)
    if callable(init):
        sched = init()
        if callable(getattr(sched, "step", None)):
            return sched
    raise LearnerError(
        f"build(model, optim, lr): lr must be a float, a learning-rate scheduler (with step() -> float) or a "
        f"scheduler config (with init()), got {type(lr_or_scheduler).__name__}."
    )
