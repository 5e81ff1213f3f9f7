"""Numeric operators of the ``ai.onnx.ml`` domain: ``Binarizer`` and ``ArrayFeatureExtractor``.

The domain's other operators work on strings, maps or decision trees (``LabelEncoder``, ``TreeEnsemble``,
``TfIdfVectorizer``, ...) and have no tensor-op form in Ember. Semantics: onnx/docs/Operators-ml.md and the
reference implementation in onnx/reference/ops/aionnxml.
"""

from __future__ import annotations

from ember import Tensor

from .._context import Context
from .._ir import Node
from .._registry import converter
from ._elementwise_util import to_dtype


@converter("Binarizer", since=1, domain="ai.onnx.ml")
def binarizer(ctx: Context, node: Node, x: Tensor) -> Tensor:
    """``Binarizer`` (ml 1): ``1`` where ``x > threshold`` (default 0), else ``0``, in ``x``'s type."""
    return to_dtype(x.greater(float(node.attr("threshold", 0.0))), x.dtype)


@converter("ArrayFeatureExtractor", since=1, domain="ai.onnx.ml")
def array_feature_extractor(ctx: Context, node: Node, x: Tensor, indices: Tensor) -> Tensor:
    """``ArrayFeatureExtractor`` (ml 1): the entries of the last axis at ``indices`` (flattened); a 1-D
    input gives ``[1, k]``, as the reference does."""
    flat = indices.reshape([-1])
    out = x.select(x.rank - 1, flat)
    return out.reshape([1, flat.shape[0]]) if x.rank == 1 else out
