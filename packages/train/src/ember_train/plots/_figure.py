"""One metric's figure (matplotlib, without pyplot's global state) and the plot folder: ``<Metric>.png`` files and
``index.html``, all written atomically."""

from __future__ import annotations

import html
import importlib.util
import io
import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ember.record import atomic_write

from .._errors import LearnerError
from ..metric._base import file_name

__all__ = ["Curve", "axis_label", "metric_figure", "save_figure", "write_plots", "matplotlib_missing",
           "require_matplotlib"]


def _enable() -> str:
    from ember import install_command

    return f"{install_command('ember-train', 'plot')} (or pip install matplotlib)"


def matplotlib_missing() -> str | None:
    """``None`` when matplotlib can be imported, else the sentence that says how to enable plots."""
    if importlib.util.find_spec("matplotlib") is not None:
        return None
    return (f"matplotlib is not installed; {_enable()} to get plots/<Metric>.png, or LearnerBuilder.plots(False) "
            "to silence this note.")


def require_matplotlib() -> None:
    """Raises: LearnerError: matplotlib is not installed (the message says how to install it)."""
    if matplotlib_missing() is not None:
        raise LearnerError(f"Plotting needs matplotlib, which is not installed: {_enable()}. "
                           "`ember-train summary DIR` works without it.")


def axis_label(name: str, unit: str = "") -> str:
    """The y-axis label of a metric: its name and its unit in parentheses (``"Accuracy (%)"``, ``"Loss"``)."""
    unit = unit.strip()
    return f"{name} ({unit})" if unit else name


@dataclass
class Curve:
    """One series of a metric: a split of a run.

    Both splits share one axis, the training progress in epochs: training iteration ``i`` of ``n`` in epoch ``e``
    is at ``e - 1 + i / n``, and the validation that follows epoch ``e`` sees the model as it is at the end of that
    epoch, so it is placed at ``e`` (``at_epoch_end``).

    Attributes:
        label: the legend entry (``"train"``, ``"valid"``, or ``"<run> train"`` when comparing runs).
        iteration_x / iteration_y: the per-iteration panel's points, x in epochs: each training iteration, or for
            a curve ``at_epoch_end`` (validation) each epoch's mean at the epoch's end.
        epoch_x / epoch_y: the epoch means (count-weighted), x the epoch.
        at_epoch_end: the per-iteration panel shows the epoch means at the end of each epoch (validation).
    """

    label: str
    iteration_x: list[float] = field(default_factory=list)
    iteration_y: list[float] = field(default_factory=list)
    epoch_x: list[int] = field(default_factory=list)
    epoch_y: list[float] = field(default_factory=list)
    at_epoch_end: bool = False

    @staticmethod
    def build(label: str, iterations: Mapping[int, Sequence[float]], means: Mapping[int, float],
              per_epoch: int | None = None, at_epoch_end: bool = False) -> Curve:
        """From ``{epoch: per-iteration values}`` and ``{epoch: mean}``; ``per_epoch`` is the loader's length
        (default: the epoch's number of values). ``at_epoch_end`` (validation): the per-iteration panel gets the
        epoch means at ``x = epoch`` instead of the per-iteration values."""
        c = Curve(label, at_epoch_end=at_epoch_end)
        if not at_epoch_end:
            for epoch in sorted(iterations):
                vals = iterations[epoch]
                n = max(per_epoch or 0, len(vals), 1)
                c.iteration_x.extend(epoch - 1 + (i + 1) / n for i in range(len(vals)))
                c.iteration_y.extend(float(v) for v in vals)
        for epoch in sorted(means):
            c.epoch_x.append(epoch)
            c.epoch_y.append(float(means[epoch]))
            if at_epoch_end:
                c.iteration_x.append(float(epoch))
                c.iteration_y.append(float(means[epoch]))
        return c

    def to_json(self) -> dict[str, Any]:
        """The points as JSON (a non-finite value as ``null``)."""
        def ys(v: list[float]) -> list[float | None]:
            return [y if math.isfinite(y) else None for y in v]

        return {"label": self.label, "at_epoch_end": self.at_epoch_end,
                "iteration": {"x": self.iteration_x, "y": ys(self.iteration_y)},
                "epoch": {"x": self.epoch_x, "y": ys(self.epoch_y)}}


#: the x-axis labels of the two panels
ITERATION_XLABEL = "training progress (epochs); validation at the end of each epoch"
EPOCH_XLABEL = "epoch"


