"""ONNX import: any ONNX model as a native, trainable Ember module (Burn's ``burn-onnx``/``onnx-ir``).

::

    from ember_import.onnx import load_model

    model = load_model("resnet18.onnx", ember.backend("torch").device())
    logits = model(images)            # Ember tensors in, Ember tensors out

- :func:`load_model` parses the file with the ``onnx`` library, checks it, infers shapes, builds Ember's IR
  (:mod:`._ir`), folds constants and drops dead nodes, and returns an :class:`OnnxModule`: float
  initializers are ``Param``\\ s, every node runs as Ember tensor ops (converters in :mod:`.ops`), so the
  model runs on every backend, differentiates under ``Autodiff``, compiles with ``ember_jax.jit``, saves
  and loads records and fine-tunes with the Learner.
- :class:`ModelGen` writes the model as Ember source instead: ``model.py`` with ordinary layers and straight-line
  ``forward`` code, and a weights record (``python -m ember_import onnx2ember MODEL.onnx --out DIR``).
- :class:`OnnxImportError` lists every unsupported operator at once, before anything runs.
- ``python -m ember_import onnx-info MODEL.onnx`` describes a model and its support;
  ``python -m ember_import.onnx.conformance --backend NAME`` runs ONNX's node test suite.

Needs the ``onnx`` package: ``pip install 'ember-import[onnx]'``.
"""

from __future__ import annotations

from ._errors import OnnxImportError
from ._ir import Graph, Node, ValueInfo
from ._module import OnnxModule, load_model
from ._registry import converter, registered_ops
from .codegen import ModelGen, ModelGenError, source_key_remap

__all__ = [
    "Graph", "ModelGen", "ModelGenError", "Node", "OnnxImportError", "OnnxModule", "ValueInfo", "converter",
    "load_model", "registered_ops", "source_key_remap",
]
