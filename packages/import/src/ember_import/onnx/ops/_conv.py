"""Convolutions: ``Conv`` and ``ConvTranspose`` (opsets 1-22; no version changed their semantics).

Both map onto :mod:`ember.tensor.module` (``conv1d/2d/3d``, ``conv_transpose1d/2d/3d``). ONNX's asymmetric
pads, which Ember's symmetric ``padding`` cannot express, are applied with :meth:`Tensor.pad` before a
convolution, and by cropping the full output of a transposed convolution. Formulas: the ONNX operator
specification (``ConvTranspose``'s ``output_shape`` / ``auto_pad`` total padding) and its reference
implementation ``onnx/reference/ops/op_conv_transpose.py``.
"""

from __future__ import annotations

from typing import Any

from ember import Tensor
from ember.tensor import module as M

from .._context import Context
from .._errors import OnnxImportError
from .._ir import Node
from .._registry import converter
from ._spatial import geometry, pad_or_crop, spatial_rank

__all__ = ["conv", "conv_transpose", "add_channel_bias"]

_CONV = {1: M.conv1d, 2: M.conv2d, 3: M.conv3d}
_CONV_T = {1: M.conv_transpose1d, 2: M.conv_transpose2d, 3: M.conv_transpose3d}


def _nd(node: Node, x: Tensor) -> int:
    nd = spatial_rank(node, x)
    if nd > 3:
        raise OnnxImportError(f"{node.where()}: Ember convolves 1, 2 or 3 spatial dims; the input has shape "
                              f"{list(x.shape)} ({nd} spatial dims). Reshape the model to at most 3-D convolutions.")
    return nd


def add_channel_bias(y: Tensor, b: Tensor | None) -> Tensor:
    """``y`` ``[N, C, *spatial]`` plus a per-channel ``b`` ``[C]`` (``y`` itself when ``b`` is ``None``)."""
    if b is None:
        return y
    return y + b.reshape([1, b.shape[0]] + [1] * (y.rank - 2))


@converter("Conv", since=1)
def conv(ctx: Context, node: Node, x: Tensor, w: Tensor, b: Tensor | None = None) -> Tensor:
    """``Conv``: ``X`` ``[N, C, *spatial]``, ``W`` ``[M, C / group, *kernel]``, optional ``B`` ``[M]``, with
    ``strides``, ``dilations``, ``group`` and ``pads`` / ``auto_pad`` (asymmetric pads padded beforehand)."""
    nd = _nd(node, x)
    g = geometry(node, x.shape[2:], w.shape[2:])
    groups = int(node.attr("group", 1))
    if g.symmetric() and min(g.begin) >= 0:
        opts = M.ConvOptions(stride=g.strides, padding=g.begin, dilation=g.dilations, groups=groups)
    else:
        x = pad_or_crop(x, g.begin, g.end)
        opts = M.ConvOptions(stride=g.strides, padding=0, dilation=g.dilations, groups=groups)
    return _CONV[nd](x, w, b, opts)


def _transpose_pads(node: Node, sizes: tuple[int, ...], full: list[int], out_pad: list[int]) -> tuple[
        list[int], list[int]]:
    """Begin/end crops of the full transposed-convolution output (ONNX ``ConvTranspose`` specification).

    ``full[i] = s (n - 1) + d (k - 1) + 1``. With ``output_shape`` (or ``auto_pad`` SAME, whose output shape is
    ``n s``) the total padding is ``full + output_padding - output_shape``, split with the odd element at the
    end for SAME_UPPER and at the beginning otherwise; else ``pads`` is read.
    """
    nd = len(sizes)
    shape = node.attr("output_shape", None)
    auto = node.attr("auto_pad", "NOTSET")
    auto = auto.decode() if isinstance(auto, bytes) else str(auto)
    if shape is None and auto in ("SAME_UPPER", "SAME_LOWER"):
        strides = node.attr("strides", None) or [1] * nd
        shape = [n * int(s) for n, s in zip(sizes, strides)]
    if shape is None:
        if auto == "VALID":
            return [0] * nd, [0] * nd
        pads = [int(p) for p in node.attr("pads", None) or [0] * (2 * nd)]
        if len(pads) != 2 * nd:
            raise OnnxImportError(f"{node.where()}: pads must have {2 * nd} values, got {pads}.")
        return pads[:nd], pads[nd:]
    shape = [int(v) for v in shape][-nd:]
    total = [f + op - o for f, op, o in zip(full, out_pad, shape)]
    if auto == "SAME_UPPER":
        return [t // 2 for t in total], [t - t // 2 for t in total]
    return [t - t // 2 for t in total], [t // 2 for t in total]


@converter("ConvTranspose", since=1)
def conv_transpose(ctx: Context, node: Node, x: Tensor, w: Tensor, b: Tensor | None = None) -> Tensor:
    """``ConvTranspose``: ``X`` ``[N, C, *spatial]``, ``W`` ``[C, M / group, *kernel]``, optional ``B`` ``[M]``,
    with ``strides``, ``dilations``, ``group``, ``output_padding`` and ``pads`` / ``auto_pad`` /
    ``output_shape``. Symmetric pads map onto Ember's ``padding``; other cases compute the full output and
    crop (or zero-extend) it, then add the bias."""
    nd = _nd(node, x)
    groups = int(node.attr("group", 1))
    strides = [int(s) for s in node.attr("strides", None) or [1] * nd]
    dil = [int(d) for d in node.attr("dilations", None) or [1] * nd]
    out_pad = [int(p) for p in node.attr("output_padding", None) or [0] * nd][-nd:]
    kernel = list(w.shape[2:])
    full = [s * (n - 1) + d * (k - 1) + 1 for n, s, d, k in zip(x.shape[2:], strides, dil, kernel)]
    begin, end = _transpose_pads(node, x.shape[2:], full, out_pad)
    fn: Any = _CONV_T[nd]
    if begin == end and min(begin) >= 0 and all(p < max(s, d) for p, s, d in zip(out_pad, strides, dil)):
        opts = M.ConvTransposeOptions(stride=strides, padding=begin, padding_out=out_pad, dilation=dil,
                                      groups=groups)
        return fn(x, w, b, opts)
    y = fn(x, w, None, M.ConvTransposeOptions(stride=strides, dilation=dil, groups=groups))
    y = pad_or_crop(y, [-p for p in begin], [op - e for op, e in zip(out_pad, end)])
    return add_channel_bias(y, b)
