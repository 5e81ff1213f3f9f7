"""The artifact directory of a guide run: its ``.ember-run`` marker and what ``train`` may do with the directory.

A run directory carries ``.ember-run`` (JSON: what wrote it, the state ``running`` / ``interrupted`` /
``failed`` / ``finished``, the command and its working directory). ``train`` decides from it, before it writes anything:

- a missing or empty directory: a fresh run;
- a *finished* run: replaced by a fresh one (only the entries a run writes, :data:`RUN_ENTRIES`, are removed;
  any other file is kept);
- an *unfinished* run: refused with the command that resumes it (``--resume``); ``--overwrite`` starts over. An
  interrupted or failed run that never reached a checkpoint has nothing to resume and is replaced (one still
  ``running``, perhaps in another process, is not);
- a non-empty directory without the marker: refused unless ``--overwrite``, which replaces the entries of
  :data:`RUN_ENTRIES` found there and keeps every other file.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import ember
from ember_train import last_checkpoint

from ._errors import UsageError

__all__ = ["MARKER", "RUN_ENTRIES", "RunPlan", "plan_run_dir", "prepare_run_dir", "read_marker", "update_marker",
           "resume_command", "unfinished_reason"]

MARKER = ".ember-run"
#: What a guide run writes in its artifact directory (the Learner's layout, the guide's files, the marker): the
#: only entries ``train`` ever removes.
RUN_ENTRIES = (MARKER, "config.json", "model.mpk.gz", "checkpoint", "train", "valid", "experiment.log",
               "summary.txt", "summary.json", "plots", "mlflow-run.json")
WRITER = "python -m guide train"


@dataclass(frozen=True)
class RunPlan:
    """What ``train`` does with the artifact directory: ``action`` is ``"fresh"``, ``"replace"`` (remove
    ``remove`` first) or ``"resume"`` (from checkpoint ``resume_epoch``)."""

    path: Path
    action: str
    remove: tuple[str, ...] = ()
    resume_epoch: int | None = None


def read_marker(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The marker of the run directory ``path``; ``None`` when there is none or it is not a guide run's marker."""
    try:
        data = json.loads((Path(path) / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("format") == "ember-run" else None


def resume_command(marker: dict[str, Any] | None, here: bool = True, resume: bool = True) -> str:
    """The command that resumes the run of ``marker`` (its own command with ``--resume``, without
    ``--overwrite``; without ``--resume`` either when ``resume`` is false), prefixed with ``cd DIR &&`` when
    ``here`` is false and it ran elsewhere."""
    if not (marker or {}).get("argv"):  # written by guide.train called from Python
        return f"guide.train(..., resume={resume})"
    argv = [a for a in (marker or {}).get("argv", []) if a not in ("--overwrite", "--resume")]
    command = shlex.join(["python", "-m", "guide", *argv, *(["--resume"] if resume else [])])
    cwd = (marker or {}).get("cwd")
    if not here and cwd and Path(cwd) != Path.cwd():
        command = f"cd {shlex.quote(cwd)} && {command}"
    return command


def unfinished_reason(path: Path, marker: dict[str, Any]) -> str:
    """``"was interrupted (last checkpoint: epoch 1 of 2)"``: how far the unfinished run of ``marker`` got."""
    epochs = marker.get("epochs")
    epoch = last_checkpoint(path)
    state = {"interrupted": "was interrupted", "failed": "failed"}.get(marker.get("state", ""), "did not finish")
    return state + (f" (last checkpoint: epoch {epoch}{f' of {epochs}' if epochs else ''})" if epoch else "")


def plan_run_dir(artifact_dir: str | os.PathLike[str], *, resume: bool = False, overwrite: bool = False) -> RunPlan:
    """Decide what ``train`` does with ``artifact_dir``; reads only (see the module docstring).

    Raises:
        UsageError: the directory holds what this command must not replace, or nothing to resume.
    """
    path = Path(artifact_dir)
    flag = f"--artifact-dir {path}"
    if path.exists() and not path.is_dir():
        raise UsageError(f"{flag} is a file, not a directory: pass a new or empty directory.")
    entries = sorted(p.name for p in path.iterdir()) if path.is_dir() else []
    marker = read_marker(path)
    ours = tuple(e for e in RUN_ENTRIES if e in entries)
    if not entries:
        if resume:
            raise UsageError(f"--resume: {path} holds no run to resume; drop --resume to start one there.")
        return RunPlan(path, "fresh")
    if marker is None:
        if resume:
            raise UsageError(f"--resume: {path} holds no Ember run (no {MARKER} marker), so nothing to resume.")
        if overwrite:
            return RunPlan(path, "replace", ours)
        shown = ", ".join(entries[:5]) + (f" and {len(entries) - 5} more" if len(entries) > 5 else "")
        replaced = (f"replacing {', '.join(ours)} and keeping the rest" if ours else "keeping its files")
        raise UsageError(f"{flag} is not empty and holds no Ember run (no {MARKER} marker; it holds {shown}): "
                         f"pass a new or empty directory, or --overwrite to write the run there ({replaced}).")
    checkpoint = last_checkpoint(path)
    if marker.get("state") == "finished":
        if resume:
            raise UsageError(f"--resume: the run in {path} is finished ({marker.get('epochs')} epoch(s)), so there is "
                             "nothing to resume; drop --resume to train again (replacing it).")
        return RunPlan(path, "replace", ours)
    if resume:
        if checkpoint is None:
            raise UsageError(f"--resume: the run in {path} stopped before its first checkpoint, so there is nothing "
                             "to resume; start over with --overwrite instead of --resume.")
        return RunPlan(path, "resume", resume_epoch=checkpoint)
    if overwrite or (checkpoint is None and marker.get("state") in ("interrupted", "failed")):
        return RunPlan(path, "replace", ours)
    if checkpoint is None:  # "running": perhaps still running in another process
        raise UsageError(f"{flag} holds a run that has not finished (another train may still be running there) "
                         "and has no checkpoint yet: wait for it, or pass --overwrite to start over.")
    raise UsageError(f"{flag} holds an unfinished run that can be resumed: it {unfinished_reason(path, marker)}; "
                     f"resume it with `{resume_command(marker)}`, or pass --overwrite to start over.")


def prepare_run_dir(plan: RunPlan, marker: dict[str, Any]) -> None:
    """Carry out ``plan`` (remove the run entries it lists, create the directory) and write the marker, state
    ``running``, with ``marker``'s fields (``argv``, ``epochs``, ...)."""
    for name in plan.remove:
        entry = plan.path / name
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink(missing_ok=True)
    plan.path.mkdir(parents=True, exist_ok=True)
    old = read_marker(plan.path) if plan.action == "resume" else None
    update_marker(plan.path, **{**(old or {}), **marker, "state": "running"})


def update_marker(path: str | os.PathLike[str], **fields: Any) -> None:
    """Write ``fields`` into the marker of ``path`` (created when absent), atomically (temporary file, fsync,
    rename)."""
    path = Path(path)
    data = {**(read_marker(path) or {}), "format": "ember-run", "written_by": WRITER,
            "ember_version": ember.__version__, **fields,
            "updated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    body = json.dumps(data, indent=2).encode("utf-8")
    fd, tmp = tempfile.mkstemp(prefix=f"{MARKER}.", suffix=".tmp", dir=path)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(body)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path / MARKER)
    finally:
        Path(tmp).unlink(missing_ok=True)
