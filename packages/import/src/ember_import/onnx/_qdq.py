"""QDQ recognition: ``DequantizeLinear`` of a constant int8/uint8 weight feeding ``MatMul`` / ``Gemm`` runs on
Ember's quantized tensors instead of being folded into a float32 constant.

ONNX's QDQ format (onnxruntime's quantization tool, ``torch.onnx`` of a quantized model) writes a quantized
matrix product as::

    x_q = QuantizeLinear(x, x_scale, x_zp)          # optional: the activation's pair
    x_f = DequantizeLinear(x_q, x_scale, x_zp)
    w_f = DequantizeLinear(W_int8, w_scale, w_zp)   # W an initializer, per tensor or per column (axis)
    y   = MatMul(x_f, w_f)   |   Gemm(x_f, w_f, bias, transB=...)

Without this pass, constant folding turns ``w_f`` into a float32 constant (4x the memory) and the activation pair
runs as float ops. :func:`recognise_qdq` rewrites each such ``MatMul`` / ``Gemm`` into one ``ai.ember`` node,
``QdqMatMul``, that reads the weight as an :class:`ember.quantization.QuantizedTensor` parameter of the module
(``[d_input, d_output]``, Ember's layout; :mod:`._qweights`: uint8 weights and zero points shifted by -128, which
is exact) and drops the weight's ``DequantizeLinear``. The converter calls
:func:`ember.quantization.quantized_linear` (weight-only: dequantize, then float) or, when the input is a
per-tensor ``Q -> DQ`` pair with constant parameters, quantizes the input with those parameters and runs
:func:`ember.quantization.quantized_matmul` (the int8 kernel where the scheme allows, see its docs). The numbers are
those of the ONNX graph: ``(q - zp) * scale`` for both operands, the product accumulated exactly in int32 or in
float.

Not recognised (left to the float converters): a weight with a block size, a weight that is not a 2-D
initializer or is also a graph input, ``Gemm`` with ``transA``, a ``DequantizeLinear`` whose output has other
consumers, a scale that is not positive and finite. ``Conv`` is :mod:`._qdq_conv`'s; ``ModelGen`` writes
``QdqMatMul`` as a ``QuantizedLinear`` (``codegen/_quant_recognizers.py``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember import DType, Tensor

from ._context import Context
from ._ir import Graph, Node
from ._qweights import DOMAIN, QWeights, ember_node, facts, quantized_weight, register
from ._registry import converter

__all__ = ["recognise_qdq", "weight_dq", "activation_pair", "activation_qtensor", "DOMAIN"]

_WEIGHT_OPS = ("MatMul", "Gemm")


def _onnx(node: Node) -> bool:
    return node.domain in ("", "ai.onnx")


def _host(graph: Graph, name: str) -> np.ndarray | None:
    data = graph.initializers.get(name)
    return None if data is None else np.asarray(data.to_numpy())


def weight_dq(graph: Graph, producers: dict[str, Node], uses: dict[str, int], name: str) -> Node | None:
    """The ``ai.onnx`` ``DequantizeLinear`` producing ``name`` when ``name`` has no other use and the node has no
    ``block_size``, else ``None``."""
    dq = producers.get(name)
    if dq is None or dq.op_type != "DequantizeLinear" or not _onnx(dq) or uses.get(name, 0) != 1:
        return None
    return None if int(dq.attrs.get("block_size", 0)) else dq


def activation_pair(graph: Graph, producers: dict[str, Node], name: str) -> tuple[str, str, str, int] | None:
    """``(x, scale, zero_point, uint8)`` when ``name`` is ``DequantizeLinear(QuantizeLinear(x, s, z), s, z)`` with
    ``s`` / ``z`` constant per-tensor initializers and ``z`` int8 or uint8 (``uint8`` 1 for uint8), else ``None``.
    A zero point is required: without one ``QuantizeLinear`` gives uint8 with zero point 0."""
    xdq = producers.get(name)
    if xdq is None or xdq.op_type != "DequantizeLinear" or not _onnx(xdq) or len(xdq.inputs) < 3:
        return None
    q = producers.get(xdq.inputs[0])
    if q is None or q.op_type != "QuantizeLinear" or not _onnx(q) or q.inputs[1:3] != xdq.inputs[1:3]:
        return None
    xs = _host(graph, xdq.inputs[1])
    xz = _host(graph, xdq.inputs[2]) if xdq.inputs[2] else None
    if xs is None or xs.size != 1 or xz is None or xz.size != 1 or xz.dtype not in (np.int8, np.uint8):
        return None
    return q.inputs[0], xdq.inputs[1], xdq.inputs[2], int(xz.dtype == np.uint8)


def activation_qtensor(x: Tensor, x_scale: Tensor, x_zp: Tensor, uint8: bool) -> Any:
    """``QuantizeLinear(x, x_scale, x_zp)`` as a per-tensor ``Q8F`` :class:`~ember.quantization.QuantizedTensor`
    (float ``x``; a uint8 zero point shifted by -128, Ember having no uint8 scheme: ONNX saturates to [0, 255],
    Q8F to [-128, 127], the same integers shifted, so ``q - zero_point`` is unchanged)."""
    from ember.quantization import QParams, QuantLevel, QuantScheme, QuantValue

    xz = (x_zp.reshape([1]).cast("int64") - (128 if uint8 else 0)).cast("int8")
    xs = x_scale.reshape([1]).cast("float32")
    xf = x.cast("float32") if x.dtype is not DType.FLOAT32 else x
    return xf.quantize(QuantScheme(QuantValue.Q8F, QuantLevel.tensor()), QParams(xs, xz))


def recognise_qdq(graph: Graph, qweights: QWeights) -> int:
    """Rewrite the QDQ ``MatMul`` / ``Gemm`` patterns of the main graph (see the module docstring) into
    ``ai.ember.QdqMatMul`` nodes reading a quantized weight recorded in ``qweights`` (:mod:`._qweights`; a ``Gemm``
    with ``transB`` gets the transposed integers); the weight's ``DequantizeLinear`` is removed. Returns how many.
    The caller re-resolves the converters."""
    producers, uses, graph_inputs = facts(graph)
    dead: set[int] = set()
    count = 0
    for k, node in enumerate(graph.nodes):
        if node.op_type not in _WEIGHT_OPS or not _onnx(node) or len(node.inputs) < 2:
            continue
        if node.op_type == "Gemm" and int(node.attrs.get("transA", 0)):
            continue
        dq = weight_dq(graph, producers, uses, node.inputs[1])
        if dq is None:
            continue
        trans_b = node.op_type == "Gemm" and bool(int(node.attrs.get("transB", 0)))
        z_name = dq.inputs[2] if len(dq.inputs) > 2 else ""
        qw = quantized_weight(graph, graph_inputs, dq.inputs[0], dq.inputs[1], z_name, int(dq.attrs.get("axis", 1)),
                              rank=2, transpose=trans_b)
        if qw is None:
            continue
        # Ember's layout is [d_input, d_output]: a Gemm with transB stores the transposed integers once
        w_name = register(graph, uses, qweights, dq.inputs[0], qw, "_T" if trans_b else "")
        dead.add(id(dq))
        inputs = [node.inputs[0], w_name, node.inputs[2] if len(node.inputs) > 2 else "", "", ""]
        attrs: dict[str, Any] = {"alpha": float(node.attrs.get("alpha", 1.0)),
                                 "beta": float(node.attrs.get("beta", 1.0))}
        pair = activation_pair(graph, producers, node.inputs[0])
        if pair is not None:
            inputs[0], inputs[3], inputs[4], attrs["x_uint8"] = pair
        graph.nodes[k] = ember_node(node, "QdqMatMul", inputs, attrs)
        count += 1
    graph.nodes[:] = [n for n in graph.nodes if id(n) not in dead]
    return count


@converter("QdqMatMul", since=1, domain=DOMAIN)
def qdq_matmul(ctx: Context, node: Node, x: Tensor, wq: Any, bias: Tensor | None = None,
               x_scale: Tensor | None = None, x_zp: Tensor | None = None) -> Tensor:
    """``alpha * (x @ dequant(wq)) + beta * bias`` with ``wq`` the QuantizedTensor ``[d_input, d_output]`` (see the
    module docstring)."""
    from ember.quantization import quantized_linear, quantized_matmul

    alpha, beta = float(node.attrs.get("alpha", 1.0)), float(node.attrs.get("beta", 1.0))
    lead = list(x.shape[:-1])
    x2 = x.reshape([-1, x.shape[-1]]) if x.rank != 2 else x
    if x_scale is None:
        y = quantized_linear(x2.cast("float32") if x2.dtype is not DType.FLOAT32 else x2, wq)
    else:
        assert x_zp is not None  # recognise_qdq fuses an activation pair only with a zero point
        y = quantized_matmul(activation_qtensor(x2, x_scale, x_zp, bool(int(node.attrs.get("x_uint8", 0)))), wq)
    if alpha != 1.0:
        y = y * alpha
    if bias is not None:
        y = y + (bias.cast(y.dtype) * beta if beta != 1.0 else bias.cast(y.dtype))
    if x.rank != 2:
        y = y.reshape([*lead, y.shape[-1]])
    return y if y.dtype is x.dtype else y.cast(x.dtype)
