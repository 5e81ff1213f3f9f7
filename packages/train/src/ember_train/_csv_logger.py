"""``CsvLogger``: every metric value of a run in one CSV file (Keras' ``CSVLogger``, Lightning's ``CSVLogger``)."""

from __future__ import annotations

import csv
import io
import os
from pathlib import Path
from typing import IO, Any

from ember.record import atomic_write

from ._errors import LearnerError
from ._tracking import RunInfo, TrackingLogger

__all__ = ["CsvLogger", "CSV_COLUMNS"]

#: the header row; ``iteration`` and ``step`` are empty on the epoch-mean rows
CSV_COLUMNS = ("split", "epoch", "iteration", "step", "metric", "value")


class CsvLogger(TrackingLogger):
    """Appends one row per step and metric and one per epoch and metric to ``path``.

    Columns (:data:`CSV_COLUMNS`): ``split`` (``train``/``valid``), ``epoch`` (1-based), ``iteration`` (1-based in
    the epoch; empty on an epoch-mean row), ``step`` (the split's global iteration; empty on an epoch-mean row),
    ``metric`` (its name, e.g. ``Loss``), ``value`` (``repr`` of the float: it reads back exactly; ``nan``/``inf``
    as Python writes them). The epoch mean is the count-weighted mean of the epoch's iterations, as in the summary.

    A fresh run truncates the file; a resumed run (``LearnerBuilder.checkpoint``) keeps the rows before its resume
    point (:meth:`ResumePoint.keeps`), rewritten atomically, and appends after them. Rows are flushed at each
    logging interval and epoch end.

    Args:
        path: the CSV file; a relative path is taken inside the artifact directory (default ``metrics.csv``).

    Raises:
        LearnerError: (at the start of ``fit``) an existing file to resume whose header is not :data:`CSV_COLUMNS`.
    """

    def __init__(self, path: str | os.PathLike[str] = "metrics.csv") -> None:
        self.path = Path(path)
        self._file: IO[str] | None = None
        self._rows: Any = None  # the csv writer on the open file

    def start(self, run: RunInfo) -> None:
        path = self.path if self.path.is_absolute() else run.artifact_dir / self.path
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        kept: list[list[str]] = []
        if run.resume is not None and path.exists():
            with open(path, newline="", encoding="utf-8") as f:
                rows = list(csv.reader(f))
            if rows and tuple(rows[0]) != CSV_COLUMNS:
                raise LearnerError(
                    f"CsvLogger: {path} has the columns {rows[0]}, expected {list(CSV_COLUMNS)}; it was not written "
                    "by CsvLogger. Move it away or give CsvLogger another path."
                )
            resume = run.resume
            kept = [r for r in rows[1:] if len(r) == len(CSV_COLUMNS)
                    and resume.keeps(r[0], int(r[1]), int(r[2]) if r[2] else None)]
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(CSV_COLUMNS)
        w.writerows(kept)
        data = buf.getvalue().encode("utf-8")
        atomic_write(path, lambda f: f.write(data))
        self._file = open(path, "a", newline="", encoding="utf-8")  # noqa: SIM115 - kept open for the run
        self._rows = csv.writer(self._file, lineterminator="\n")

    def log_iteration(self, split: str, name: str, value: float, epoch: int, iteration: int, step: int) -> None:
        self._rows.writerow((split, epoch, iteration, step, name, repr(float(value))))

    def log_epoch(self, split: str, name: str, value: float, epoch: int) -> None:
        self._rows.writerow((split, epoch, "", "", name, repr(float(value))))

    def flush(self) -> None:
        if self._file is not None:
            self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def __repr__(self) -> str:
        return f"CsvLogger({str(self.path)!r})"
