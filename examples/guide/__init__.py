"""Burn's guide (the Burn book's "Guide" chapter) on Ember: an MNIST classifier, trained with the Learner.

Modules mirror the guide's files: :mod:`guide.model` (``model.rs``), :mod:`guide.data` (``data.rs``),
:mod:`guide.training` (``training.rs``), :mod:`guide.inference` (``inference.rs``) and
:mod:`guide.__main__` (``main.rs``; run ``python -m guide --help`` from ``examples/``).
"""

from __future__ import annotations

from ._errors import UsageError
from .data import MnistBatch, MnistBatcher
from .inference import infer
from .model import Model, ModelConfig
from .training import TrainingConfig, train

__all__ = ["MnistBatch", "MnistBatcher", "Model", "ModelConfig", "TrainingConfig", "UsageError", "infer", "train"]
