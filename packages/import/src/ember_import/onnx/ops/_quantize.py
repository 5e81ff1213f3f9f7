"""Quantization: ``QuantizeLinear`` / ``DequantizeLinear`` (opsets 10-28), ``DynamicQuantizeLinear`` (11),
``MatMulInteger``, ``ConvInteger``, ``QLinearMatMul`` (10, 21) and ``QLinearConv`` (10).

Formulas follow the ONNX operator specification and its reference implementation
(``onnx/reference/ops/op_quantize_linear.py``, ``op_dequantize_linear.py``, ``_quant_utils.py``,
``op_qlinear_matmul.py``, ...): ``q = saturate(round_half_even(x / scale) + zero_point)`` and
``x = (q - zero_point) * scale``, with a scalar (per-tensor), 1-D (per-axis, ``axis``) or blocked
(``block_size`` along ``axis``) scale and zero point. Integer products accumulate in int32. Integer quantized
types are int8/uint8/int16/uint16; float8, 4-bit and 2-bit types have no Ember equivalent and are refused.

Opset versions: later versions only add attributes (``axis`` 13, ``saturate`` 19 (float8 only),
``block_size``/``output_dtype`` 21/23, ``precision`` 23) or element types, so one converter reads each
attribute with its default.
"""

from __future__ import annotations

from ember import DType, Tensor

from .._context import Context
from .._dtypes import dtype_of
from .._errors import OnnxImportError
from .._ir import Node
from .._registry import converter
from ._axes import as_dtype, norm_axis
from ._conv import conv

__all__ = ["quant_range", "broadcast_param", "requantize"]

#: the integer quantized types and their ranges
_RANGES = {
    DType.UINT8: (0, 255), DType.INT8: (-128, 127), DType.INT16: (-32768, 32767),
}
if hasattr(DType, "UINT16"):
    _RANGES[DType.UINT16] = (0, 65535)


def quant_range(node: Node, dtype: DType) -> tuple[int, int]:
    """``(min, max)`` of an integer quantized type.

    Raises:
        OnnxImportError: ``dtype`` is not int8/uint8/int16/uint16.
    """
    try:
        return _RANGES[dtype]
    except KeyError:
        raise OnnxImportError(
            f"{node.where()}: quantized type {dtype} is not supported; expected one of "
            f"{', '.join(str(d) for d in _RANGES)}."
        ) from None


def _wide(*ts: Tensor | None) -> DType:
    """The float type to compute in: float64 when any float operand is, else float32."""
    return DType.FLOAT64 if any(t is not None and t.dtype is DType.FLOAT64 for t in ts) else DType.FLOAT32


def _div(a: Tensor, b: Tensor | float, dtype: DType) -> Tensor:
    """``a / b`` correctly rounded in ``dtype``: computed in float64 (where the backend has it) and rounded
    once, as IEEE division does; XLA divides float32 as ``a * (1 / b)``, which moves halfway values of
    ``x / scale`` and so the quantized result."""
    wide = DType.FLOAT64 if DType.FLOAT64 in a.device.backend.supported_dtypes else dtype
    den = as_dtype(b, wide) if isinstance(b, Tensor) else b
    return as_dtype(as_dtype(a, wide).div(den), dtype)


