"""How a training step updates the model: after every step, or after ``n`` accumulated steps (gradient accumulation).

The Learner's epoch loop calls :meth:`EveryStep.step` (or :meth:`Accumulated.step`) once per batch and then
:meth:`~EveryStep.should_stop`; the learning strategy (:mod:`ember_train.strategies`) runs the step and the
collectives.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._app_logger import LOGGER

__all__ = ["EveryStep", "Accumulated", "updates"]


class EveryStep:
    """Each batch's step updates the model (``method.train_step``).

    Attributes:
        pending: steps whose gradients are not applied yet (always 0).
    """

    pending = 0

    def __init__(self, method: Any, steps: Any, stop: Callable[[], bool]) -> None:
        self.method = method
        self.steps = steps
        self.stop = stop

    def step(self, model: Any, optim: Any, batch: Any, lr: Any) -> tuple[Any, Any]:
        """``(model, item)`` after the step and its optimizer update."""
        return self.method.train_step(self.steps, model, optim, batch, lr, self.stop)  # type: ignore[no-any-return]

    def should_stop(self, last: bool) -> bool:
        """Whether to stop after this step (agreed by every process: the strategy's ``stop_after_step``)."""
        return bool(self.method.stop_after_step(self.stop))

    def end_epoch(self, epoch: int) -> None:
        """Nothing is left over."""


class Accumulated(EveryStep):
    """Gradients summed over ``every`` steps (``ember.optim.GradientsAccumulator``), then reduced by the strategy
    (``method.reduce_grads``) and applied with the scheduler's rate at the applying step; leftover steps at the
    epoch's end are dropped (as Burn)."""

    def __init__(self, method: Any, steps: Any, stop: Callable[[], bool], every: int) -> None:
        from ember.optim import GradientsAccumulator

        super().__init__(method, steps, stop)
        self.every = every
        self.accumulator = GradientsAccumulator()
        self.pending = 0

    def step(self, model: Any, optim: Any, batch: Any, lr: Any) -> tuple[Any, Any]:
        grads, item = self.steps.grad(model, batch)
        self.accumulator.accumulate(model, grads)
        self.pending += 1
        if self.pending >= self.every:
            grads = self.method.reduce_grads(self.accumulator.grads())
            model = self.steps.update(model, optim, grads, lr)
            self.pending = 0
        return model, item

    def should_stop(self, last: bool) -> bool:
        """Whether every process agrees to stop (asked at every step, so that all make the same collectives), and
        only after an update or at the epoch's ``last`` step: accumulated gradients are not saved."""
        agreed = self.method.agree(self.stop())
        return bool(agreed and (self.pending == 0 or last))

    def end_epoch(self, epoch: int) -> None:
        if self.pending:
            LOGGER.info("Epoch %d ended with %d accumulated step(s) not applied (as Burn).", epoch, self.pending)


def updates(method: Any, steps: Any, stop: Callable[[], bool], accumulation: int | None) -> EveryStep:
    """:class:`Accumulated` over ``accumulation`` steps, or :class:`EveryStep` when ``None``."""
    return EveryStep(method, steps, stop) if not accumulation else Accumulated(method, steps, stop, accumulation)
