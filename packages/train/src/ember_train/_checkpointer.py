"""Checkpointers (Burn's ``FileCheckpointer`` and ``LearnerCheckpointer``).

Files: ``<artifact_dir>/checkpoint/{model,optim,scheduler}-<epoch>.<ext>`` (Burn's names), each written
atomically by the recorder, in the order model, optim, scheduler: a checkpoint is *complete* when its
scheduler file exists (a run killed while saving leaves an incomplete one, which :func:`last_checkpoint`
ignores). An epoch interrupted with Ctrl-C also gets ``progress-<epoch>.json`` (the iteration reached), so
``LearnerBuilder.checkpoint(epoch)`` resumes inside it.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from ember.record import FileRecorder
from ember.record._atomic import atomic_write

from ._errors import CheckpointError

__all__ = ["FileCheckpointer", "LearnerCheckpointer", "last_checkpoint", "complete_checkpoints"]

_PARTS = ("model", "optim", "scheduler")


class FileCheckpointer:
    """Saves records as ``<directory>/<name>-<epoch>.<ext>`` with a file recorder (Burn's ``FileCheckpointer``)."""

    def __init__(self, recorder: FileRecorder, directory: str | os.PathLike[str], name: str) -> None:
        self.recorder = recorder
        self.directory = Path(directory)
        self.name = name

    def path(self, epoch: int) -> Path:
        return self.recorder.file_path(self.directory / f"{self.name}-{epoch}")

    def save(self, epoch: int, record: Any) -> Path:
        self.directory.mkdir(parents=True, exist_ok=True)
        return self.recorder.record(record, self.directory / f"{self.name}-{epoch}")

    def restore(self, epoch: int) -> Any:
        path = self.path(epoch)
        if not path.exists():
            raise CheckpointError(f"no {self.name} checkpoint for epoch {epoch}: {path} does not exist.")
        return self.recorder.load(path)

    def delete(self, epoch: int) -> None:
        try:
            self.path(epoch).unlink()
        except FileNotFoundError:
            pass


def complete_checkpoints(directory: str | os.PathLike[str]) -> list[int]:
    """Epochs with a complete checkpoint (model, optim and scheduler files) in ``directory``."""
    d = Path(directory)
    if not d.is_dir():
        return []
    found: dict[str, set[int]] = {p: set() for p in _PARTS}
    pat = re.compile(r"^(model|optim|scheduler)-(\d+)\.")
    for f in d.iterdir():
        m = pat.match(f.name)
        if m and ".tmp" not in f.name:
            found[m.group(1)].add(int(m.group(2)))
    return sorted(found["model"] & found["optim"] & found["scheduler"])


def last_checkpoint(artifact_dir: str | os.PathLike[str]) -> int | None:
    """The last epoch with a complete checkpoint under ``<artifact_dir>/checkpoint``, or ``None``:
    what to pass to ``LearnerBuilder.checkpoint`` after a crash."""
    epochs = complete_checkpoints(Path(artifact_dir) / "checkpoint")
    return epochs[-1] if epochs else None


class LearnerCheckpointer:
    """Model, optimizer and scheduler checkpointers sharing one recorder (Burn's ``LearnerCheckpointer``)."""

    def __init__(self, recorder: FileRecorder, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        self.model = FileCheckpointer(recorder, directory, "model")
        self.optim = FileCheckpointer(recorder, directory, "optim")
        self.scheduler = FileCheckpointer(recorder, directory, "scheduler")

    def progress_path(self, epoch: int) -> Path:
        return self.directory / f"progress-{epoch}.json"

    def save(self, epoch: int, model_rec: Any, optim_rec: Any, sched_rec: Any,
             progress: dict[str, Any] | None = None) -> None:
        # Order matters: a checkpoint counts as complete once the scheduler file exists.
        self.progress_path(epoch).unlink(missing_ok=True)
        self.scheduler.delete(epoch)
        self.model.save(epoch, model_rec)
        self.optim.save(epoch, optim_rec)
        if progress is not None:
            body = json.dumps(progress).encode("utf-8")
            atomic_write(self.progress_path(epoch), lambda f: f.write(body))  # fsynced, like the records
        self.scheduler.save(epoch, sched_rec)

    def progress(self, epoch: int) -> dict[str, Any] | None:
        """The in-epoch progress of an interrupted checkpoint, ``None`` for a complete epoch."""
        p = self.progress_path(epoch)
        if not p.exists():
            return None
        return json.loads(p.read_text(encoding="utf-8"))  # type: ignore[no-any-return]

    def restore(self, epoch: int) -> tuple[Any, Any, Any]:
        if epoch not in complete_checkpoints(self.directory):
            have = complete_checkpoints(self.directory)
            raise CheckpointError(
                f"no complete checkpoint for epoch {epoch} in {self.directory} (model, optim and scheduler files "
                f"are needed); complete checkpoints: {have or 'none'}. Use ember_train.last_checkpoint(artifact_dir)."
            )
        return self.model.restore(epoch), self.optim.restore(epoch), self.scheduler.restore(epoch)

    def delete(self, epoch: int) -> None:
        self.scheduler.delete(epoch)  # first: the checkpoint stops counting as complete
        self.progress_path(epoch).unlink(missing_ok=True)
        self.model.delete(epoch)
        self.optim.delete(epoch)