def broadcast_param(node: Node, p: Tensor, shape: list[int], axis: int, block_size: int) -> Tensor:
    """A scale or zero point shaped to broadcast against ``shape``: a scalar or 1-element tensor as it is
    (per tensor), a 1-D ``[shape[axis]]`` along ``axis`` (per axis), or, with ``block_size > 0``, an N-D tensor
    whose ``axis`` dim counts blocks, each entry repeated ``block_size`` times (and the last block trimmed).

    Raises:
        OnnxImportError: the parameter's shape fits none of these.
    """
    if p.num_elements() == 1:
        return p.reshape([])
    axis = norm_axis(node, axis, len(shape))
    if not block_size:
        if p.rank != 1 or p.shape[0] != shape[axis]:
            raise OnnxImportError(
                f"{node.where()}: a per-axis scale/zero point must be 1-D of size {shape[axis]} (axis {axis} of "
                f"input {shape}), found shape {list(p.shape)}."
            )
        return p.reshape([shape[axis] if d == axis else 1 for d in range(len(shape))])
    ps = list(p.shape)
    if len(ps) != len(shape) or any(a != b for d, (a, b) in enumerate(zip(ps, shape)) if d != axis) or (
        ps[axis] * block_size < shape[axis]
    ):
        raise OnnxImportError(
            f"{node.where()}: a blocked scale/zero point must match input {shape} except on axis {axis}, where it "
            f"counts blocks of {block_size}; found shape {ps}."
        )
    rep = p.unsqueeze_dim(axis + 1)
    rep = rep.expand(ps[: axis + 1] + [block_size] + ps[axis + 1:])
    rep = rep.reshape(ps[:axis] + [ps[axis] * block_size] + ps[axis + 1:])
    return rep.narrow(axis, 0, shape[axis])


def _saturate(node: Node, y: Tensor, dtype: DType) -> Tensor:
    """A float tensor of integral values clamped to ``dtype``'s range and converted to it."""
    lo, hi = quant_range(node, dtype)
    return as_dtype(y.clamp(lo, hi), dtype)


def _axis_block(node: Node) -> tuple[int, int]:
    """``(axis, block_size)`` attributes (ONNX defaults 1 and 0); the axis is checked where it is used."""
    return int(node.attr("axis", 1)), int(node.attr("block_size", 0))


@converter("QuantizeLinear", since=10)
def quantize_linear(ctx: Context, node: Node, x: Tensor, scale: Tensor, zero_point: Tensor | None = None) -> Tensor:
    """``QuantizeLinear``: ``saturate(round(x / y_scale) + y_zero_point)`` into the zero point's type (else
    ``output_dtype``, else uint8); ``precision`` (23) names the type of the division."""
    out = zero_point.dtype if zero_point is not None else None
    if out is None:
        code = int(node.attr("output_dtype", 0))
        out = dtype_of(code, f"{node.where()} output_dtype") if code else DType.UINT8
    quant_range(node, out)
    axis, block = _axis_block(node)
    shape = list(x.shape)
    precision = int(node.attr("precision", 0))
    work = dtype_of(precision, f"{node.where()} precision") if precision else (
        x.dtype if x.dtype is scale.dtype else _wide(x, scale))
    q = _div(as_dtype(x, work), as_dtype(broadcast_param(node, scale, shape, axis, block), work), work).round()
    if zero_point is not None:
        q = q.add(as_dtype(broadcast_param(node, zero_point, shape, axis, block), work))
    return _saturate(node, q, out)


@converter("DequantizeLinear", since=10)
def dequantize_linear(ctx: Context, node: Node, x: Tensor, scale: Tensor, zero_point: Tensor | None = None) -> Tensor:
    """``DequantizeLinear``: ``(x - x_zero_point) * x_scale`` computed in float32 (float64 for a float64
    scale), returned in ``output_dtype`` (23) or the scale's type."""
    axis, block = _axis_block(node)
    shape = list(x.shape)
    work = _wide(scale)
    y = as_dtype(x, work)
    if zero_point is not None:
        y = y.sub(as_dtype(broadcast_param(node, zero_point, shape, axis, block), work))
    y = y.mul(as_dtype(broadcast_param(node, scale, shape, axis, block), work))
    code = int(node.attr("output_dtype", 0))
    return as_dtype(y, dtype_of(code, f"{node.where()} output_dtype") if code else scale.dtype)


