"""``QLinearMatMul`` / ``QLinearConv`` with a constant weight: the weight kept as an
:class:`ember.quantization.QuantizedTensor` parameter of the imported module (integers and scales in its record).

onnxruntime's ``quantize_static`` / ``quantize_dynamic`` in the ``QOperator`` format writes ``QLinearConv(x, x_scale,
x_zp, W, w_scale, w_zp, y_scale, y_zp, B)`` and ``QLinearMatMul(a, a_scale, a_zp, B, b_scale, b_zp, y_scale,
y_zp)`` with ``W`` / ``B`` int8 (or uint8) initializers. :func:`recognise_qlinear` rewrites each node whose weight,
weight scale and weight zero point are initializers into the same-named ``ai.ember`` node that reads one quantized
weight instead of the three (``QLinearConv``: scale per tensor or per output channel; ``QLinearMatMul``: a 2-D
``B``, scale per tensor or per column). The converters compute exactly what the ``ai.onnx`` converters of
:mod:`.ops._quantize` compute, on the weight's integers and zero points (uint8 shifted to int8, which leaves
``w - w_zero_point`` unchanged): the int32 product of the centered operands requantized with
``a_scale * w_scale / y_scale`` in float64, rounded half to even. onnxruntime's kernels requantize in float32
(MLAS), so a value that lands on a rounding boundary may differ by one quantum from onnxruntime's, never more.

onnxruntime's ``QLinearAdd`` / ``QLinearMul`` (``com.microsoft``) are converted in :mod:`.ops._quantize_ms` (no
weight); the integer ``ConvInteger`` / ``MatMulInteger`` of ``quantize_dynamic`` take a weight as an integer
constant of the program (its scale is a separate ``Mul``).
"""

from __future__ import annotations

from typing import Any

from ember import DType, Tensor

from ._context import Context
from ._ir import Graph, Node
from ._qdq import DOMAIN
from ._qdq_conv import kernel_conv, kernel_options
from ._qweights import QWeights, ember_node, facts, quantized_weight, register
from ._registry import converter
from .ops._axes import as_dtype
from .ops._quantize import qlinear_conv as _qlinear_conv
from .ops._quantize import qlinear_matmul as _qlinear_matmul

__all__ = ["recognise_qlinear"]

#: op -> (index of the weight, the weight's rank (None: any of at least 3), axis of a 1-D weight scale)
_WEIGHT = {"QLinearMatMul": (3, 2, 1), "QLinearConv": (3, None, 0)}


def recognise_qlinear(graph: Graph, qweights: QWeights) -> int:
    """Rewrite ``QLinearMatMul`` / ``QLinearConv`` nodes with a constant weight (see the module docstring) into
    ``ai.ember`` nodes of the same name whose inputs ``3:6`` are replaced by one quantized weight; returns how many."""
    _, uses, graph_inputs = facts(graph)
    count = 0
    for k, node in enumerate(graph.nodes):
        spec = _WEIGHT.get(node.op_type)
        if spec is None or node.domain not in ("", "ai.onnx") or len(node.inputs) < 8:
            continue
        i, rank, axis = spec
        w_name, s_name, z_name = node.inputs[i : i + 3]
        w = graph.initializers.get(w_name)
        if w is None or (rank is not None and len(w.shape) != rank) or (rank is None and len(w.shape) < 3):
            continue
        qw = quantized_weight(graph, graph_inputs, w_name, s_name, z_name, axis, rank=len(w.shape))
        if qw is None:
            continue
        name = register(graph, uses, qweights, w_name, qw)
        inputs = [*node.inputs[:i], name, *node.inputs[i + 3 :]]
        graph.nodes[k] = ember_node(node, node.op_type, inputs)
        count += 1
    return count


def _parts(wq: Any) -> tuple[Tensor, Tensor, Tensor | None]:
    """The integers, scales and zero points (``None`` when symmetric) of a quantized weight."""
    return wq.values, wq.qparams.scale, wq.qparams.zero_point


@converter("QLinearMatMul", since=1, domain=DOMAIN)
def qlinear_matmul_q(
    ctx: Context, node: Node, a: Tensor, a_scale: Tensor, a_zp: Tensor, wq: Any, y_scale: Tensor, y_zp: Tensor
) -> Tensor:
    """``QLinearMatMul`` with ``B`` the quantized weight ``wq`` (``[K, N]``)."""
    b, b_scale, b_zp = _parts(wq)
    return _qlinear_matmul(ctx, node, a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp)  # type: ignore[arg-type]


