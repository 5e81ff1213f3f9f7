"""Metric loggers (Burn's ``MetricLogger``, ``FileMetricLogger``, ``InMemoryMetricLogger``).

Layout of :class:`FileMetricLogger` (Burn's): ``<directory>/epoch-<N>/<Metric>.log``, one line per
iteration, the entry's ``serialize`` string (numeric metrics: ``value,count``).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import IO, Protocol, runtime_checkable

from ember.record import atomic_write

from .metric._base import MetricEntry, NumericEntry, file_name

__all__ = ["MetricLogger", "FileMetricLogger", "InMemoryMetricLogger"]


@runtime_checkable
class MetricLogger(Protocol):
    """What the Learner calls on each logger of a split (train or valid).

    ``start_epoch(epoch, keep)`` begins epoch ``epoch`` keeping the first ``keep`` iterations already
    logged (0: start afresh; > 0: resuming an interrupted epoch); ``log(entry)`` records one iteration's
    entry; ``flush()`` makes the entries durable; ``end_epoch(epoch)`` closes the epoch;
    ``read_numeric(name, epoch)`` returns the numeric entries logged (``[]`` when unknown).
    """

    def start_epoch(self, epoch: int, keep: int = 0) -> None: ...
    def log(self, entry: MetricEntry) -> None: ...
    def flush(self) -> None: ...
    def end_epoch(self, epoch: int) -> None: ...
    def read_numeric(self, name: str, epoch: int) -> list[NumericEntry]: ...


class FileMetricLogger:
    """Writes each metric's entries to ``<directory>/epoch-<N>/<Metric>.log`` (Burn's ``FileMetricLogger``).

    Args:
        directory: e.g. ``<artifact_dir>/train``; created when missing.
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        self._epoch = 1
        self._files: dict[str, IO[str]] = {}
        self._keep = 0

    def epoch_dir(self, epoch: int) -> Path:
        return self.directory / f"epoch-{epoch}"

    def start_epoch(self, epoch: int, keep: int = 0) -> None:
        self._close_files()
        self._epoch = epoch
        self._keep = keep
        d = self.epoch_dir(epoch)
        if keep == 0 and d.exists():
            shutil.rmtree(d)  # left by a run that was killed or interrupted during this epoch
        d.mkdir(parents=True, exist_ok=True)

    def _file(self, name: str) -> IO[str]:
        f = self._files.get(name)
        if f is None:
            path = self.epoch_dir(self._epoch) / f"{file_name(name)}.log"
            if self._keep and path.exists():
                lines = path.read_text(encoding="utf-8").splitlines()[: self._keep]
                data = "".join(line + "\n" for line in lines).encode("utf-8")
                # atomically: a kill while cutting the lines of a resumed epoch must not lose the kept ones
                atomic_write(path, lambda f: f.write(data))
                f = open(path, "a", encoding="utf-8")  # noqa: SIM115 - kept open for the epoch
            else:
                f = open(path, "w", encoding="utf-8")  # noqa: SIM115
            self._files[name] = f
        return f

    def log(self, entry: MetricEntry) -> None:
        self._file(entry.name).write(entry.serialize + "\n")

    def flush(self) -> None:
        for f in self._files.values():
            f.flush()

    def end_epoch(self, epoch: int) -> None:
        self._close_files()

    def _close_files(self) -> None:
        for f in self._files.values():
            f.close()
        self._files.clear()

    close = _close_files

    def read_numeric(self, name: str, epoch: int) -> list[NumericEntry]:
        """The numeric entries of ``name`` in epoch ``epoch`` (``[]`` when the file is missing); unparsable
        lines (a generic metric's) are skipped."""
        path = self.epoch_dir(epoch) / f"{file_name(name)}.log"
        if not path.exists():
            return []
        out = []
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                out.append(NumericEntry.deserialize(line))
            except ValueError:
                continue
        return out

    def __repr__(self) -> str:
        return f"FileMetricLogger({str(self.directory)!r})"


class InMemoryMetricLogger:
    """Keeps the entries in memory (Burn's ``InMemoryMetricLogger``): ``values[epoch][name]`` is the list
    of serialized lines. Useful in tests and notebooks."""

    def __init__(self) -> None:
        self.values: dict[int, dict[str, list[str]]] = {}
        self._epoch = 1

    def start_epoch(self, epoch: int, keep: int = 0) -> None:
        self._epoch = epoch
        cur = self.values.setdefault(epoch, {})
        for k in list(cur):
            cur[k] = cur[k][:keep]

    def log(self, entry: MetricEntry) -> None:
        self.values.setdefault(self._epoch, {}).setdefault(entry.name, []).append(entry.serialize)

    def flush(self) -> None:
        pass

    def end_epoch(self, epoch: int) -> None:
        pass

    def read_numeric(self, name: str, epoch: int) -> list[NumericEntry]:
        out = []
        for line in self.values.get(epoch, {}).get(name, []):
            try:
                out.append(NumericEntry.deserialize(line))
            except ValueError:
                continue
        return out
