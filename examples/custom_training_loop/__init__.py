"""The Burn book's "Custom Training Loop" chapter on Ember: the guide's model trained by hand with
``GradientsParams`` and an optimizer, validated on ``model.valid()``. Run ``python -m custom_training_loop``
from ``examples/``."""

from __future__ import annotations

from .loop import MnistTrainingConfig, accuracy, run

__all__ = ["MnistTrainingConfig", "accuracy", "run"]
