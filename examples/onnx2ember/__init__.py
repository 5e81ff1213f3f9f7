"""ONNX to Ember source: the guide's CNN exported from PyTorch, written as an Ember module by ``ModelGen``, and
trained from scratch with the Learner next to the hand-written guide model (``python -m onnx2ember``)."""

from __future__ import annotations

from ._compare import generate_guide, import_generated, train_both

__all__ = ["generate_guide", "import_generated", "train_both"]
