"""``CliMetricsRenderer``: plain log lines, for pipes, files and CI (Burn's ``CliMetricsRenderer``)."""

from __future__ import annotations

import sys
from typing import IO, TYPE_CHECKING

from .._summary import format_value, known_unit
from ._base import MetricsRenderer, MetricState, TrainingProgress
from ._format import duration

if TYPE_CHECKING:
    from .._summary import LearnerSummary

__all__ = ["CliMetricsRenderer"]


class CliMetricsRenderer(MetricsRenderer):
    """Prints about ``lines_per_epoch`` progress lines per split and epoch, one line of epoch means per split
    and epoch, notes, and the summary table at the end.

    Args:
        file: where to print (default ``sys.stdout``, looked up at each print).
        lines_per_epoch: progress lines per split and epoch (0: epoch lines only).
    """

    def __init__(self, file: IO[str] | None = None, lines_per_epoch: int = 4) -> None:
        self._file = file
        self.lines_per_epoch = lines_per_epoch
        self._current: dict[str, dict[str, str]] = {"train": {}, "valid": {}}
        self._next: dict[str, int] = {"train": 0, "valid": 0}
        self._epoch: dict[str, int] = {"train": 0, "valid": 0}

    def _print(self, text: str) -> None:
        f = self._file if self._file is not None else sys.stdout
        print(text, file=f, flush=True)

    def update_train(self, state: MetricState) -> None:
        self._current["train"][state.entry.name] = state.entry.formatted

    def update_valid(self, state: MetricState) -> None:
        self._current["valid"][state.entry.name] = state.entry.formatted

    def _render(self, split: str, p: TrainingProgress) -> None:
        if self._epoch[split] != p.epoch:
            self._epoch[split] = p.epoch
            self._next[split] = 0
        if self.lines_per_epoch <= 0 or not p.items_total:
            return
        step = max(1, p.items_total // self.lines_per_epoch)
        if p.items_processed < self._next[split] or p.items_processed >= p.items_total:
            return
        self._next[split] = (p.items_processed // step + 1) * step
        metrics = "  ".join(f"{k} {v}" for k, v in self._current[split].items())
        iters = f"{p.iteration}/{p.iterations_total}" if p.iterations_total else str(p.iteration)
        pct = 100.0 * p.items_processed / p.items_total
        self._print(
            f"[{split}] epoch {p.epoch}/{p.epoch_total} iter {iters} ({pct:.0f}%)  {metrics}  "
            f"| {p.items_per_second:.1f} items/s ETA {duration(p.eta)}"
        )

    def render_train(self, progress: TrainingProgress) -> None:
        self._render("train", progress)

    def render_valid(self, progress: TrainingProgress) -> None:
        self._render("valid", progress)

    def on_epoch_end(self, split: str, epoch: int, values: dict[str, float]) -> None:
        body = "  ".join(f"{k} {format_value(v, known_unit(k))}" for k, v in values.items())
        self._print(f"[{split}] epoch {epoch} done: {body}")
        self._current[split] = {}

    def message(self, text: str) -> None:
        self._print(text)

    def compiling(self, step: str, seconds: float | None) -> None:
        if seconds is None:
            self._print(f"Compiling the {step}: its first call traces and compiles it, which can take a minute…")
        else:
            self._print(f"Compiled the {step} in {seconds:.1f} s (left out of the ETA).")

    def on_train_end(self, summary: LearnerSummary | None) -> None:
        if summary is not None:
            self._print(summary.table())
