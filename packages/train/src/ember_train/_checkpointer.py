"""Checkpointers (Burn's ``FileCheckpointer`` and ``LearnerCheckpointer``).

Files of checkpoint ``N`` in ``<artifact_dir>/checkpoint``: ``{model,optim,scheduler}-N.<ext>`` (Burn's names; for
an epoch interrupted after iteration ``I``: ``{model,optim,scheduler}-N-I.<ext>``), each written atomically by a
recorder, then ``manifest-N.json``, written last and atomically (``os.replace``). The manifest makes the checkpoint:
it names each part file with its size and SHA-256 digest, and says where training stands (a finished epoch, or the
iteration reached inside an interrupted one) with the run's random states. A checkpoint without a valid manifest, or
whose part files differ from what it names, is ignored. So a kill -9 at any moment of a save leaves the previous
checkpoint ``N`` (if any) or the new one, complete, never a half-written one taken for another:

- a save whose part files have other names than the current checkpoint ``N``'s (the end of an epoch that was
  interrupted and resumed) writes them beside it; replacing the manifest switches from the old checkpoint to the new
  one in one act; the old part files are removed afterwards;
- a save that would overwrite the current checkpoint ``N``'s files (a run resumed from an earlier checkpoint saves
  ``N`` again) first removes ``manifest-N.json``: the old checkpoint ``N`` stops counting, then the new one is
  written (a kill in between resumes from an earlier checkpoint);
- a delete removes the manifest first, then the part files; a save also removes part files that no manifest names
  (left by a kill) and the temporary files of killed writes.

The directory holds ``checkpoints.json`` (a format marker) from the first save on. A directory without it was written
by an earlier Ember (no manifests): there a checkpoint counts when its three part files exist, with
``progress-N.json`` for an interrupted epoch, as before; such files cannot be verified. The first save into such a
directory adopts its complete checkpoints (writes their manifests), then writes the marker; from then on only
manifests count.

Every part (model, optimizer, scheduler) is written at full precision whatever the recorder's settings: float32,
or float64 when the record holds 64-bit tensors. The recorder picks the file format (``CompactRecorder()``: gzipped
msgpack) but not the precision of a checkpoint, since a resumed run must continue bitwise from where the
interrupted one stopped; save the final model with ``CompactRecorder()`` for a half-precision file.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

import numpy as np

from ember import TensorData
from ember.record import DoublePrecisionSettings, FileRecorder, FullPrecisionSettings, atomic_write, remove_stale_temps

from ._errors import CheckpointError

__all__ = ["FileCheckpointer", "LearnerCheckpointer", "last_checkpoint", "complete_checkpoints"]

_PARTS = ("model", "optim", "scheduler")
MANIFEST_FORMAT = "ember-checkpoint"
MANIFEST_VERSION = 1
MARKER = "checkpoints.json"
_MANIFEST = re.compile(r"^manifest-(\d+)\.json$")
_PART = re.compile(r"^(model|optim|scheduler)-(\d+)\.")
#: any part file, also an interrupted epoch's (``model-N-I.<ext>``, I the iteration reached)
_ANY_PART = re.compile(r"^(model|optim|scheduler)-(\d+)(?:-\d+)?\.")
_STALE = re.compile(r"^\.((?:model|optim|scheduler)-\d+(?:-\d+)?\..+|manifest-\d+\.json|progress-\d+\.json|"
                    + re.escape(MARKER) + r")\.[0-9a-f]{12}\.tmp$")


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


def _digest(path: Path) -> tuple[int, str]:
    """``(size, sha256 hex)`` of a file."""
    h = hashlib.sha256()
    size = 0
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
            size += len(chunk)
    return size, h.hexdigest()


def _fsync_dir(directory: Path) -> None:
    """Make the directory's entries (an unlink) durable before what follows."""
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _read_manifest(directory: Path, epoch: int) -> dict[str, Any] | None:
    """The manifest of checkpoint ``epoch`` when it is valid and its part files have the sizes it names; else
    ``None`` (the digests are checked by :meth:`LearnerCheckpointer.restore`)."""
    try:
        m = json.loads((directory / f"manifest-{epoch}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if (not isinstance(m, dict) or m.get("format") != MANIFEST_FORMAT or m.get("version") != MANIFEST_VERSION
            or m.get("epoch") != epoch or not isinstance(m.get("parts"), dict) or set(m["parts"]) != set(_PARTS)):
        return None
    for part in m["parts"].values():
        if not isinstance(part, dict) or not isinstance(part.get("file"), str) or "/" in part["file"]:
            return None
        try:
            if (directory / part["file"]).stat().st_size != part.get("size"):
                return None
        except OSError:
            return None
    progress = m.get("progress")
    if progress is not None and not (isinstance(progress, dict) and isinstance(progress.get("iteration"), int)):
        return None
    return m


def _legacy(directory: Path) -> dict[int, dict[str, Path]]:
    """Checkpoints an earlier Ember wrote (no manifest): epoch -> part -> file, for those with all three parts."""
    found: dict[int, dict[str, Path]] = {}
    for f in directory.iterdir():
        m = _PART.match(f.name)
        if m:
            found.setdefault(int(m.group(2)), {})[m.group(1)] = f
    return {e: parts for e, parts in found.items() if set(parts) == set(_PARTS)}


def complete_checkpoints(directory: str | os.PathLike[str]) -> list[int]:
    """Epochs with a complete checkpoint in ``directory``: a valid manifest whose part files have the sizes it names
    (or, in a directory an earlier Ember wrote, the three part files)."""
    d = Path(directory)
    if not d.is_dir():
        return []
    epochs = set()
    for f in d.iterdir():
        m = _MANIFEST.match(f.name)
        if m and _read_manifest(d, int(m.group(1))) is not None:
            epochs.add(int(m.group(1)))
    if not (d / MARKER).exists():
        epochs |= {e for e in _legacy(d) if not (d / f"manifest-{e}.json").exists()}
    return sorted(epochs)


def last_checkpoint(artifact_dir: str | os.PathLike[str]) -> int | None:
    """The last epoch with a complete checkpoint under ``<artifact_dir>/checkpoint``, or ``None``:
    what to pass to ``LearnerBuilder.checkpoint`` after a crash."""
    epochs = complete_checkpoints(Path(artifact_dir) / "checkpoint")
    return epochs[-1] if epochs else None


def _widest(record: Any) -> int:
    """The widest element size (bytes) of the record's tensors (0 without tensors; 8 for a leaf of unknown type)."""
    if isinstance(record, dict):
        return max((_widest(v) for v in record.values()), default=0)
    if isinstance(record, (list, tuple)):
        return max((_widest(v) for v in record), default=0)
    if isinstance(record, TensorData):
        return int(record.dtype.itemsize)
    dtype = getattr(record, "dtype", None)
    if isinstance(dtype, np.dtype):
        return int(dtype.itemsize)
    return 0 if dtype is None else int(getattr(dtype, "itemsize", 8))


def _needs_double(record: Any) -> bool:
    """Whether a record holds 64-bit tensors (float64 or int64 values), which float32/int32 would round."""
    return _widest(record) >= 8


def _full_precision(recorder: FileRecorder, record: Any) -> FileRecorder:
    """``recorder``'s kind with settings that keep ``record`` exact: float32/int32, float64/int64 when it holds
    64-bit tensors; ``recorder`` itself when its settings already do."""
    want = DoublePrecisionSettings() if _needs_double(record) else FullPrecisionSettings()
    have = recorder.settings
    if have == want or isinstance(have, DoublePrecisionSettings):
        return recorder
    try:
        return type(recorder)(want, verify=recorder.verify)
    except TypeError:  # a recorder with another constructor: the default full-precision format
        from ember.record import NamedMpkFileRecorder

        return NamedMpkFileRecorder(want)


class LearnerCheckpointer:
    """Model, optimizer and scheduler checkpointers (Burn's ``LearnerCheckpointer``) with a manifest per checkpoint
    (the module docstring says how a checkpoint is complete or ignored).

    Every part is written by ``recorder``'s kind of recorder at full precision, whatever its precision settings
    (float32, or float64 when the record holds 64-bit tensors): resume is bitwise.
    """

    def __init__(self, recorder: FileRecorder, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        self.recorder = recorder
        self.model = FileCheckpointer(recorder, directory, "model")
        self.optim = FileCheckpointer(recorder, directory, "optim")
        self.scheduler = FileCheckpointer(recorder, directory, "scheduler")

    def manifest_path(self, epoch: int) -> Path:
        return self.directory / f"manifest-{epoch}.json"

    def progress_path(self, epoch: int) -> Path:
        """The in-epoch progress file of an earlier Ember's interrupted checkpoint (read, never written)."""
        return self.directory / f"progress-{epoch}.json"

    # ------------------------------------------------------------------ writing
    def save(self, epoch: int, model_rec: Any, optim_rec: Any, sched_rec: Any,
             progress: dict[str, Any] | None = None, state: dict[str, Any] | None = None) -> None:
        """Write checkpoint ``epoch``: the three part files, then its manifest (the act that makes it complete).

        Args:
            progress: ``{"iteration": i, ...}`` for an epoch interrupted after iteration ``i``; ``None`` for a
                finished epoch.
            state: the run's other state to resume exactly (random states, data order), plain JSON data.
        """
        self.directory.mkdir(parents=True, exist_ok=True)
        self._adopt_legacy()
        self._remove_stale()
        stem = f"{epoch}" if progress is None else f"{epoch}-{int(progress['iteration'])}"
        records = {"model": model_rec, "optim": optim_rec, "scheduler": sched_rec}
        recorders = {name: _full_precision(self.recorder, rec) for name, rec in records.items()}
        paths = {name: rec.file_path(self.directory / f"{name}-{stem}") for name, rec in recorders.items()}
        old = _read_manifest(self.directory, epoch)
        if old is None or {p["file"] for p in old["parts"].values()} & {p.name for p in paths.values()}:
            # the new files would overwrite the current checkpoint's: it stops counting first
            self._unlink(self.manifest_path(epoch))
            _fsync_dir(self.directory)
        self._unlink(self.progress_path(epoch))  # an earlier Ember's, now without a checkpoint
        for name, rec in records.items():
            recorders[name].record(rec, paths[name])
        self._write_manifest(epoch, paths, progress, state)
        self._remove_unnamed(epoch)

    def _write_manifest(self, epoch: int, parts: dict[str, Path], progress: dict[str, Any] | None,
                        state: dict[str, Any] | None) -> None:
        described = {}
        for name, path in parts.items():
            size, digest = _digest(path)
            described[name] = {"file": path.name, "size": size, "sha256": digest}
        manifest = {"format": MANIFEST_FORMAT, "version": MANIFEST_VERSION, "epoch": epoch, "parts": described,
                    "progress": progress, "state": state or {}}
        body = json.dumps(manifest, indent=1, sort_keys=True).encode("utf-8")
        atomic_write(self.manifest_path(epoch), lambda f: f.write(body))

    def _adopt_legacy(self) -> None:
        """In a directory an earlier Ember wrote (no marker): write manifests for its complete checkpoints, then
        the marker (a kill in between leaves the directory unmarked, to be adopted again)."""
        marker = self.directory / MARKER
        if marker.exists():
            return
        for epoch, parts in sorted(_legacy(self.directory).items()):
            if self.manifest_path(epoch).exists():
                continue
            progress = None
            p = self.progress_path(epoch)
            if p.exists():
                try:
                    progress = json.loads(p.read_text(encoding="utf-8"))
                except ValueError:
                    continue  # unreadable: not adopted, so ignored from now on
            self._write_manifest(epoch, parts, progress, None)
        body = json.dumps({"format": "ember-checkpoints", "version": MANIFEST_VERSION}).encode("utf-8")
        atomic_write(marker, lambda f: f.write(body))

    def _named(self) -> set[str]:
        """The part files the valid manifests name."""
        names = set()
        for f in self.directory.iterdir():
            m = _MANIFEST.match(f.name)
            man = _read_manifest(self.directory, int(m.group(1))) if m else None
            if man is not None:
                names |= {p["file"] for p in man["parts"].values()}
        return names

    def _remove_unnamed(self, epoch: int | None = None) -> None:
        """Remove the part files no manifest names (of checkpoint ``epoch``; of every epoch when ``None``), in a
        directory with the marker (where such files are never a checkpoint)."""
        if not (self.directory / MARKER).exists():
            return
        named = self._named()
        for f in list(self.directory.iterdir()):
            m = _ANY_PART.match(f.name)
            if m and f.name not in named and (epoch is None or int(m.group(2)) == epoch):
                self._unlink(f)

    def _remove_stale(self) -> None:
        """Remove the temporary files killed saves left in the directory (:func:`remove_stale_temps`)."""
        for f in self.directory.iterdir():
            m = _STALE.match(f.name)
            if m:
                remove_stale_temps(self.directory / m.group(1))
        self._remove_unnamed()

    @staticmethod
    def _unlink(path: Path) -> None:
        try:
            path.unlink()
        except FileNotFoundError:
            pass

    def delete(self, epoch: int) -> None:
        """Remove checkpoint ``epoch``: its manifest first (it stops counting), then its files."""
        self._unlink(self.manifest_path(epoch))
        _fsync_dir(self.directory)
        self._unlink(self.progress_path(epoch))
        for f in list(self.directory.iterdir()) if self.directory.is_dir() else []:
            m = _ANY_PART.match(f.name)
            if m and int(m.group(2)) == epoch:
                self._unlink(f)

    # ------------------------------------------------------------------ reading
    def _manifest(self, epoch: int) -> dict[str, Any] | None:
        m = _read_manifest(self.directory, epoch)
        if m is None and not (self.directory / MARKER).exists() and not self.manifest_path(epoch).exists():
            parts = _legacy(self.directory).get(epoch) if self.directory.is_dir() else None
            if parts is not None:  # an earlier Ember's checkpoint
                p = self.progress_path(epoch)
                try:
                    progress = json.loads(p.read_text(encoding="utf-8")) if p.exists() else None
                except ValueError as exc:
                    raise CheckpointError(
                        f"checkpoint {epoch} in {self.directory}: {p.name} is not valid JSON ({exc}), so where epoch "
                        f"{epoch} stopped is unknown; resume from another checkpoint."
                    ) from exc
                return {"epoch": epoch, "parts": {k: {"file": v.name} for k, v in parts.items()},
                        "progress": progress, "state": {}, "legacy": True}
        return m

    def progress(self, epoch: int) -> dict[str, Any] | None:
        """The in-epoch progress of an interrupted checkpoint, ``None`` for a complete epoch."""
        m = self._manifest(epoch)
        return None if m is None else m.get("progress")

    def state(self, epoch: int) -> dict[str, Any]:
        """The run state saved with checkpoint ``epoch`` (random states, data order); ``{}`` when none was."""
        m = self._manifest(epoch)
        st = None if m is None else m.get("state")
        return st if isinstance(st, dict) else {}

    def restore(self, epoch: int) -> tuple[Any, Any, Any]:
        """The model, optimizer and scheduler records of checkpoint ``epoch``.

        Raises:
            CheckpointError: no complete checkpoint ``epoch`` (names the complete ones), or a part file differs
                from the digest its manifest names (the file was changed or damaged after the save).
        """
        m = self._manifest(epoch)
        if m is None:
            have = complete_checkpoints(self.directory)
            raise CheckpointError(
                f"no complete checkpoint for epoch {epoch} in {self.directory} (model, optim and scheduler files "
                f"and manifest-{epoch}.json naming them are needed); complete checkpoints: {have or 'none'}. Use "
                "ember_train.last_checkpoint(artifact_dir)."
            )
        out = []
        for name in _PARTS:
            part = m["parts"][name]
            path = self.directory / part["file"]
            if not m.get("legacy"):
                size, digest = _digest(path)
                if (size, digest) != (part["size"], part["sha256"]):
                    raise CheckpointError(
                        f"checkpoint {epoch} in {self.directory}: {path.name} does not match its manifest (expected "
                        f"{part['size']} bytes with SHA-256 {part['sha256'][:16]}..., found {size} bytes with "
                        f"{digest[:16]}...): it was changed or damaged after the save. Resume from another checkpoint "
                        f"(complete ones: {complete_checkpoints(self.directory)})."
                    )
            out.append(self._loader_of(path).load(path))
        return out[0], out[1], out[2]

    def _loader_of(self, path: Path) -> FileRecorder:
        """The recorder that reads ``path``: the configured one, or the default full-precision one that
        :func:`_full_precision` falls back to for a recorder it cannot make with other settings."""
        if path.name.endswith("." + self.recorder.extension):
            return self.recorder
        from ember.record import NamedMpkFileRecorder

        return NamedMpkFileRecorder()
