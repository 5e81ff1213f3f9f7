"""``TuiMetricsRenderer``: a live terminal dashboard built with rich (Burn's ``TuiMetricsRenderer``).

Shows the epoch progress bar, the current split's iteration progress with items/s and ETA, a table of
the metrics: current (batch and epoch-running) values for train and valid, and per-epoch history
sparklines of train against valid on a shared scale (the current epoch's running value last), and Burn's plot
panel: a line chart of one numeric metric, train against valid, full or recent history (arrow keys switch).
"""

from __future__ import annotations

import math
import threading
import time
from typing import TYPE_CHECKING, Any

from rich.console import Console, Group
from rich.live import Live
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from .._summary import format_value, known_unit
from ._base import MetricsRenderer, MetricState, TrainingProgress
from ._chart import PlotPanel
from ._format import duration, sparkline

if TYPE_CHECKING:
    from .._summary import LearnerSummary

__all__ = ["TuiMetricsRenderer"]


class TuiMetricsRenderer(MetricsRenderer):
    """The live dashboard.

    Args:
        console: a rich ``Console`` (default: a new one on stdout). Tests pass
            ``Console(force_terminal=True, file=StringIO())``.
        refresh_seconds: minimum time between redraws (updates in between are merged).
        history: epochs shown in the sparklines.
        plot_height: lines of the plot panel's chart (0 hides the panel).
        keys: read the arrow keys from stdin while the dashboard runs (when stdin is a terminal): left/right
            select the plotted metric, up/down switch between full and recent history.
    """

    def __init__(self, console: Console | None = None, refresh_seconds: float = 0.1, history: int = 30,
                 plot_height: int = 12, keys: bool = True) -> None:
        self.console = console if console is not None else Console()
        self.refresh_seconds = refresh_seconds
        self.history = history
        self.plot_height = plot_height
        self.plot = PlotPanel()
        self._keys_enabled = keys
        self._keys: Any = None
        self._lock = threading.RLock()
        self._live: Live | None = None
        self._last_draw = 0.0
        self._progress: dict[str, TrainingProgress] = {}
        self._split = "train"
        self._current: dict[str, dict[str, MetricState]] = {"train": {}, "valid": {}}
        self._epochs: dict[str, dict[str, list[float]]] = {"train": {}, "valid": {}}
        self._notes: list[str] = []
        self._compiling: tuple[str, str] | None = None

    # -- hooks -------------------------------------------------------------------------------------
    def update_train(self, state: MetricState) -> None:
        self._update("train", state)

    def update_valid(self, state: MetricState) -> None:
        self._update("valid", state)

    def _update(self, split: str, state: MetricState) -> None:
        with self._lock:  # the key thread may be drawing
            self._current[split][state.entry.name] = state
            if state.value is not None:
                self.plot.add(split, state.entry.name, state.value)

    def _on_key(self, key: str) -> None:
        if self.plot.key(key):
            self._draw(force=True)

    def render_train(self, progress: TrainingProgress) -> None:
        self._render("train", progress)

    def render_valid(self, progress: TrainingProgress) -> None:
        self._render("valid", progress)

    def on_epoch_end(self, split: str, epoch: int, values: dict[str, float]) -> None:
        with self._lock:
            for name, v in values.items():
                self._epochs[split].setdefault(name, []).append(v)
            self._current[split] = {}
            self.plot.epoch_end(split, epoch, values)
        self._draw(force=True)

    def message(self, text: str) -> None:
        with self._lock:
            self._notes.append(text)
            self._notes = self._notes[-4:]
        if self._live is None:
            self.console.print(text)
        else:
            self._draw(force=True)

    def compiling(self, step: str, seconds: float | None) -> None:
        with self._lock:
            if seconds is None:
                self._compiling = (step, time.strftime("%H:%M:%S"))  # the view is not redrawn while it compiles
            else:
                self._compiling = None
                self._notes.append(f"Compiled the {step} in {seconds:.1f} s (left out of the ETA).")
                self._notes = self._notes[-4:]
        self._draw(force=True)

    def on_train_end(self, summary: LearnerSummary | None) -> None:
        if self._keys is not None:
            self._keys.stop()
            self._keys = None
        with self._lock:
            if self._live is not None:
                self._live.update(self._view(), refresh=True)
                self._live.stop()
                self._live = None
        if summary is not None:
            self.console.print(summary_table(summary))

    # -- drawing -------------------------------------------------------------------------------------
    def _render(self, split: str, progress: TrainingProgress) -> None:
        with self._lock:
            self._split = split
            self._progress[split] = progress
            self.plot.progress(split, progress.epoch, progress.items_processed, progress.items_total)
        self._draw(force=progress.items_processed >= progress.items_total)

    def _draw(self, force: bool = False) -> None:
        now = time.perf_counter()
        if not force and now - self._last_draw < self.refresh_seconds:
            return
        self._last_draw = now
        with self._lock:
            if self._live is None:
                self._live = Live(self._view(), console=self.console, auto_refresh=False, transient=False)
                self._live.start()
                if self._keys_enabled and self.plot_height > 0 and self.console.is_terminal:
                    from ._keys import KeyReader

                    reader = KeyReader(self._on_key)
                    self._keys = reader if reader.start() else None
            self._live.update(self._view(), refresh=True)

    def _view(self) -> Any:
        parts: list[Any] = []
        if self._compiling is not None:
            step, since = self._compiling
            parts.append(Text(f"Compiling the {step}: its first call traces and compiles it, which can take a minute "
                              f"(since {since}; the ETA leaves this time out)…", style="bold yellow"))
        p = self._progress.get(self._split)
        if p is not None:
            bars = Table.grid(padding=(0, 1))
            bars.add_column(width=8)
            bars.add_column(width=40)
            bars.add_column()
            frac = p.items_processed / p.items_total if p.items_total else 0.0
            done_epochs = p.epoch - 1 + (frac if self._split == "train" else 1.0)
            bars.add_row("Epoch", ProgressBar(total=p.epoch_total, completed=done_epochs, width=40),
                         f"{p.epoch}/{p.epoch_total}")
            iters = f"{p.iteration}/{p.iterations_total}" if p.iterations_total else str(p.iteration)
            bars.add_row(
                self._split.capitalize(),
                ProgressBar(total=max(p.items_total, 1), completed=p.items_processed, width=40),
                f"iter {iters}  {p.items_processed}/{p.items_total} items  {p.items_per_second:,.1f} items/s  "
                f"elapsed {duration(p.elapsed)}  ETA {duration(p.eta)}",
            )
            parts.append(bars)
        parts.append(self._metrics_table())
        if self.plot_height > 0:
            parts.append(self.plot.render(min(self.console.width, 120), self.plot_height))
        for note in self._notes:
            parts.append(Text(note, style="yellow"))
        return Group(*parts)

    def _metrics_table(self) -> Table:
        t = Table(title=None, expand=False, show_edge=True)
        t.add_column("Metric", style="bold")
        t.add_column("Train")
        t.add_column("Valid")
        t.add_column("History (train / valid, per epoch)")
        names: list[str] = []
        for split in ("train", "valid"):
            for n in list(self._epochs[split]) + list(self._current[split]):
                if n not in names:
                    names.append(n)
        for name in names:
            cells = []
            series: dict[str, list[float]] = {}
            for split in ("train", "valid"):
                st = self._current[split].get(name)
                hist = list(self._epochs[split].get(name, []))
                if st is not None and st.running is not None and math.isfinite(st.running):
                    hist.append(st.running)
                series[split] = hist[-self.history:]
                if st is not None:
                    cells.append(st.entry.formatted)
                elif self._epochs[split].get(name):
                    cells.append(f"{format_value(self._epochs[split][name][-1], known_unit(name))} (last epoch)")
                else:
                    cells.append("-")
            finite = [v for s in series.values() for v in s if math.isfinite(v)]
            lo, hi = (min(finite), max(finite)) if finite else (None, None)
            spark = Text()
            spark.append(sparkline(series["train"], lo, hi, self.history) or "-", style="cyan")
            spark.append(" / ")
            spark.append(sparkline(series["valid"], lo, hi, self.history) or "-", style="magenta")
            if finite:
                spark.append(f"  [{lo:.3g}, {hi:.3g}]", style="dim")
            t.add_row(name, cells[0], cells[1], spark)
        return t


def summary_table(summary: LearnerSummary) -> Table:
    """The summary as a rich table."""
    t = Table(title=f"Learner Summary — {summary.epochs} epoch(s)")
    for col in ("Split", "Metric", "Best", "Epoch", "Last"):
        t.add_column(col, justify="right" if col in ("Best", "Epoch", "Last") else "left")
    for row in summary.rows():
        t.add_row(*row)
    return t
