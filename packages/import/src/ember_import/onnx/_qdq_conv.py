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
from ._qdq import DOMAIN, activation_pair, activation_qtensor, weight_dq
from ._qweights import QWeights, ember_node, facts, quantized_weight, register
from ._registry import converter
from .ops._conv import add_channel_bias, conv
from .ops._spatial import geometry

__all__ = ["recognise_qdq_conv", "conv_quantized_weight", "kernel_options", "kernel_conv"]


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
        inputs = [node.inputs[0], w_name, node.inputs[2] if len(node.inputs) > 2 else "", "", ""]
        attrs: dict[str, Any] = dict(node.attrs)
        pair = activation_pair(graph, producers, node.inputs[0])
        if pair is not None:  # the converter quantizes x itself (the int8 kernel), or runs the pair in float
            inputs[0], inputs[3], inputs[4], attrs["x_uint8"] = pair
        graph.nodes[k] = ember_node(node, "QdqConv", inputs, attrs)
        count += 1
    graph.nodes[:] = [n for n in graph.nodes if id(n) not in dead]
    return count


def kernel_options(node: Node, x: Tensor, wq: Any) -> Any:
    """The :class:`~ember.tensor.functional.ConvOptions` with which ``Conv`` / ``QLinearConv`` ``node`` runs on
    :func:`ember.quantization.quantized_conv2d`, or ``None`` where the int8 kernel does not take it: 1 or 2 spatial
    dims (1-D as height 1) and pads equal at both ends (``auto_pad`` resolved as ONNX does; ``SAME_*`` with an odd
    total and any asymmetric ``pads`` stay on the generic path)."""
    from ember.tensor.functional import ConvOptions

    nd = x.rank - 2
    if nd not in (1, 2) or len(wq.shape) != nd + 2:
        return None
    g = geometry(node, x.shape[2:], wq.shape[2:])
    if not g.symmetric() or min(g.begin) < 0:
        return None
    one = [1] if nd == 1 else []
    return ConvOptions(
        stride=one + list(g.strides),
        padding=[0] * len(one) + list(g.begin),
        dilation=one + list(g.dilations),
        groups=int(node.attr("group", 1)),
    )


def kernel_conv(xq: Any, wq: Any, opts: Any, bias: Tensor | None = None, output: Any = None) -> Any:
    """:func:`ember.quantization.quantized_conv2d` of ``xq`` ``[N, C, *spatial]`` and ``wq`` ``[M, C / g, *kernel]``
    (1 or 2 spatial dims; a 1-D pair runs as height 1, the weight's 4-D view kept with it so that the backend's
    packed form is reused), with ``opts`` from :func:`kernel_options`; the result has ``xq``'s rank."""
    from ember.quantization import QuantizedTensor, quantized_conv2d

    if xq.rank == 4:
        return quantized_conv2d(xq, wq, bias, opts, output=output)

    def as_4d(q: Any) -> Any:
        shape = [q.shape[0], q.shape[1], 1, q.shape[2]]
        return QuantizedTensor.trusted(q.values.reshape(shape), tuple(shape), q.scheme, q.qparams)

    y = quantized_conv2d(as_4d(xq), wq.derived("onnx-conv1d-as-2d", lambda: as_4d(wq)), bias, opts, output=output)
    if isinstance(y, QuantizedTensor):
        shape = [y.shape[0], y.shape[1], y.shape[3]]
        return QuantizedTensor.trusted(y.values.reshape(shape), tuple(shape), y.scheme, y.qparams)
    return y.squeeze_dim(2)


def conv_quantized_weight(
    ctx: Context,
    node: Node,
    x: Tensor,
    wq: Any,
    bias: Tensor | None = None,
    x_scale: Tensor | None = None,
    x_zp: Tensor | None = None,
) -> Tensor:
    """``Conv(x_f, dequant(wq), bias)`` with ``node``'s attributes: ``x`` ``[N, C, *spatial]`` float, ``wq`` the
    QuantizedTensor ``[M, C / group, *kernel]`` (per tensor or per output channel), ``bias`` ``[M]``; ``x_f`` is
    ``x``, or with ``x_scale`` / ``x_zp`` (the input's per-tensor ``QuantizeLinear`` -> ``DequantizeLinear`` pair,
    attribute ``x_uint8``) ``DequantizeLinear(QuantizeLinear(x))``. The result is in ``x``'s float type.

    With the input pair and a geometry the int8 kernel takes (:func:`kernel_options`), ``x`` is quantized with the
    pair's qparams and :func:`ember.quantization.quantized_conv2d` computes ``sx * sw[o] * sum (q_x - z_x) q_w``
    (exact int32 sum, one float rescale), then the bias is added in float (so that under ``Autodiff`` it keeps its
    gradient): the graph's numbers up to float rounding. Otherwise the documented fallback: the pair as the float
    converters compute it, the weight dequantized (``(q - zero_point) * scale`` in float32, ONNX's
    ``DequantizeLinear``), and the float convolution of :func:`~.ops._conv.conv` (every ``Conv`` attribute).
    """
    from .ops._quantize import dequantize_linear, quantize_linear

    uint8 = bool(int(node.attrs.get("x_uint8", 0)))
    if x_scale is not None and x_zp is not None:
        opts = kernel_options(node, x, wq)
        if opts is not None:
            y = kernel_conv(activation_qtensor(x, x_scale, x_zp, uint8), wq, opts)
            y = add_channel_bias(y, None if bias is None else bias.cast(y.dtype))
            return y if y.dtype is x.dtype else y.cast(x.dtype)
        x = dequantize_linear(ctx, node, quantize_linear(ctx, node, x, x_scale, x_zp), x_scale, x_zp)
    w = wq.dequantize()
    if w.dtype is not x.dtype:
        w = w.cast(x.dtype)
    return conv(ctx, node, x, w, bias)


@converter("QdqConv", since=1, domain=DOMAIN)
def qdq_conv(
    ctx: Context,
    node: Node,
    x: Tensor,
    wq: Any,
    bias: Tensor | None = None,
    x_scale: Tensor | None = None,
    x_zp: Tensor | None = None,
) -> Tensor:
    """``Conv(x_f, dequant(wq), bias)`` (see :func:`conv_quantized_weight`)."""
    return conv_quantized_weight(ctx, node, x, wq, bias, x_scale, x_zp)
