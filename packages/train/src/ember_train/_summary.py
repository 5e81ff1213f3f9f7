"""``LearnerSummary`` (Burn's): best and last epoch value of every numeric metric, per split.

Built from the metric log files of an artifact directory (``train|valid/epoch-N/<Metric>.log``), so
``ember-train summary ARTIFACT_DIR`` gives the same table after the fact. The Learner also saves it as
``summary.txt`` (the table) and ``summary.json`` (the numbers and each metric's direction).
"""

from __future__ import annotations

import json
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._store import aggregate_entries
from .metric._base import NumericEntry

__all__ = ["LearnerSummary", "MetricSummary", "format_value", "known_unit", "metric_names", "metric_units",
           "read_entries", "read_history"]


@dataclass(frozen=True)
class MetricSummary:
    """One metric of one split: ``history`` is ``[(epoch, value)]``; ``higher_is_better`` may be ``None``;
    ``unit`` is the metric's (``"%"`` for accuracies, ``""`` for none)."""

    split: str
    name: str
    history: list[tuple[int, float]]
    higher_is_better: bool | None = None
    unit: str = ""

    @property
    def best(self) -> tuple[int, float]:
        """``(epoch, value)`` of the best epoch (the minimum when the direction is unknown)."""
        if self.higher_is_better:
            return max(self.history, key=lambda ev: (ev[1], -ev[0]))
        return min(self.history, key=lambda ev: (ev[1], ev[0]))

    @property
    def last(self) -> tuple[int, float]:
        return self.history[-1]


def read_entries(split_dir: Path) -> dict[str, dict[int, list[NumericEntry]]]:
    """``{metric file stem: {epoch: entries}}`` from ``<split_dir>/epoch-N/*.log``, epochs in order; files holding
    a line that is not a numeric entry (a generic metric's) are left out."""
    out: dict[str, dict[int, list[NumericEntry]]] = {}
    if not split_dir.is_dir():
        return out
    epochs = []
    for d in split_dir.iterdir():
        m = re.fullmatch(r"epoch-(\d+)", d.name)
        if m and d.is_dir():
            epochs.append((int(m.group(1)), d))
    for epoch, d in sorted(epochs):
        for f in sorted(d.glob("*.log")):
            entries = []
            for line in f.read_text(encoding="utf-8").splitlines():
                try:
                    entries.append(NumericEntry.deserialize(line))
                except ValueError:
                    entries = []
                    break
            if entries:
                out.setdefault(f.stem, {})[epoch] = entries
    return out


def read_history(split_dir: Path) -> dict[str, list[tuple[int, float]]]:
    """``{metric file stem: [(epoch, epoch mean)]}`` from ``<split_dir>/epoch-N/*.log``."""
    out: dict[str, list[tuple[int, float]]] = {}
    for stem, epochs in read_entries(split_dir).items():
        for epoch, entries in epochs.items():
            v = aggregate_entries(entries)
            if not math.isnan(v):
                out.setdefault(stem, []).append((epoch, v))
    return out


def metric_names(artifact_dir: Path) -> dict[str, str]:
    """``{file stem: metric name}`` from ``summary.json`` (empty when it is missing or unreadable)."""
    try:
        data = json.loads((artifact_dir / "summary.json").read_text(encoding="utf-8"))
        return {m["file"]: m["name"] for m in data.get("metrics", [])}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}


_HIGHER = ("Accuracy", "Top-K Accuracy", "Precision", "Recall", "FBetaScore", "AUROC", "Hamming Score",
           "Iteration Speed")


def known_direction(name: str) -> bool | None:
    """``higher_is_better`` of a built-in metric name (``None`` for others)."""
    if name == "Loss":
        return False
    return True if name.startswith(_HIGHER) else None


_UNITS = {"Accuracy": "%", "Top-K Accuracy": "%", "CPU Usage": "%", "CPU Memory": "GB", "CPU Temperature": "°C",
          "Iteration Speed": "iter/s"}


def known_unit(name: str) -> str:
    """The unit of a built-in metric name (``"%"`` for the accuracies), ``""`` for others."""
    return next((u for n, u in _UNITS.items() if name.startswith(n)), "")


def metric_units(artifact_dir: Path) -> dict[str, str]:
    """``{metric name: unit}`` from ``summary.json`` (the built-in units where it is missing or has none)."""
    try:
        data = json.loads((artifact_dir / "summary.json").read_text(encoding="utf-8"))
        return {m["name"]: m.get("unit", known_unit(m["name"])) for m in data.get("metrics", [])}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}


def format_value(v: float, unit: str = "") -> str:
    """One value as the summary shows it: a percentage with 2 decimals (``"92.82 %"``), anything else with 4
    significant digits (``"0.2345"``, ``"1.235e+04"``) and its unit (``"12.34 iter/s"``)."""
    unit = unit.strip()
    if not math.isfinite(v):
        text = str(v)
    elif unit == "%":
        text = f"{v:.2f}"
    else:
        text = f"{v:#.4g}"
        mantissa, e, exp = text.partition("e")
        text = mantissa.rstrip(".") + e + exp
    return f"{text} {unit}" if unit else text


