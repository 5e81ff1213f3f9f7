"""One metric's figure (matplotlib, without pyplot's global state) and the plot folder: ``<Metric>.png`` files and
``index.html``, all written atomically."""

from __future__ import annotations

import html
import importlib.util
import io
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ember.record._atomic import atomic_write

from .._errors import LearnerError
from ..metric._base import file_name

__all__ = ["Curve", "metric_figure", "save_figure", "write_plots", "matplotlib_missing", "require_matplotlib"]



def _enable() -> str:
    from ember._install import install_command

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


@dataclass
class Curve:
    """One series of a metric: a split of a run.

    Attributes:
        label: the legend entry (``"train"``, ``"valid"``, or ``"<run> train"`` when comparing runs).
        iteration_x / iteration_y: per-iteration values; x in epochs (iteration ``i`` of ``n`` in epoch ``e`` is
            at ``e - 1 + i / n``), so that train and valid share the axis: the validation pass that follows
            epoch ``e`` is spread over ``(e - 1, e]``.
        epoch_x / epoch_y: the epoch means (count-weighted), x the epoch.
    """

    label: str
    iteration_x: list[float] = field(default_factory=list)
    iteration_y: list[float] = field(default_factory=list)
    epoch_x: list[int] = field(default_factory=list)
    epoch_y: list[float] = field(default_factory=list)

    @staticmethod
    def build(label: str, iterations: Mapping[int, Sequence[float]], means: Mapping[int, float],
              per_epoch: int | None = None) -> Curve:
        """From ``{epoch: per-iteration values}`` and ``{epoch: mean}``; ``per_epoch`` is the loader's length
        (default: the epoch's number of values)."""
        c = Curve(label)
        for epoch in sorted(iterations):
            vals = iterations[epoch]
            n = max(per_epoch or 0, len(vals), 1)
            c.iteration_x.extend(epoch - 1 + (i + 1) / n for i in range(len(vals)))
            c.iteration_y.extend(float(v) for v in vals)
        for epoch in sorted(means):
            c.epoch_x.append(epoch)
            c.epoch_y.append(float(means[epoch]))
        return c


def metric_figure(name: str, curves: Sequence[Curve]) -> Any:
    """A ``matplotlib.figure.Figure`` with two axes: ``fig.axes[0]`` per iteration, ``fig.axes[1]`` per epoch,
    each with one line per curve (in order, labelled). Built without pyplot, so it never touches the user's
    backend or open figures."""
    require_matplotlib()
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11, 4))
    # fixed margins: a layout engine ("constrained", tight_layout) draws the figure once more, doubling its cost
    fig.subplots_adjust(left=0.07, right=0.99, bottom=0.12, top=0.91, wspace=0.2)
    ax_it, ax_ep = fig.subplots(1, 2)
    for i, c in enumerate(curves):
        color = f"C{i}"
        ax_it.plot(c.iteration_x, c.iteration_y, color=color, linewidth=0.8, label=c.label)
        ax_ep.plot(c.epoch_x, c.epoch_y, color=color, marker="o", label=c.label)
    ax_it.set_title(f"{name} per iteration")
    ax_it.set_xlabel("epoch")
    ax_ep.set_title(f"{name} per epoch (mean)")
    ax_ep.set_xlabel("epoch")
    ax_ep.xaxis.get_major_locator().set_params(integer=True)
    for ax in (ax_it, ax_ep):
        ax.set_ylabel(name)
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
                title: str = "Ember metrics") -> list[Path]:
    """Write ``<directory>/<Metric>.png`` for each metric and ``<directory>/index.html`` showing them all (it
    reloads itself every 30 s), each file atomically. Returns the paths written, ``index.html`` last.

    Raises:
        LearnerError: matplotlib is not installed.
    """
    out = Path(directory)
    written = []
    for name, curves in metrics.items():
        fig = metric_figure(name, curves)
        written.append(save_figure(fig, out / f"{file_name(name)}.png"))
    page = _index(title, list(metrics)).encode("utf-8")
    written.append(atomic_write(out / "index.html", lambda f: f.write(page)))
    return written
