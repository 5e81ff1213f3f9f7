"""Helpers of the guide CLI tests: a snapshot of a folder, fake run folders, the one-line error check."""

from __future__ import annotations

import json
from pathlib import Path

from guide._run_dir import MARKER


def snapshot(folder: Path) -> dict[str, bytes | None]:
    """Every entry under ``folder``: relative path -> bytes (``None`` for a directory)."""
    return {str(p.relative_to(folder)): (None if p.is_dir() else p.read_bytes()) for p in sorted(folder.rglob("*"))}


def fake_run(folder: Path, state: str, checkpoint: int | None = None, **marker: object) -> Path:
    """A run folder as ``python -m guide train`` leaves it (marker ``state``; a complete checkpoint when asked),
    with the user's ``notes.txt`` beside the run's files."""
    (folder / "checkpoint").mkdir(parents=True)
    (folder / "train" / "epoch-1").mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    (folder / "notes.txt").write_text("the user's notes")
    if state == "finished":
        (folder / "model.mpk.gz").write_bytes(b"model")
    if checkpoint is not None:
        for part in ("model", "optim", "scheduler"):
            (folder / "checkpoint" / f"{part}-{checkpoint}.mpk.gz").write_bytes(b"x")
    argv = ["train", "--epochs", "2", "--artifact-dir", str(folder)]
    (folder / MARKER).write_text(json.dumps({"format": "ember-run", "state": state, "argv": argv, "epochs": 2,
                                             "settings": {"epochs": 2, "seed": 42, "train_items": None,
                                                          "test_items": None}, **marker}))
    return folder


def one_line_error(err: str) -> str:
    """The CLI's error: exactly one line, no traceback, no internal API names; returns it."""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("python -m guide: error: "), err
    for internal in ("Traceback", "LearnerBuilder", "root=", "DatasetError", "BackendError"):
        assert internal not in err, err
    return lines[0]