@dataclass
class LearnerSummary:
    """The end-of-training summary (Burn's ``LearnerSummary``).

    Attributes:
        metrics: one :class:`MetricSummary` per (split, metric), train first.
        epochs: the number of epochs trained (the last epoch with logs).
        model: a description of the model (its repr and parameter count), may be empty.
    """

    metrics: list[MetricSummary] = field(default_factory=list)
    epochs: int = 0
    model: str = ""

    @staticmethod
    def from_dir(artifact_dir: str | os.PathLike[str], directions: dict[str, bool | None] | None = None,
                 model: str = "") -> LearnerSummary:
        """Read the summary of an artifact directory.

        Args:
            directions: ``{metric name or file stem: higher_is_better}``; by default read from
                ``summary.json`` when present, else the minimum is reported as best.

        Raises:
            FileNotFoundError: ``artifact_dir`` has neither ``train/`` nor ``valid/`` logs.
        """
        root = Path(artifact_dir)
        if not (root / "train").is_dir() and not (root / "valid").is_dir():
            raise FileNotFoundError(
                f"{root} holds no training logs (train/epoch-N/*.log or valid/...); is it a Learner artifact directory?"
            )
        names: dict[str, str] = {}
        units: dict[str, str] = {}
        if directions is None:
            directions = {}
            saved = root / "summary.json"
            if saved.exists():
                try:
                    data = json.loads(saved.read_text(encoding="utf-8"))
                    for m in data.get("metrics", []):
                        directions[m["file"]] = m.get("higher_is_better")
                        names[m["file"]] = m["name"]
                        if "unit" in m:
                            units[m["file"]] = m["unit"]
                    model = model or data.get("model", "")
                except (ValueError, KeyError, TypeError):
                    pass
        out = LearnerSummary(model=model)
        order = {stem: i for i, stem in enumerate(names)}
        for split in ("train", "valid"):
            hists = sorted(read_history(root / split).items(), key=lambda kv: (order.get(kv[0], len(order)), kv[0]))
            for stem, hist in hists:
                name = names.get(stem, stem.replace("_", " "))
                hib = directions.get(stem, directions.get(name, known_direction(name)))
                out.metrics.append(MetricSummary(split, name, hist, hib, units.get(stem, known_unit(name))))
                out.epochs = max(out.epochs, hist[-1][0])
        return out

    def to_json(self) -> dict[str, Any]:
        from .metric._base import file_name

        return {
            "epochs": self.epochs,
            "model": self.model,
            "metrics": [
                {"split": m.split, "name": m.name, "file": file_name(m.name), "higher_is_better": m.higher_is_better,
                 "unit": m.unit,
                 "best": {"epoch": m.best[0], "value": m.best[1]}, "last": {"epoch": m.last[0], "value": m.last[1]},
                 "history": [[e, v] for e, v in m.history]}
                for m in self.metrics
            ],
        }

    def rows(self) -> list[tuple[str, str, str, str, str]]:
        """``(split, metric, best, best epoch, last)`` strings, as the table shows them (:func:`format_value`: a
        percentage with 2 decimals, anything else with 4 significant digits, with the metric's unit); a metric
        without a direction (``higher_is_better is None``, e.g. the learning rate) shows its minimum, marked
        ``(min)``."""
        rows = []
        for m in self.metrics:
            be, bv = m.best
            best = format_value(bv, m.unit)
            best = best if m.higher_is_better is not None else f"{best} (min)"
            rows.append((m.split.capitalize(), m.name, best, str(be), format_value(m.last[1], m.unit)))
        return rows

    def table(self) -> str:
        """The summary as text (Burn's layout, with a Last column)."""
        header = ("Split", "Metric", "Best", "Epoch", "Last")
        rows = self.rows()
        widths = [max(len(r[i]) for r in [header, *rows]) for i in range(5)]

        def line(cells: tuple[str, ...]) -> str:
            return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths)) + " |"

        title = " Learner Summary "
        out = [title.center(64, "=")]
        if self.model:
            out.append(f"Model: {self.model}")
        out.append(f"Total Epochs: {self.epochs}")
        out.append("")
        out.append(line(header))
        out.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
        out.extend(line(r) for r in rows)
        return "\n".join(out) + "\n"

    __str__ = table

    def save(self, artifact_dir: str | os.PathLike[str]) -> None:
        """Write ``summary.txt`` and ``summary.json`` in ``artifact_dir``."""
        from ember.record import atomic_write

        root = Path(artifact_dir)
        table = self.table().encode("utf-8")
        doc = json.dumps(self.to_json(), indent=1).encode("utf-8")
        atomic_write(root / "summary.txt", lambda f: f.write(table))  # atomically, as every file Ember writes
        atomic_write(root / "summary.json", lambda f: f.write(doc))
