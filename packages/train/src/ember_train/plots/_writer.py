"""``PlotWriter``: the Learner's plots, redrawn at each epoch end from the values it was given."""

from __future__ import annotations

import os
from pathlib import Path

from .._tracking import RunInfo, TrackingLogger
from ._figure import Curve, write_plots

__all__ = ["PlotWriter"]


class PlotWriter(TrackingLogger):
    """Writes ``<directory>/<Metric>.png`` (train and valid, per iteration and per epoch), ``curves.json`` (the
    points plotted) and ``index.html`` at each epoch end, and once more when ``fit`` ends inside an epoch. The
    Learner adds one (``plots/`` in the artifact directory) unless ``LearnerBuilder.plots(False)``.

    Both splits share the x axis, the training progress in epochs: the training values per iteration, the
    validation of epoch ``e`` at ``e`` (where the model it saw stopped training); the y axis carries the
    metric's unit (``Accuracy (%)``). A resumed run is handed the earlier epochs' values first, so its curves
    continue those of the interrupted run.

    Args:
        directory: where the files go (created).
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        self._values: dict[tuple[str, str], dict[int, list[float]]] = {}
        self._means: dict[tuple[str, str], dict[int, float]] = {}
        self._per_epoch: dict[str, int | None] = {}
        self._units: dict[str, str] = {}
        self._dirty = False

    def start(self, run: RunInfo) -> None:
        self._per_epoch = dict(run.iterations_per_epoch)
        self._units = dict(run.units)

    def restore(self, split: str, name: str, epoch: int, values: list[float], mean: float | None) -> None:
        self._values.setdefault((split, name), {})[epoch] = list(values)
        if mean is not None:
            self._means.setdefault((split, name), {})[epoch] = mean

    def log_iteration(self, split: str, name: str, value: float, epoch: int, iteration: int, step: int) -> None:
        vals = self._values.setdefault((split, name), {}).setdefault(epoch, [])
        del vals[iteration - 1:]  # an epoch that restarts drops what it logged before
        vals.append(value)
        self._dirty = True

    def log_epoch(self, split: str, name: str, value: float, epoch: int) -> None:
        self._means.setdefault((split, name), {})[epoch] = value
        self._dirty = True

    def curves(self) -> dict[str, list[Curve]]:
        """``{metric: [train curve, valid curve]}`` of what was logged so far (splits without values left out)."""
        names: list[str] = []
        for _, name in list(self._values) + list(self._means):
            if name not in names:
                names.append(name)
        out: dict[str, list[Curve]] = {}
        for name in names:
            out[name] = [Curve.build(split, self._values.get((split, name), {}), self._means.get((split, name), {}),
                                     self._per_epoch.get(split), at_epoch_end=split == "valid")
                         for split in ("train", "valid")
                         if (split, name) in self._values or (split, name) in self._means]
        return out

    def end_epoch(self, epoch: int) -> None:
        self.write()

    def write(self) -> None:
        """Redraw every metric's figure and the index now."""
        write_plots(self.directory, self.curves(), units=self._units)
        self._dirty = False

    def close(self) -> None:
        if self._dirty:
            self.write()

    def __repr__(self) -> str:
        return f"PlotWriter({str(self.directory)!r})"
