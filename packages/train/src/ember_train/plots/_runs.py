"""Curves of finished runs, read from their metric logs alone (``ember-train plot DIR --compare OTHER``)."""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path

from .._store import aggregate_entries
from .._summary import known_unit, metric_names, metric_units, read_entries
from ._figure import Curve, write_plots

__all__ = ["run_curves", "plot_runs"]


def run_curves(artifact_dir: str | os.PathLike[str], label: str = "") -> dict[str, list[Curve]]:
    """``{metric name: [train curve, valid curve]}`` of one artifact directory's ``train|valid/epoch-N/*.log``;
    curve labels are ``"<label> <split>"`` (just the split without ``label``).

    Raises:
        FileNotFoundError: ``artifact_dir`` has neither ``train/`` nor ``valid/`` logs.
    """
    root = Path(artifact_dir)
    if not (root / "train").is_dir() and not (root / "valid").is_dir():
        raise FileNotFoundError(
            f"{root} holds no training logs (train/epoch-N/*.log or valid/...); is it a Learner artifact directory?"
        )
    names = metric_names(root)
    out: dict[str, list[Curve]] = {}
    for split in ("train", "valid"):
        for stem, epochs in read_entries(root / split).items():
            means = {e: v for e, es in epochs.items() if not math.isnan(v := aggregate_entries(es))}
            values = {e: [x.value for x in es] for e, es in epochs.items()}
            name = names.get(stem, stem.replace("_", " "))
            out.setdefault(name, []).append(Curve.build(f"{label} {split}".strip(), values, means,
                                                        at_epoch_end=split == "valid"))
    return out


def _labels(dirs: Sequence[Path]) -> list[str]:
    """Each run's folder name, or its whole path where two runs share a name."""
    names = [d.name or str(d) for d in dirs]
    return [str(d) if names.count(n) > 1 else n for d, n in zip(dirs, names)]


def plot_runs(artifact_dirs: Sequence[str | os.PathLike[str]], output: str | os.PathLike[str]) -> list[Path]:
    """Write ``<output>/<Metric>.png``, ``curves.json`` and ``index.html`` with the curves of every run in
    ``artifact_dirs`` (one run: train and valid; several: each run's train and valid, labelled by folder).

    Raises:
        FileNotFoundError: a directory holds no metric logs.
        LearnerError: matplotlib is not installed.
    """
    dirs = [Path(d) for d in artifact_dirs]
    labels = _labels(dirs) if len(dirs) > 1 else [""]
    metrics: dict[str, list[Curve]] = {}
    units: dict[str, str] = {}
    for d, label in zip(dirs, labels):
        for name, curves in run_curves(d, label).items():
            metrics.setdefault(name, []).extend(curves)
        units = {**metric_units(d), **units}
    title = "Ember metrics: " + ", ".join(str(d) for d in dirs)
    return write_plots(output, metrics, title, {n: units.get(n, known_unit(n)) for n in metrics})
