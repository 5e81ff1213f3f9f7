"""``OnnxImportError``: every problem found while importing an ONNX model."""

from __future__ import annotations

from .._errors import ModelImportError

__all__ = ["OnnxImportError"]


class OnnxImportError(ModelImportError):
    """An ONNX model could not be imported or run by Ember.

    Raised before anything runs for: a file ``onnx`` cannot parse (truncated protobuf), a model that
    ``onnx.checker`` rejects, an external-data path that leaves the model's folder, absurd dims, element
    types Ember lacks (strings, float8, int4, complex) and operators without a converter (the message lists
    **every** unsupported operator at once, with its opset and node names). Raised while running for
    inputs that do not match the graph (count, kind) and values a converter cannot handle (a data-dependent
    shape under ``ember_jax.jit``). Derives from :class:`ember_import.ModelImportError`
    (an :class:`ember.EmberError`).
    """
