"""Quantized layers: ``Linear``, ``Conv1d`` / ``Conv2d`` and ``Embedding`` holding quantized weights.

What :class:`~ember.quantization.Quantizer` puts in place of the float layers (``torch.ao.nn.quantized`` and
``torch.ao.nn.quantized.dynamic``'s modules; Burn keeps the layer and quantizes its parameter tensor). Each holds
its weight as a :class:`~ember.quantization.QuantizedTensor` (values and scales stored as they are in records)
held by a :class:`~ember.module.Param` (``require_grad=False``, the float weight's id), the float bias as a
``Param``, and how its input is quantized:

- ``input=None``: weight-only. Linear runs :func:`~ember.quantization.quantized_linear` without an activation
  scheme (the weight is dequantized, then a float matmul); Conv and Embedding dequantize the weight explicitly,
  then run the float op.
- ``input=InputQuant(scheme)`` (dynamic, Linear only; ``torch.ao``'s dynamic quantization): each call quantizes
  its input with the range of that input (:meth:`Tensor.quantize_dynamic`) and runs the int8 kernels of
  :func:`~ember.quantization.quantized_linear`.
- ``input=InputQuant(scheme, scale, zero_point)`` (static: a range calibrated beforehand, stored in the record as
  running states): Linear quantizes its input with those qparams and runs
  :func:`~ember.quantization.quantized_matmul`; Conv quantizes its input with them and runs the int8 convolution
  (:meth:`~ember.backend.contract.QuantOps.quantized_conv2d`, float result; Conv1d as a Conv2d of height 1) when
  the weight is ``Q8S`` per tensor or per output channel; other weights (int4, blocks) take the documented
  fallback: the input is quantized and dequantized with the qparams and the float convolution runs on the
  dequantized weight.

Shapes, layouts and errors are the float layer's (Ember's ``Linear`` weight is ``[d_input, d_output]``).
"""

from __future__ import annotations

from typing import Any

from .._quantization._conv import channel_scale, conv_int_path_applies, int_conv2d
from .._quantization._matmul import quantized_linear, quantized_matmul
from .._quantization._scheme import QParams, QuantScheme
from ..module import Module, Param, RunningState
from ..nn._checks import check_dim, check_float, check_int, check_rank
from ..tensor import Tensor
from ..tensor import functional as M

__all__ = ["InputQuant", "QuantizedLinear", "QuantizedConv1d", "QuantizedConv2d", "QuantizedEmbedding"]


class InputQuant(Module):
    """How a quantized layer quantizes its input: ``scheme``, and for static quantization the calibrated
    ``scale`` / ``zero_point`` (running states of the scale's shape, saved in records; ``None`` for dynamic).
    """

    scheme: QuantScheme
    scale: RunningState | None = None
    zero_point: RunningState | None = None

    @property
    def static(self) -> bool:
        return self.scale is not None

    def qparams(self) -> QParams:
        """The static :class:`QParams` (a ``ValueError`` for a dynamic one)."""
        if self.scale is None:
            raise ValueError("InputQuant.qparams: a dynamic input quantization has no stored qparams.")
        zp = None if self.zero_point is None else self.zero_point.value()
        return QParams(self.scale.value(), zp)

    def quantize(self, x: Tensor) -> Any:
        """``x`` quantized: with the stored qparams (static) or with its own range (dynamic)."""
        if self.scale is None:
            return x.quantize_dynamic(self.scheme)
        return x.quantize(self.scheme, self.qparams())

    def fake(self, x: Tensor) -> Tensor:
        """``x`` quantized and dequantized (what the integer op sees, in float)."""
        return self.quantize(x).dequantize().cast(x.dtype)


class QuantizedLinear(Module):
    """``y = x @ dequant(weight) + bias`` with a quantized ``weight`` ``[d_input, d_output]`` (see the module
    docstring for ``input``). Shapes: ``[..., d_input] -> [..., d_output]``, the input's float type.

    Raises (forward):
        KindError: a non-Float input. ShapeError: the last dim is not ``d_input``.
    """

    weight: Param  # holds a QuantizedTensor
    bias: Param | None = None
    input: InputQuant | None = None

    def forward(self, x: Tensor) -> Tensor:
        check_float("QuantizedLinear", x)
        w: Any = self.weight.val()  # a QuantizedTensor
        d_in, d_out = w.shape
        check_dim("QuantizedLinear", x, -1, d_in, "[..., d_input]", "d_input")
        shape = x.shape
        flat = x if x.rank == 2 else x.reshape([-1, d_in])
        bias = None if self.bias is None else self.bias.val()
        inp = self.input
        if inp is None:
            y = quantized_linear(flat, w, bias)
        elif not inp.static:
            y = quantized_linear(flat, w, bias, activation_scheme=inp.scheme)
        else:
            y = quantized_matmul(inp.quantize(flat), w)
            if y.dtype is not x.dtype:
                y = y.cast(x.dtype)
            if bias is not None:
                y = y + bias
        return y if x.rank == 2 else y.reshape([*shape[:-1], d_out])


