"""The renderer interface (Burn's ``MetricsRenderer``, ``MetricState``, ``TrainingProgress``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..metric._base import MetricEntry

if TYPE_CHECKING:
    from .._summary import LearnerSummary

__all__ = ["MetricsRenderer", "MetricState", "TrainingProgress"]


@dataclass(frozen=True)
class MetricState:
    """A metric update (Burn's ``MetricState``): ``value`` is set for numeric metrics (``Numeric``), ``None``
    for generic ones; ``running`` is the epoch's running value."""

    entry: MetricEntry
    value: float | None = None
    running: float | None = None


@dataclass(frozen=True)
class TrainingProgress:
    """Where training is (Burn's ``TrainingProgress``).

    Attributes:
        items_processed / items_total: the loader's progress in the epoch.
        epoch / epoch_total: 1-based epoch and the number of epochs.
        iteration: 1-based iteration in the epoch; ``iterations_total`` is ``len(loader)`` (``None`` if unknown).
        elapsed: seconds since the epoch's (split's) start.
        compile_seconds / compile_iterations: the time and number of this epoch's iterations whose step call
            compiled (a compiling backend's first call of each batch shape: jax); the rate and the ETA leave them
            out.
    """

    items_processed: int
    items_total: int
    epoch: int
    epoch_total: int
    iteration: int
    iterations_total: int | None = None
    elapsed: float = 0.0
    compile_seconds: float = 0.0
    compile_iterations: int = 0

    @property
    def items_per_second(self) -> float:
        """The rate of the steady iterations: the elapsed time without the calls that compiled, stretched by the
        share of iterations they were (each compiled iteration counted at the steady iterations' mean time);
        0 while every iteration so far compiled."""
        elapsed = self.elapsed
        if self.compile_iterations:
            steady = self.iteration - self.compile_iterations
            if steady <= 0:
                return 0.0
            elapsed = max(0.0, elapsed - self.compile_seconds) * self.iteration / steady
        return self.items_processed / elapsed if elapsed > 0 else 0.0

    @property
    def eta(self) -> float | None:
        """Seconds left in this split's epoch (compile time left out), ``None`` before any speed is known."""
        rate = self.items_per_second
        if rate <= 0 or self.items_total <= 0:
            return None
        return max(0.0, (self.items_total - self.items_processed) / rate)


class MetricsRenderer:
    """Receives metric updates and progress; every hook is optional (no-op by default).

    The Learner calls ``update_train`` / ``update_valid`` for each metric entry and ``render_train`` /
    ``render_valid`` once per logging interval, ``on_epoch_end(split, epoch, values)`` with the epoch
    means, ``compiling(step, seconds)`` around the calls that compile a step, ``message(text)`` for notes
    (skipped metrics, interruptions, early stopping) and ``on_train_end(summary)`` at the end (``summary`` is
    ``None`` unless ``LearnerBuilder.summary()``).
    """

    def update_train(self, state: MetricState) -> None:
        pass

    def update_valid(self, state: MetricState) -> None:
        pass

    def render_train(self, progress: TrainingProgress) -> None:
        pass

    def render_valid(self, progress: TrainingProgress) -> None:
        pass

    def on_epoch_end(self, split: str, epoch: int, values: dict[str, float]) -> None:
        pass

    def message(self, text: str) -> None:
        pass

    def compiling(self, step: str, seconds: float | None) -> None:
        """A compiling backend (jax) compiles ``step`` (``"training step"``, ``"validation step"``, ...):
        ``seconds`` is ``None`` when its first call starts (tracing and compiling can take a minute, during which
        no progress comes), then the seconds the call took when it ends; a later call that compiled again (a new
        batch shape) is reported once, with its seconds. That time is left out of ``TrainingProgress.eta``."""

    def on_train_end(self, summary: LearnerSummary | None) -> None:
        pass