def metric_figure(name: str, curves: Sequence[Curve], unit: str = "") -> Any:
    """A ``matplotlib.figure.Figure`` with two axes: ``fig.axes[0]`` per iteration, ``fig.axes[1]`` per epoch,
    each with one line per curve (in order, labelled), the y axis labelled with ``unit`` (``"%"``). On the
    per-iteration axes a validation curve (``at_epoch_end``) is a line of markers at the end of each epoch, and
    a training curve with few points gets markers too (a 1-epoch run shows its iterations and the validation
    point). Built without pyplot, so it never touches the user's backend or open figures."""
    require_matplotlib()
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11, 4))
    # fixed margins: a layout engine ("constrained", tight_layout) draws the figure once more, doubling its cost
    fig.subplots_adjust(left=0.07, right=0.99, bottom=0.13, top=0.91, wspace=0.2)
    ax_it, ax_ep = fig.subplots(1, 2)
    for i, c in enumerate(curves):
        color = f"C{i}"
        if c.at_epoch_end:
            ax_it.plot(c.iteration_x, c.iteration_y, color=color, linewidth=1.2, marker="D", markersize=5,
                       label=f"{c.label} (end of epoch)")
        else:
            ax_it.plot(c.iteration_x, c.iteration_y, color=color, linewidth=0.8,
                       marker="." if len(c.iteration_x) <= 60 else None, label=c.label)
        ax_ep.plot(c.epoch_x, c.epoch_y, color=color, marker="o", label=c.label)
    ax_it.set_title(f"{name} per training iteration")
    ax_it.set_xlabel(ITERATION_XLABEL)
    xs = [x for c in curves for x in c.iteration_x]
    if xs:
        ax_it.set_xlim(min(0.0, min(xs)), max(xs) + 0.03 * max(1.0, max(xs)))
    ax_ep.set_title(f"{name} per epoch (mean)")
    ax_ep.set_xlabel(EPOCH_XLABEL)
    ax_ep.xaxis.get_major_locator().set_params(integer=True)
    epochs = sorted({e for c in curves for e in c.epoch_x})
    if len(epochs) == 1:  # one epoch: a whole-number tick at it, not a zoom into [0.96, 1.04]
        ax_ep.set_xlim(epochs[0] - 0.5, epochs[0] + 0.5)
        ax_ep.set_xticks(epochs)
    for ax in (ax_it, ax_ep):
        ax.set_ylabel(axis_label(name, unit))
        ax.grid(True, alpha=0.3)
        if curves:
            ax.legend()
    return fig


def save_figure(fig: Any, path: str | os.PathLike[str]) -> Path:
    """Render ``fig`` as PNG and write it atomically (a reader never sees a half-written image)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, pil_kwargs={"compress_level": 1})  # zlib level 1: faster, ~10 % larger
    data = buf.getvalue()
    return atomic_write(path, lambda f: f.write(data))


def _index(title: str, names: Sequence[str]) -> str:
    body = "\n".join(
        f'<h2>{html.escape(n)}</h2>\n<img src="{html.escape(file_name(n))}.png" alt="{html.escape(n)}">'
        for n in names)
    return (f'<!doctype html>\n<html><head><meta charset="utf-8"><meta http-equiv="refresh" content="30">\n'
            f"<title>{html.escape(title)}</title>\n<style>body{{font-family:sans-serif}}img{{max-width:100%}}</style>"
            f"</head>\n<body><h1>{html.escape(title)}</h1>\n{body}\n</body></html>\n")


def write_plots(directory: str | os.PathLike[str], metrics: Mapping[str, Sequence[Curve]],
                title: str = "Ember metrics", units: Mapping[str, str] | None = None) -> list[Path]:
    """Write ``<directory>/<Metric>.png`` for each metric, ``<directory>/curves.json`` (the plotted points, the
    axis labels and units: ``{metric: {"unit", "ylabel", "xlabel": {"iteration", "epoch"}, "curves": [...]}}``) and
    ``<directory>/index.html`` showing them all (it reloads itself every 30 s), each file atomically. ``units``:
    ``{metric: unit}`` (``"%"``; none by default). Returns the paths written, ``index.html`` last.

    Raises:
        LearnerError: matplotlib is not installed.
    """
    out = Path(directory)
    units = units or {}
    written = []
    data: dict[str, Any] = {}
    for name, curves in metrics.items():
        unit = units.get(name, "")
        fig = metric_figure(name, curves, unit)
        written.append(save_figure(fig, out / f"{file_name(name)}.png"))
        data[name] = {"unit": unit.strip(), "ylabel": axis_label(name, unit),
                      "xlabel": {"iteration": ITERATION_XLABEL, "epoch": EPOCH_XLABEL},
                      "curves": [c.to_json() for c in curves]}
    blob = json.dumps(data, indent=1).encode("utf-8")
    written.append(atomic_write(out / "curves.json", lambda f: f.write(blob)))
    page = _index(title, list(metrics)).encode("utf-8")
    written.append(atomic_write(out / "index.html", lambda f: f.write(page)))
    return written
