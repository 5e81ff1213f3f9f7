"""The layer recognizers of code generation, in the order :class:`~._modelgen.ModelGen` tries them on each node:
weighted layers (:mod:`._layers`), recurrent layers (:mod:`._recurrent`), then activations (:mod:`._activations`).

A recognizer looks at one node (and for some patterns the nodes after it), and when the pattern holds adds the
field, writes the call and returns the nodes it consumed; otherwise it returns ``None``.
"""

from __future__ import annotations

from collections.abc import Callable

from .._ir import Node
from ._activations import activation, dropout, gelu_erf, gelu_tanh
from ._gen import Gen
from ._layers import batch_norm, channel_norm, conv, conv_transpose, embedding, gemm, layer_norm, matmul_add, pool
from ._quant_recognizers import quantized_layer
from ._recurrent import recurrent

__all__ = ["RECOGNIZERS"]

Recognizer = Callable[[Gen, Node], "list[Node] | None"]


RECOGNIZERS: tuple[Recognizer, ...] = (
    quantized_layer, conv, conv_transpose, gemm, matmul_add, batch_norm, layer_norm, channel_norm, embedding, pool,
    recurrent, gelu_erf, gelu_tanh, activation, dropout,
)
