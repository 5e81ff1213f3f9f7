"""The error of code generation."""

from __future__ import annotations

from .._errors import OnnxImportError

__all__ = ["ModelGenError"]


class ModelGenError(OnnxImportError):
    """A model that :class:`~ember_import.onnx.ModelGen` cannot write as Ember source (the runtime
    :func:`~ember_import.onnx.load_model` may still run it); the message says which node and why."""
