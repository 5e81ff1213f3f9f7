"""The guide's inference (Burn book, "Guide": ``src/inference.rs``)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ember.data.vision import MnistItem
from ember.record import CompactRecorder
from ember_train import last_checkpoint

from ._errors import UsageError
from ._run_dir import read_marker, resume_command, unfinished_reason
from .data import MnistBatcher
from .training import TrainingConfig

__all__ = ["infer"]


def infer(artifact_dir: str | os.PathLike[str], device: Any, item: MnistItem) -> tuple[int, int]:
    """Load the trained model of ``artifact_dir`` on ``device`` and classify one image.

    Prints ``Predicted 7 Expected 7`` (Burn's guide output) and returns ``(predicted, expected)``.

    Args:
        artifact_dir: a directory written by :func:`guide.training.train` (``config.json``, ``model.mpk.gz``).
        device: any device (no autodiff needed), e.g. ``ember.backend("numpy").device()``.
        item: an :class:`~ember.data.vision.MnistItem`, e.g. ``MnistDataset.test().get(42)``.

    Raises:
        guide.UsageError: ``artifact_dir`` holds no finished run: an unfinished one (the message gives the
            command that resumes it) or no trained model (train first).
        ember.RecordError: the record does not fit the configured model.
    """
    check_finished(artifact_dir)
    config = TrainingConfig.load(Path(artifact_dir) / "config.json")  # type: ignore[attr-defined]
    record = CompactRecorder().load(Path(artifact_dir) / "model")
    model = config.model.init(device).load_record(record)

    label = item.label
    batch = MnistBatcher().batch([item], device)
    output = model.forward(batch.images)  # [1, num_classes]
    predicted = int(output.argmax(1).flatten(0, 1).into_scalar())

    print(f"Predicted {predicted} Expected {label}")
    return predicted, label


def check_finished(artifact_dir: str | os.PathLike[str]) -> None:
    """Raise :class:`~guide.UsageError` unless ``artifact_dir`` holds a finished run (``config.json`` and
    ``model.mpk.gz``; a run directory without the ``.ember-run`` marker, written before it existed, counts when it
    has both)."""
    path = Path(artifact_dir)
    marker = read_marker(path)
    if marker is not None and marker.get("state") != "finished":
        again = (f"resume it with `{resume_command(marker, here=False)}`" if last_checkpoint(path) is not None
                 else f"train it again with `{resume_command(marker, here=False, resume=False)}`")
        raise UsageError(f"--artifact-dir {path}: the run there {unfinished_reason(path, marker)}, so it has no "
                         f"final model yet: {again}, then infer.")
    missing = [n for n in ("config.json", "model.mpk.gz") if not (path / n).is_file()]
    if missing:
        raise UsageError(f"--artifact-dir {path}: no trained model there ({' and '.join(missing)} missing): train "
                         f"first, e.g. `python -m guide train --artifact-dir {path}`.")
