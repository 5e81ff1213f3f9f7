"""The dashboard's plot panel (Burn's TUI "Plots"): a line chart of the selected numeric metric, train against
valid, over the full history or the recent one, drawn with uniplot (Unicode block characters) into rich text.

Keys (Burn's): left/right select the metric, up/down switch between full and recent history.
"""

from __future__ import annotations

import math
import threading
from typing import Any

from rich.text import Text

__all__ = ["PlotPanel"]

_SPLITS = ("train", "valid")
_KINDS = ("Full history", "Recent history")


class PlotPanel:
    """The chart's data and view state; :meth:`render` draws it at a given size.

    Points are placed in epochs of training: the training updates logged between two progress reports are spread
    evenly between the positions of those reports (``epoch - 1 + items_processed / items_total``); the validation
    of epoch ``e`` is one point, its epoch mean, at ``e`` (:meth:`epoch_end`), where the model it measured stopped
    training.

    Args:
        recent: the recent history spans the last ``recent`` points of the split with the most (default 100).
        max_points: the full history keeps at most this many points per split (it halves its resolution by
            dropping every other point when full).
    """

    def __init__(self, recent: int = 100, max_points: int = 2000) -> None:
        self.recent = recent
        self.max_points = max_points
        self.names: list[str] = []
        self.selected = 0
        self.kind = 0
        self._pending: dict[str, dict[str, list[float]]] = {s: {} for s in _SPLITS}
        self._last_x: dict[str, float] = {s: 0.0 for s in _SPLITS}
        self._points: dict[tuple[str, str], tuple[list[float], list[float]]] = {}
        self._lock = threading.Lock()

    # -- data ----------------------------------------------------------------------------------------
    def add(self, split: str, name: str, value: float) -> None:
        """One step's value of a numeric metric (training: placed at the next progress report; validation: only
        names the metric, whose point comes with :meth:`epoch_end`)."""
        with self._lock:
            if name not in self.names:
                self.names.append(name)
            if split == "train":
                self._pending[split].setdefault(name, []).append(value)

    def epoch_end(self, split: str, epoch: int, values: dict[str, float]) -> None:
        """The epoch means of ``split``: the validation's are placed at ``x = epoch`` (the end of that epoch's
        training)."""
        if split != "valid":
            return
        with self._lock:
            for name, v in values.items():
                if name not in self.names:
                    self.names.append(name)
                xs, ys = self._points.setdefault((split, name), ([], []))
                while xs and xs[-1] >= epoch:   # a validation run again (resume) replaces its point
                    xs.pop()
                    ys.pop()
                xs.append(float(epoch))
                ys.append(v)

    def progress(self, split: str, epoch: int, items_processed: int, items_total: int) -> None:
        """Place the pending training values up to ``epoch - 1 + items_processed / items_total``."""
        if split != "train":
            return
        x = epoch - 1 + (items_processed / items_total if items_total else 1.0)
        last = self._last_x[split]
        start = last if epoch - 1 <= last <= x else float(epoch - 1)
        with self._lock:
            for name, values in self._pending[split].items():
                xs, ys = self._points.setdefault((split, name), ([], []))
                n = len(values)
                xs.extend(start + (x - start) * (i + 1) / n for i in range(n))
                ys.extend(values)
                if len(xs) > self.max_points:
                    del xs[::2], ys[::2]
            self._pending[split] = {}
        self._last_x[split] = x

    # -- keys ------------------------------------------------------------------------------------------
    def key(self, key: str) -> bool:
        """Handle ``"left"``, ``"right"`` (metric) or ``"up"``, ``"down"`` (full/recent); ``True`` if the view
        changed."""
        if key in ("left", "right") and self.names:
            step = 1 if key == "right" else -1
            self.selected = (self.selected + step) % len(self.names)
            return True
        if key in ("up", "down"):
            self.kind = 1 - self.kind
            return True
        return False

    # -- drawing ---------------------------------------------------------------------------------------
    def series(self, name: str) -> dict[str, tuple[list[float], list[float]]]:
        """``{split: (xs, ys)}`` of ``name`` in the current view (finite values). The recent history is the span of
        the last ``recent`` points of the densest split, the same x range for both splits."""
        out = {}
        with self._lock:
            pts = {s: [(x, y) for x, y in zip(*self._points.get((s, name), ([], []))) if math.isfinite(y)]
                   for s in _SPLITS}
        if self.kind == 1:
            starts = [p[-self.recent][0] if len(p) >= self.recent else p[0][0] for p in pts.values() if p]
            cutoff = max(starts, default=0.0)
            pts = {s: [q for q in p if q[0] >= cutoff] for s, p in pts.items()}
        for split, p in pts.items():
            if p:
                out[split] = ([q[0] for q in p], [q[1] for q in p])
        return out

    def render(self, width: int = 100, height: int = 12) -> Text:
        """The panel as rich text: the metric tabs, the view, one summary line per split and the chart
        (``height`` chart lines inside a ``width``-wide frame)."""
        text = Text()
        if not self.names:
            return Text("Plots: waiting for the first numeric metric…", style="dim")
        name = self.names[self.selected % len(self.names)]
        text.append("Plots ", style="bold")
        for n in self.names:
            text.append(f" {n} ", style="reverse bold" if n == name else "")
        text.append(f"   ◀ ▶ metric   ▲ ▼ {_KINDS[1 - self.kind].lower()}\n", style="dim")
        series = self.series(name)
        for split, (_, ys) in series.items():
            text.append(f"{split}: last {ys[-1]:.5g}  min {min(ys):.5g}  max {max(ys):.5g}   ",
                        style="cyan" if split == "train" else "magenta")
        text.append("\n")
        if not series:
            text.append("no values yet", style="dim")
            return text
        text.append_text(Text.from_ansi(_chart(name, _KINDS[self.kind], series, width, height)))
        return text


def _chart(name: str, kind: str, series: dict[str, tuple[list[float], list[float]]], width: int,
           height: int) -> str:
    from uniplot import plot_to_string

    labels = list(series)
    xs = [series[s][0] for s in labels]
    ys = [series[s][1] for s in labels]
    lo = min(min(y) for y in ys)
    hi = max(max(y) for y in ys)
    if hi <= lo:
        lo, hi = lo - 0.5, hi + 0.5
    # the x range is the data's own (uniplot's padding put a "-0.0 ep" label left of the first epoch)
    x_lo = min(min(x) for x in xs)
    x_hi = max(max(x) for x in xs)
    if x_hi <= x_lo:
        x_hi = x_lo + 1.0
    opts: dict[str, Any] = dict(width=max(10, width - 12), height=max(3, height), lines=True, title=f"{name} — {kind}",
                                legend_labels=labels, color=["blue" if s == "train" else "magenta" for s in labels],
                                y_min=lo, y_max=hi, x_min=x_lo, x_max=x_hi, y_gridlines=[], x_gridlines=[],
                                x_unit=" ep",
                                line_length_hard_cap=width)
    return str(plot_to_string(ys, xs, **opts)).rstrip("\n")
