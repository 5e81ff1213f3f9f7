"""The quantization passes of ``load_model``, in order: QDQ ``MatMul``/``Gemm`` (:mod:`._qdq`), QDQ ``Conv``
(:mod:`._qdq_conv`), ``QLinearMatMul``/``QLinearConv`` with a constant weight (:mod:`._qlinear`)."""

from __future__ import annotations

from ._ir import Graph
from ._qdq import recognise_qdq
from ._qdq_conv import recognise_qdq_conv
from ._qlinear import recognise_qlinear
from ._qweights import QWeights

__all__ = ["recognise_quantized"]


def recognise_quantized(graph: Graph) -> QWeights:
    """Rewrite the quantized patterns of the main graph onto ``ai.ember`` nodes (before constant folding, which
    would turn the integer weights into float32 constants). Returns the quantized weights the new nodes read, by
    name (each becomes a ``Param`` of the module; empty when nothing was recognised)."""
    qweights: QWeights = {}
    recognise_qdq(graph, qweights)
    recognise_qdq_conv(graph, qweights)
    recognise_qlinear(graph, qweights)
    return qweights
