"""``OnnxImportError``: every problem found while importing an ONNX model."""

from __future__ import annotations

from .._errors import ModelImportError

__all__ = ["OnnxImportError"]


class OnnxImportError(ModelImportError):
    """An ONNX model could not be imported or run by Ember.

    Raised before anything runs for: a file ``onnx`` cannot parse (truncated protobuf), a model that
    ``onnx.checker`` rejects, an external-data path that leaves the model's folder, absurd dims or data shorter
    than its dims, an ``ai.onnx`` opset outside the known range, element types Ember lacks (strings, float8,
    int4, complex), operators without a converter (the message lists **every** unsupported operator at once,
    with its opset and node names) and values folding would materialise beyond ``max_tensor_bytes``. Raised
    while running for inputs that do not match the graph (count, kind, rank, fixed and symbolic dims), a
    tensor beyond ``max_tensor_bytes`` that a node sizes from values, a node out of memory, and values a
    converter cannot handle (a data-dependent shape under ``ember_jax.jit``). Messages name the file.
    Derives from :class:`ember_import.ModelImportError` (an :class:`ember.EmberError`).
    """