@converter("QLinearConv", since=1, domain=DOMAIN)
def qlinear_conv_q(
    ctx: Context,
    node: Node,
    x: Tensor,
    x_scale: Tensor,
    x_zp: Tensor,
    wq: Any,
    y_scale: Tensor,
    y_zp: Tensor,
    bias: Tensor | None = None,
) -> Tensor:
    """``QLinearConv`` with ``W`` the quantized weight ``wq`` (``[M, C / group, *kernel]``): on the int8 kernel
    (:func:`kernel_qlinear_conv`) where it applies, else the generic integer computation of
    :func:`.ops._quantize.qlinear_conv`."""
    opts = kernel_options(node, x, wq)
    if opts is not None and _kernel_types(x, x_zp, y_scale, y_zp):
        return kernel_qlinear_conv(x, x_scale, x_zp, wq, y_scale, y_zp, bias, opts)
    w, w_scale, w_zp = _parts(wq)
    return _qlinear_conv(ctx, node, x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, bias)  # type: ignore[arg-type]


def _kernel_types(x: Tensor, x_zp: Tensor | None, y_scale: Tensor, y_zp: Tensor | None) -> bool:
    """Whether the operands have the kernel's types: ``x`` int8/uint8 with a zero point of its type, per-tensor
    input and output qparams, an int8/uint8 output zero point."""
    eight = (DType.INT8, DType.UINT8)
    return (
        x.dtype in eight
        and x_zp is not None
        and x_zp.dtype is x.dtype
        and x_zp.num_elements() == 1
        and y_scale.num_elements() == 1
        and y_zp is not None
        and y_zp.dtype in eight
        and y_zp.num_elements() == 1
    )


def _shifted(t: Tensor, uint8: bool) -> Tensor:
    """int8 integers: ``t`` itself, or a uint8 ``t`` shifted by -128 (exact; Ember has no uint8 scheme)."""
    return as_dtype(as_dtype(t, DType.INT32) - 128, DType.INT8) if uint8 else as_dtype(t, DType.INT8)


def kernel_qlinear_conv(
    x: Tensor, x_scale: Tensor, x_zp: Tensor, wq: Any, y_scale: Tensor, y_zp: Tensor, bias: Tensor | None, opts: Any
) -> Tensor:
    """``QLinearConv`` on :func:`ember.quantization.quantized_conv2d` with a requantized int8 output.

    ``x`` / ``x_zp`` int8 or uint8 per tensor (uint8 shifted by -128, which leaves ``x - x_zp`` unchanged), the int32
    bias ``B`` passed as the float ``B * x_scale * w_scale[o]``, ``output=QParams(y_scale, y_zp)`` (a uint8 ``y_zp``
    shifted by -128, the result shifted back: ``clamp(r + z, 0, 255) - 128 = clamp(r + z - 128, -128, 127)``).
    The kernel computes ``round_half_even((x_scale * w_scale[o] * acc + bias_f) / y_scale) + y_zp`` in float32
    where the ONNX reference computes ``round_half_even((acc + B) * (x_scale * w_scale[o] / y_scale))`` in float64
    and onnxruntime (MLAS) the same product in float32: the values agree except where the real result lies within
    float32 rounding of a half-integer, where they may differ by one quantum.
    """
    from ember.quantization import QParams, QuantizedTensor, QuantLevel, QuantScheme, QuantValue

    x_u8, y_u8 = x.dtype is DType.UINT8, y_zp.dtype is DType.UINT8
    xs = as_dtype(x_scale.reshape([1]), DType.FLOAT32)
    xq = QuantizedTensor(
        _shifted(x, x_u8),
        tuple(x.shape),
        QuantScheme(QuantValue.Q8F, QuantLevel.tensor()),
        QParams(xs, _shifted(x_zp.reshape([1]), x_u8)),
    )
    bias_f = None
    if bias is not None:
        ws = as_dtype(wq.qparams.scale, DType.FLOAT32).reshape([-1])
        bias_f = as_dtype(bias, DType.FLOAT32) * (ws * xs)
    out = QParams(as_dtype(y_scale.reshape([1]), DType.FLOAT32), _shifted(y_zp.reshape([1]), y_u8))
    y = kernel_conv(xq, wq, opts, bias_f, out).values
    return as_dtype(as_dtype(y, DType.INT32) + 128, DType.UINT8) if y_u8 else y
