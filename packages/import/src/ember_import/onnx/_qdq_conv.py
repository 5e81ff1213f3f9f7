"""QDQ convolutions: ``DequantizeLinear`` of a constant int8/uint8 weight feeding ``Conv`` keeps the weight as an
:class:`ember.quantization.QuantizedTensor` instead of folding it into a float32 constant.

ONNX's QDQ format (onnxruntime's ``quantize_static``, ``torch.onnx`` of a quantized model) writes a quantized
convolution as::

    w_f = DequantizeLinear(W_int8, w_scale, w_zp, axis=0)   # W an initializer [M, C / group, *kernel],
                                                             # per tensor or per output channel
    y   = Conv(x_f, w_f, bias)                               # x_f: the activation's Q -> DQ pair, kept as it is

:func:`recognise_qdq_conv` rewrites each such ``Conv`` into one ``ai.ember`` ``QdqConv`` node (the ``Conv``'s
attributes, the quantized weight as its second input, recorded in the ``qweights`` of :mod:`._qweights`) and drops
the weight's ``DequantizeLinear``. Its converter computes through :func:`conv_quantized_weight`, the one place
that decides how: today the documented fallback, the weight dequantized (``(q - zero_point) * scale`` in float32,
ONNX's ``DequantizeLinear``) and the float convolution of :func:`~.ops._conv.conv` (every ``Conv`` attribute:
``pads``, ``auto_pad``, ``strides``, ``dilations``, ``group``), so the numbers are the ONNX graph's. The input's
``QuantizeLinear`` -> ``DequantizeLinear`` pair runs as the float converters compute it.

Not recognised (left to the float converters): a weight with a block size, a weight that is not an initializer or
is also a graph input, a ``DequantizeLinear`` whose output has other consumers, a scale that is neither one value
nor one per output channel.
"""

from __future__ import annotations

from typing import Any

from ember import Tensor

from ._context import Context
from ._ir import Graph, Node
from ._qdq import DOMAIN, weight_dq
from ._qweights import QWeights, ember_node, facts, quantized_weight, register
from ._registry import converter
from .ops._conv import conv

__all__ = ["recognise_qdq_conv", "conv_quantized_weight"]


def recognise_qdq_conv(graph: Graph, qweights: QWeights) -> int:
    """Rewrite the QDQ ``Conv`` patterns of the main graph (see the module docstring) into ``ai.ember.QdqConv``
    nodes; returns how many."""
    producers, uses, graph_inputs = facts(graph)
    dead: set[int] = set()
    count = 0
    for k, node in enumerate(graph.nodes):
        if node.op_type != "Conv" or node.domain not in ("", "ai.onnx") or len(node.inputs) < 2:
            continue
        dq = weight_dq(graph, producers, uses, node.inputs[1])
        if dq is None:
            continue
        z_name = dq.inputs[2] if len(dq.inputs) > 2 else ""
        w = graph.initializers.get(dq.inputs[0])
        rank = len(w.shape) if w is not None else None
        if rank is None or rank < 3:
            continue
        # a 1-D scale must be per output channel (axis 0); quantized_weight refuses one for axis None
        per_channel = int(dq.attrs.get("axis", 1)) % rank == 0
        qw = quantized_weight(
            graph, graph_inputs, dq.inputs[0], dq.inputs[1], z_name, 0 if per_channel else None, rank=rank
        )
        if qw is None:
            continue
        w_name = register(graph, uses, qweights, dq.inputs[0], qw)
        dead.add(id(dq))
        inputs = [node.inputs[0], w_name, node.inputs[2] if len(node.inputs) > 2 else ""]
        graph.nodes[k] = ember_node(node, "QdqConv", inputs)
        count += 1
    graph.nodes[:] = [n for n in graph.nodes if id(n) not in dead]
    return count


def conv_quantized_weight(ctx: Context, node: Node, x: Tensor, wq: Any, bias: Tensor | None = None) -> Tensor:
    """``Conv(x, dequant(wq), bias)`` with ``node``'s attributes: ``x`` ``[N, C, *spatial]`` float, ``wq`` the
    QuantizedTensor ``[M, C / group, *kernel]`` (per tensor or per output channel), ``bias`` ``[M]``; the result
    in ``x``'s float type.

    The documented fallback (ember.quantization's rule where no int8 kernel applies): the weight is dequantized to
    float32, then the float convolution runs. This is the one function to switch over to an int8 convolution
    kernel (``ember.quantization.quantized_conv2d``) where the core provides one.
    """
    w = wq.dequantize()
    if w.dtype is not x.dtype:
        w = w.cast(x.dtype)
    return conv(ctx, node, x, w, bias)


@converter("QdqConv", since=1, domain=DOMAIN)
def qdq_conv(ctx: Context, node: Node, x: Tensor, wq: Any, bias: Tensor | None = None) -> Tensor:
    """``Conv(x, dequant(wq), bias)`` (see :func:`conv_quantized_weight`)."""
    return conv_quantized_weight(ctx, node, x, wq, bias)
