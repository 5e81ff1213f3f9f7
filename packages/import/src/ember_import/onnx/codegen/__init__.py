"""ONNX to Ember source (Burn's ``ModelGen``): :class:`ModelGen` writes ``model.py`` and its weights record."""

from __future__ import annotations

from . import _rules  # noqa: F401 - installs the host rules' trace hook (ember_import.onnx.rules)
from ._errors import ModelGenError
from ._modelgen import GeneratedModel, ModelGen, generate, source_key_remap

__all__ = ["GeneratedModel", "ModelGen", "ModelGenError", "generate", "source_key_remap"]