def _conv_forward(layer: str, nd: int, conv: Any, x: Tensor) -> Tensor:
    check_float(layer, x)
    layout = "[batch, channels_in, length]" if nd == 1 else "[batch, channels_in, height, width]"
    check_rank(layer, x, nd + 2, layout)
    wq = _qt(conv.weight)
    check_dim(layer, x, 1, conv.shape[1] * conv.groups, layout, "channels_in")
    pad = conv.padding
    if conv.padding_right != pad:
        x = x.pad([(0, 0), (0, 0), *zip(conv.padding, conv.padding_right)])
        pad = (0,) * nd
    b = conv.bias.val() if conv.bias is not None else None
    inp = conv.input
    k = conv.shape[1] * _prod(conv.shape[2:])
    if inp is not None and inp.static and conv_int_path_applies(inp.scheme, wq.scheme, k):
        return _int_conv(nd, conv, wq, x, b, pad)
    w = wq.dequantize().reshape(list(conv.shape))
    if w.dtype is not x.dtype:
        w = w.cast(x.dtype)
    if inp is not None:
        x = inp.fake(x)
    return M._conv_prechecked("conv1d" if nd == 1 else "conv2d", x, w, b, conv.stride, pad, conv.dilation,
                              conv.groups)


def _int_conv(nd: int, conv: Any, wq: Any, x: Tensor, b: Tensor | None, pad: tuple[int, ...]) -> Tensor:
    """The static int8 path: ``x`` quantized with the calibrated qparams, then the int8 convolution kernel
    (:func:`~ember.quantization.quantized_conv2d`'s), a float result; Conv1d runs as a Conv2d of height 1."""
    shape = tuple(conv.shape) if nd == 2 else (conv.shape[0], conv.shape[1], 1, conv.shape[2])
    wi = wq.inner()
    values = wq.derived("conv-values", lambda: wi.int_values().reshape(list(shape)))
    scale = wq.derived("conv-scale", lambda: channel_scale(wi, shape[0]))
    if nd == 1:
        x = x.unsqueeze_dim(2)
    xq = conv.input.quantize(x.detach())
    def two(t: tuple[int, ...], lead: int) -> tuple[int, int]:
        return (int(t[0]), int(t[1])) if nd == 2 else (lead, int(t[0]))

    y: Any = int_conv2d(xq, values, scale, b, two(conv.stride, 1), two(pad, 0), two(conv.dilation, 1), conv.groups,
                        None, wq.kernel_cache())
    if y.dtype is not x.dtype:
        y = y.cast(x.dtype)
    return y if nd == 2 else y.squeeze_dim(2)


def _prod(dims: Any) -> int:
    out = 1
    for d in dims:
        out *= int(d)
    return out


class _QuantizedConv(Module):
    """The fields of the quantized convolutions: ``weight`` (a Param holding the QuantizedTensor of the
    ``[channels_out, channels_in / groups * prod(kernel)]`` matrix), ``bias``, ``shape`` (the float weight's shape)
    and the float layer's ``stride``, ``dilation``, ``groups``, ``padding``, ``padding_right``; ``input``."""

    weight: Param  # holds a QuantizedTensor
    bias: Param | None
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    dilation: tuple[int, ...]
    groups: int
    padding: tuple[int, ...]
    padding_right: tuple[int, ...]
    input: InputQuant | None = None


class QuantizedConv1d(_QuantizedConv):
    """:class:`~ember.nn.Conv1d` with a quantized weight (int8 convolution for a static int8 layer, else the weight
    dequantized for the float convolution; see the module docstring); shapes and errors are ``Conv1d``'s."""

    def forward(self, x: Tensor) -> Tensor:
        return _conv_forward("QuantizedConv1d", 1, self, x)


class QuantizedConv2d(_QuantizedConv):
    """:class:`~ember.nn.Conv2d` with a quantized weight (int8 convolution for a static int8 layer, else the weight
    dequantized for the float convolution; see the module docstring); shapes and errors are ``Conv2d``'s."""

    def forward(self, x: Tensor) -> Tensor:
        return _conv_forward("QuantizedConv2d", 2, self, x)


class QuantizedEmbedding(Module):
    """:class:`~ember.nn.Embedding` with a quantized ``weight`` ``[n_embedding, d_model]``: the weight is
    dequantized, then the rows are gathered. Shapes: Int indices (any shape) -> ``[..., d_model]``.

    Raises (forward):
        KindError: non-Int indices. ember.IndexError: an index outside ``[0, n_embedding)``.
    """

    weight: Param  # holds a QuantizedTensor

    def forward(self, indices: Tensor) -> Tensor:
        check_int("QuantizedEmbedding", indices)
        w = _qt(self.weight).dequantize()
        return M.embedding(w, indices)


def _qt(param: Param) -> Any:
    """The QuantizedTensor a quantized layer's weight Param holds."""
    return param.val()
