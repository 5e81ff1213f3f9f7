"""``quantized_conv2d``: the int8 convolution of two quantized tensors through each library's own kernel
(:meth:`~ember.backend.contract.QuantOps.quantized_conv2d`), with the float fallback where the integer path does
not apply.

The integer path (ONNX ``QLinearConv``, https://onnx.ai/onnx/operators/onnx__QLinearConv.html; ``ConvInteger``
for the accumulator) takes ``x`` 8-bit per tensor (``Q8F`` affine or ``Q8S``) and the weight ``Q8S`` per tensor or
per output channel (``QuantLevel.axis(0)``):

``y[n, o] = sx * sw[o] * sum_{c, i, j} (x_pad[n, c, ...] - zx) * w[o, c, i, j] + bias[o]``

with the int32 sum exact (the input padded with its zero point, the real value 0), then returned as float or
requantized to int8 (``clamp(round_half_even(y / sy) + zy, -128, 127)``). Other schemes (int4, block levels, an
affine weight) take the documented fallback: dequantize both, convolve in float, and quantize the result if asked,
which gives the same numbers up to float rounding.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._kind import Float, Int
from ..tensor import _core
from ..tensor._functional_checks import _fits, _groups, _ints
from ..tensor._tensor import Tensor
from ..tensor.functional import ConvOptions, conv2d
from ._errors import QuantizationError
from ._layout import layout
from ._qtensor import QuantizedTensor
from ._quantize import apply_quantize
from ._scheme import QParams, QuantScheme, QuantValue
from ._validate import check_qparams

__all__ = ["quantized_conv2d", "conv_int_path_applies", "int_conv2d", "channel_scale", "MAX_CONV_K"]

#: channels_in / groups * kernel_h * kernel_w * 255 * 128 must stay below 2**31 for an exact int32 accumulation
MAX_CONV_K = (2**31 - 1) // (255 * 128)
#: the scheme of a requantized result (ONNX QLinearConv's y: int8 per tensor with a zero point)
OUTPUT_SCHEME = QuantScheme(QuantValue.Q8F)


def conv_int_path_applies(x_scheme: QuantScheme, w_scheme: QuantScheme, k: int) -> bool:
    """Whether a convolution runs on the int8 kernel: ``x`` 8-bit per tensor, the weight ``Q8S`` per tensor or per
    output channel (axis 0), and ``k = channels_in / groups * kernel_h * kernel_w`` at most :data:`MAX_CONV_K`."""
    lw = w_scheme.level
    ok_w = w_scheme.value is QuantValue.Q8S and (lw.kind == "tensor" or (lw.kind == "axis" and lw.dim == 0))
    return x_scheme.value.bits == 8 and x_scheme.level.kind == "tensor" and ok_w and k <= MAX_CONV_K


def int_conv2d(
    x: QuantizedTensor,
    w_values: Tensor,
    w_scale: Tensor,
    bias: Tensor | None,
    stride: tuple[int, int],
    padding: tuple[int, int],
    dilation: tuple[int, int],
    groups: int,
    output: QParams | None,
    cache: dict[Any, Any] | None,
) -> Tensor | QuantizedTensor:
    """The integer path without the checks: ``w_values`` the int8 ``[o, c / groups, kh, kw]`` weight and
    ``w_scale`` its float32 ``[o]`` scales, both on the inner device; ``cache`` a dict kept with the weight."""
    dev = x.device
    xi = x.inner()
    inner = xi.device
    qp = xi.qparams
    zx = None if qp.zero_point is None else qp.zero_point.primitive
    b = None if bias is None else bias.inner().primitive
    sy = zy = None
    if output is not None:
        sy = output.scale.inner().primitive
        zy = None if output.zero_point is None else output.zero_point.inner().primitive
    if cache is not None and not inner.backend.is_concrete(xi.values.primitive):
        cache = None  # inside a trace: nothing packed from traced values may outlive it
    ops = inner.ops[Float.index]
    p = ops.quantized_conv2d(
        xi.values.primitive,
        qp.scale.primitive,
        zx,
        w_values.primitive,
        w_scale.primitive,
        b,
        stride,
        padding,
        dilation,
        groups,
        inner.backend.float_dtype,
        sy,
        zy,
        cache,
    )
    if output is None:
        out = _core.new(p, inner, Float, ops)
        return out if inner is dev else out.from_inner(out, dev)
    q = _core.new(p, inner, Int, inner.ops[Int.index])
    if inner is not dev:
        q = q.from_inner(q, dev)
    return QuantizedTensor.trusted(q, tuple(q.shape), OUTPUT_SCHEME, _output_qparams(output, dev))


def _output_qparams(output: QParams, dev: Any) -> QParams:
    if output.zero_point is not None:
        return output
    return QParams(output.scale, Tensor.from_data(np.zeros(1, np.int8), dev, Int, dtype="int8"))


def quantized_conv2d(
    x: QuantizedTensor,
    weight: QuantizedTensor,
    bias: Tensor | None = None,
    options: ConvOptions = ConvOptions(),
    *,
    output: QParams | None = None,
) -> Tensor | QuantizedTensor:
    """2-D convolution of a quantized input by a quantized weight (ONNX ``QLinearConv``; PyTorch
    ``torch.ao.nn.quantized.Conv2d``), on the int8 kernel where the schemes allow (see the module docstring).

    Args:
        x: quantized ``[batch, channels_in, height, width]``; int8 per tensor (``Q8F`` or ``Q8S``) for the int path.
        weight: quantized ``[channels_out, channels_in / groups, kernel_h, kernel_w]`` on ``x``'s device; ``Q8S``
            per tensor or per output channel (``QuantLevel.axis(0)``) for the int path.
        bias: optional Float tensor ``[channels_out]`` (added in float before any requantization).
        options: :class:`~ember.tensor.functional.ConvOptions` (stride, padding on both sides, dilation, groups),
            as :func:`~ember.tensor.functional.conv2d`.
        output: ``None`` returns a Float tensor (the backend's float type); ``QParams(scale [1], zero_point [1]
            int8 or None)`` returns the result requantized to int8 per tensor, a :class:`QuantizedTensor` with
            scheme ``QuantScheme(QuantValue.Q8F)`` (a missing zero point is stored as 0), range ``[-128, 127]``.

    Returns:
        ``[batch, channels_out, h_out, w_out]``: ``conv2d(dequantize(x), dequantize(weight)) + bias`` up to float
        rounding (exact integer accumulation on the int path), or its quantized form. No gradient (inference).

    Raises:
        QuantizationError: ``x`` / ``weight`` not QuantizedTensors of rank 4, channels or groups that do not fit,
            a bias of the wrong shape, devices that differ, ``output`` qparams that are not per tensor.
        ShapeError: the dilated kernel is larger than the padded input.
    """
    op = "quantized_conv2d"
    for name, t in (("x", x), ("weight", weight)):
        if not isinstance(t, QuantizedTensor) or t.rank != 4:
            got = f"shape {list(t.shape)}" if isinstance(t, QuantizedTensor) else type(t).__name__
            raise QuantizationError(f"{op}: {name} must be a rank-4 QuantizedTensor, got {got}; quantize it first.")
    if x.device is not weight.device:
        raise QuantizationError(f"{op}: x is on {x.device} and the weight on {weight.device}; move one of them.")
    stride = _ints(op, "stride", options.stride, 2, 1)
    padding = _ints(op, "padding", options.padding, 2, 0)
    dilation = _ints(op, "dilation", options.dilation, 2, 1)
    groups = _groups(op, options.groups)
    c, (o, cg, kh, kw) = x.shape[1], weight.shape
    if c % groups or o % groups or cg * groups != c:
        raise QuantizationError(
            f"{op}: x has {c} channels and the weight {list(weight.shape)} with groups={groups}; expected "
            f"channels_in = weight.shape[1] * groups and groups dividing channels_out."
        )
    if bias is not None and (not isinstance(bias, Tensor) or bias.kind is not Float or tuple(bias.shape) != (o,)):
        found = str(list(bias.shape)) if isinstance(bias, Tensor) else type(bias).__name__
        raise QuantizationError(f"{op}: bias must be a Float tensor of shape [{o}], got {found}.")
    if bias is not None and bias.device is not x.device:
        raise QuantizationError(f"{op}: the bias is on {bias.device} and x on {x.device}.")
    if output is not None:
        check_qparams(
            op,
            OUTPUT_SCHEME,
            output if output.zero_point is not None else _output_qparams(output, x.device),
            (1,),
            x.device,
        )
    _fits(op, x, (kh, kw), padding, dilation)
    if conv_int_path_applies(x.scheme, weight.scheme, cg * kh * kw):
        wi = weight.inner()
        values = wi.int_values()
        scale = weight.derived("conv-scale", lambda: channel_scale(wi, o))
        st, pd, dl = (stride[0], stride[1]), (padding[0], padding[1]), (dilation[0], dilation[1])
        return int_conv2d(x, values, scale, bias, st, pd, dl, groups, output, weight.kernel_cache())
    y = conv2d(x.dequantize(), weight.dequantize(), bias, ConvOptions(stride, padding, dilation, groups))
    if output is None:
        return y
    return apply_quantize(y, OUTPUT_SCHEME, _output_qparams(output, x.device), layout(op, OUTPUT_SCHEME, y.shape))


def channel_scale(w: QuantizedTensor, o: int) -> Tensor:
    """The float32 ``[o]`` scales of an inner weight (any shape) quantized per tensor or along axis 0."""
    s = w.qparams.scale.cast("float32").reshape([-1])
    return s if s.shape[0] == o else s.expand([o])