@converter("DynamicQuantizeLinear", since=11)
def dynamic_quantize_linear(ctx: Context, node: Node, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """``DynamicQuantizeLinear`` 11: uint8 quantization with ``scale = (max(0, max x) - min(0, min x)) / 255``
    (``1 / 255`` when both are 0) and ``zero_point = saturate(round(-min / scale))``; returns ``y``,
    ``y_scale`` (x's type) and ``y_zero_point`` (uint8 scalars)."""
    xf = as_dtype(x, DType.FLOAT32)
    hi = xf.max().reshape([]).clamp_min(0.0)
    lo = xf.min().reshape([]).clamp_max(0.0)
    span = hi.sub(lo)
    f32 = DType.FLOAT32
    scale = _div(span.mask_fill(span.equal(0.0), 1.0), 255.0, f32)
    zp = _div(lo.neg(), scale, f32).clamp(0.0, 255.0).round()
    y = _saturate(node, _div(xf, scale, f32).round().add(zp), DType.UINT8)
    return y, as_dtype(scale, x.dtype), _saturate(node, zp, DType.UINT8)


# ---------------------------------------------------------------------------------------------- integer products
def _centered(node: Node, q: Tensor, zero_point: Tensor | None, shape_of_zp: list[int] | None = None) -> Tensor:
    """``q - zero_point`` in int32 (``zero_point`` reshaped to ``shape_of_zp`` when given)."""
    out = as_dtype(q, DType.INT32)
    if zero_point is not None:
        zp = as_dtype(zero_point, DType.INT32)
        if shape_of_zp is not None and zp.num_elements() > 1:
            zp = zp.reshape(shape_of_zp)
        out = out.sub(zp)
    return out


def _row_zp_shape(a: Tensor, zp: Tensor | None) -> list[int] | None:
    """A 1-D per-row zero point of ``a`` (``[M]`` for ``a`` ``[..., M, K]``) as ``[M, 1]``."""
    return [zp.num_elements(), 1] if zp is not None and zp.rank >= 1 and a.rank >= 2 else None


def _int_matmul(node: Node, a: Tensor, a_zp: Tensor | None, b: Tensor, b_zp: Tensor | None) -> Tensor:
    """``(a - a_zero_point) @ (b - b_zero_point)`` in int32: ``a_zero_point`` per tensor or per row of ``a``,
    ``b_zero_point`` per tensor or per column of ``b``; 1-D operands as ``numpy.matmul``."""
    va, vb = a.rank == 1, b.rank == 1
    a2 = a.unsqueeze_dim(0) if va else a
    b2 = b.unsqueeze_dim(1) if vb else b
    ca = _centered(node, a2, a_zp, _row_zp_shape(a2, a_zp))
    cb = _centered(node, b2, b_zp)
    y = ca.matmul(cb)
    if va:
        y = y.squeeze_dim(-2)
    if vb:
        y = y.squeeze_dim(-1)
    return y


def _int_conv(ctx: Context, node: Node, x: Tensor, x_zp: Tensor | None, w: Tensor, w_zp: Tensor | None) -> Tensor:
    """``conv(x - x_zero_point, w - w_zero_point)`` exactly in int32 (``w_zero_point`` per tensor or per
    output channel), computed as a float64 convolution (exact for sums below 2^53; float32 where the backend
    lacks float64)."""
    wshape = [w.shape[0]] + [1] * (w.rank - 1)
    cx = _centered(node, x, x_zp)
    cw = _centered(node, w, w_zp, wshape)
    work = DType.FLOAT64 if DType.FLOAT64 in ctx.device.backend.supported_dtypes else DType.FLOAT32
    y = conv(ctx, node, as_dtype(cx, work), as_dtype(cw, work))
    return as_dtype(y.round(), DType.INT32)


@converter("MatMulInteger", since=10)
def matmul_integer(
    ctx: Context, node: Node, a: Tensor, b: Tensor, a_zp: Tensor | None = None, b_zp: Tensor | None = None
) -> Tensor:
    """``MatMulInteger`` 10: ``(A - a_zero_point) @ (B - b_zero_point)`` of 8-bit integers, into int32."""
    return _int_matmul(node, a, a_zp, b, b_zp)


@converter("ConvInteger", since=10)
def conv_integer(
    ctx: Context, node: Node, x: Tensor, w: Tensor, x_zp: Tensor | None = None, w_zp: Tensor | None = None
) -> Tensor:
    """``ConvInteger`` 10: ``Conv`` (all its attributes) of ``x - x_zero_point`` and ``w - w_zero_point``,
    into int32."""
    return _int_conv(ctx, node, x, x_zp, w, w_zp)


def requantize(node: Node, acc: Tensor, factor: Tensor, y_zp: Tensor | None, out: DType) -> Tensor:
    """``saturate(round(acc * factor) + y_zero_point)`` into ``out``: an int32 accumulator requantized, in
    float64 where the backend has it (as the reference, whose int32 * float product is float64)."""
    work = DType.FLOAT64 if DType.FLOAT64 in acc.device.backend.supported_dtypes else _wide(factor)
    y = as_dtype(acc, work).mul(as_dtype(factor, work)).round()
    if y_zp is not None:
        y = y.add(as_dtype(y_zp, work))
    return _saturate(node, y, out)


def _scale_product(a_scale: Tensor, b_scale: Tensor, y_scale: Tensor, b_shape: list[int] | None = None) -> Tensor:
    """``a_scale * b_scale / y_scale`` in the scales' type (``b_scale`` reshaped to ``b_shape`` when 1-D)."""
    if b_shape is not None and b_scale.num_elements() > 1:
        b_scale = b_scale.reshape(b_shape)
    if a_scale.num_elements() == 1:
        a_scale = a_scale.reshape([])
    num = a_scale.mul(b_scale)
    return _div(num, y_scale.reshape([]) if y_scale.num_elements() == 1 else y_scale, num.dtype)


@converter("QLinearMatMul", since=10)
def qlinear_matmul(
    ctx: Context, node: Node, a: Tensor, a_scale: Tensor, a_zp: Tensor, b: Tensor, b_scale: Tensor,
    b_zp: Tensor, y_scale: Tensor, y_zp: Tensor,
) -> Tensor:
    """``QLinearMatMul`` 10/21 (21 adds float16/bfloat16 scales and float8 types): the int32 product of the
    centered operands requantized with ``a_scale * b_scale / y_scale`` and ``y_zero_point``. A 1-D
    ``a_scale`` is per row of ``a``, a 1-D ``b_scale`` per column of ``b``."""
    acc = _int_matmul(node, a, a_zp, b, b_zp)
    a_scale = a_scale.reshape([-1, 1]) if a_scale.num_elements() > 1 else a_scale
    factor = _scale_product(a_scale, b_scale, y_scale)
    return requantize(node, acc, factor, y_zp, y_zp.dtype if y_zp is not None else a.dtype)


@converter("QLinearConv", since=10)
def qlinear_conv(
    ctx: Context, node: Node, x: Tensor, x_scale: Tensor, x_zp: Tensor, w: Tensor, w_scale: Tensor,
    w_zp: Tensor, y_scale: Tensor, y_zp: Tensor, bias: Tensor | None = None,
) -> Tensor:
    """``QLinearConv`` 10: the int32 convolution of the centered operands plus the int32 bias ``B``,
    requantized with ``x_scale * w_scale / y_scale`` (``w_scale`` per tensor or per output channel)."""
    acc = _int_conv(ctx, node, x, x_zp, w, w_zp)
    if bias is not None:
        acc = acc.add(as_dtype(bias, DType.INT32).reshape([1, -1] + [1] * (acc.rank - 2)))
    factor = _scale_product(x_scale, w_scale, y_scale, [1, -1] + [1] * (acc.rank - 2))
    return requantize(node, acc, factor, y_zp, y_zp.dtype if y_zp is not None else x.dtype)
