"""The guide's inference (Burn book, "Guide": ``src/inference.rs``)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ember.data.vision import MnistItem
from ember.record import CompactRecorder

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
        FileNotFoundError: no ``config.json`` or model record in ``artifact_dir`` (train first).
        ember.RecordError: the record does not fit the configured model.
    """
    config = TrainingConfig.load(Path(artifact_dir) / "config.json")  # type: ignore[attr-defined]
    record = CompactRecorder().load(Path(artifact_dir) / "model")
    model = config.model.init(device).load_record(record)

    label = item.label
    batch = MnistBatcher().batch([item], device)
    output = model.forward(batch.images)  # [1, num_classes]
    predicted = int(output.argmax(1).flatten(0, 1).into_scalar())

    print(f"Predicted {predicted} Expected {label}")
    return predicted, label
