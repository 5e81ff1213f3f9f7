"""Convolutions: ``Conv`` and ``ConvTranspose`` (opsets 1-22; no version changed their semantics), ``Col2Im``
(18), ``CausalConvWithState`` (27), ``DeformConv`` (19, 22).

``Conv`` and ``ConvTranspose`` map onto :mod:`ember.tensor.functional` (``conv1d/2d/3d``,
``conv_transpose1d/2d/3d``). ONNX's asymmetric pads, which Ember's symmetric ``padding`` cannot express, are
applied with :meth:`Tensor.pad` before a convolution, and by cropping the full output of a transposed
convolution. Formulas: the ONNX operator
specification (``ConvTranspose``'s ``output_shape`` / ``auto_pad`` total padding) and its reference
implementation ``onnx/reference/ops/op_conv_transpose.py``. ``Col2Im`` is a grouped transposed convolution,
``CausalConvWithState`` a depthwise one, ``DeformConv`` the shared bilinear sampler of :mod:`._grid` followed
by a grouped matrix product.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from typing import Any

from ember import DType, Tensor
from ember.tensor import activation
from ember.tensor import functional as M

from .._context import Context
from .._errors import OnnxImportError
from .._ir import Node
from .._registry import converter
from .._validate import validating
from ._grid import sample
from ._late import late
from ._spatial import Geometry, geometry, pad_or_crop, spatial_rank

__all__ = ["conv", "conv_transpose", "add_channel_bias", "col2im", "causal_conv_with_state",
           "deform_conv"]

_CONV = {1: late(M, "conv1d"), 2: late(M, "conv2d"), 3: late(M, "conv3d")}
_CONV_T = {1: late(M, "conv_transpose1d"), 2: late(M, "conv_transpose2d"), 3: late(M, "conv_transpose3d")}


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
    end for SAME_UPPER and at the beginning otherwise; else ``pads`` is read. (For a positive total padding
    with ``auto_pad`` NOTSET, onnxruntime puts the odd element at the end and the reference implementation
    crops at the end only; the specification's rule is followed here.)
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


def _factorizations(n: int, parts: int, budget: list[int]) -> Iterator[list[int]]:
    """The ordered ways to write ``n`` as a product of ``parts`` positive ints (``budget[0]``: steps left)."""
    if parts == 1:
        yield [n]
        return
    for f in range(1, n + 1):
        budget[0] -= 1
        if budget[0] < 0:
            return
        if n % f == 0:
            for rest in _factorizations(n // f, parts - 1, budget):
                yield [f, *rest]


def _col2im_example(node: Node, shape: list[int], nd: int) -> tuple[list[int], list[int]] | None:
    """An ``(image_shape, block_shape)`` consistent with an input of ``shape`` ``[N, C * prod(block), L]`` and
    the node's strides, dilations and pads (smallest blocks first), or ``None`` when a bounded search finds
    none: the example a trace runs the converter on (:meth:`~.._context.Context.example`)."""
    if not 1 <= nd <= 3 or shape[1] < 1 or shape[2] < 1:
        return None
    g = geometry(node, [1] * nd, [1] * nd)
    budget = [20000]
    for k in range(1, shape[1] + 1):
        if shape[1] % k:
            continue
        for block in _factorizations(k, nd, budget):
            for counts in _factorizations(shape[2], nd, budget):
                image = [(c - 1) * s + d * (b - 1) + 1 - p - q
                         for c, s, d, b, p, q in zip(counts, g.strides, g.dilations, block, g.begin, g.end)]
                if all(n >= 1 for n in image):
                    return image, block
        if budget[0] < 0:
            return None
    return None


@converter("Col2Im", since=18, static=(1, 2))
def col2im(ctx: Context, node: Node, x: Tensor, image_shape: Tensor, block_shape: Tensor) -> Tensor:
    """``Col2Im`` (opset 18): ``[N, C * prod(block), L]`` columns summed back into ``[N, C, *image]`` (the
    adjoint of im2col, PyTorch ``F.fold``). Computed as a transposed convolution with ``C`` groups whose
    weight routes column row ``c * K + j`` to kernel position ``j`` of channel ``c``, then cropped by the
    pads."""
    if x.rank == 3 and image_shape.rank == 1:
        example = _col2im_example(node, [int(d) for d in x.shape], int(image_shape.shape[0]))
        if example is not None:
            ctx.example(image_shape, example[0])
            ctx.example(block_shape, example[1])
    image, block = ctx.ints(image_shape) or [], ctx.ints(block_shape) or []
    nd = len(image)
    if not 1 <= nd <= 3 or len(block) != nd or x.rank != 3:
        raise OnnxImportError(f"{node.where()}: expected input [N, C * prod(block_shape), L] with 1 to 3 image "
                              f"dims, got input {list(x.shape)}, image_shape {image}, block_shape {block}.")
    g = geometry(node, image, block)
    k = math.prod(block)
    c = x.shape[1] // k
    counts = [(n + b + e - f) // s + 1 for n, b, e, f, s in zip(image, g.begin, g.end, g.effective(), g.strides)]
    total = math.prod(counts)
    with validating():  # only rejects a bad model (the shapes may be read from the data)
        bad = c * k != x.shape[1] or total != x.shape[2]
    if bad:
        raise OnnxImportError(f"{node.where()}: input {list(x.shape)} does not match block_shape {block} and "
                              f"{counts} blocks ({total}) of image_shape {image} with the pads/strides/dilations.")
    w = Tensor.eye(k, x.device).cast(x.dtype).reshape([k, 1] + block).repeat_dim(0, c)  # [c * k, 1, *block]
    cols = x.reshape([x.shape[0], x.shape[1]] + counts)
    y = _CONV_T[nd](cols, w, None, M.ConvTransposeOptions(stride=g.strides, dilation=g.dilations, groups=c))
    # the pads cropped at the start, the image's end reached by cropping or zero-padding (one pad: a negative
    # amount crops, so the sizes may be known only when generated code runs)
    return y.pad([(-b, n - f + b) for n, f, b in zip(image, y.shape[2:], g.begin)])


@converter("CausalConvWithState", since=27)
def causal_conv_with_state(ctx: Context, node: Node, x: Tensor, w: Tensor, b: Tensor | None = None,
                           past: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """``CausalConvWithState`` (opset 27): depthwise causal 1-D convolution of ``[B, C, L]`` with ``W``
    ``[C, 1, k]``, left context ``past_state`` ``[B, C, k - 1]`` (zeros when absent), optional fused SiLU
    (``activation`` ``silu``/``swish``); ``present_state`` is the last ``k - 1`` steps of the padded input."""
    if x.rank != 3 or w.rank != 3:
        raise OnnxImportError(f"{node.where()}: expected input [B, C, L] and weight [C, 1, k], got "
                              f"{list(x.shape)} and {list(w.shape)}.")
    k = w.shape[2]
    padded = x.pad([(k - 1, 0)]) if past is None else Tensor.cat([past, x], 2)
    y = M.conv1d(padded, w, b, M.ConvOptions(groups=x.shape[1]))
    act = node.attr("activation", "none")
    act = act.decode() if isinstance(act, bytes) else str(act)
    if act in ("silu", "swish"):
        y = activation.silu(y)
    elif act != "none":
        raise OnnxImportError(f"{node.where()}: activation must be none, silu or swish, got {act!r}.")
    n = padded.shape[2]
    return y, padded.slice([None, None, (n - (k - 1), n)])


def _deform_positions(ctx: Context, g: Geometry, out: list[int], d: int, dtype: DType) -> Tensor:
    """``[1, K, *out]`` sampling positions along spatial dim ``d`` before the offsets:
    ``-pad_begin + stride * o + dilation * k`` (``K`` kernel positions in row-major order)."""
    nd = len(out)
    kpos = [idx[d] * g.dilations[d] for idx in itertools.product(*[range(k) for k in g.kernel])]
    kshape = [1, len(kpos)] + [1] * nd
    oshape = [1, 1] + [1] * nd
    oshape[2 + d] = out[d]
    opos = [o * g.strides[d] - g.begin[d] for o in range(out[d])]
    return ctx.tensor(kpos, dtype).reshape(kshape) + ctx.tensor(opos, dtype).reshape(oshape)


@converter("DeformConv", since=19)
def deform_conv(ctx: Context, node: Node, x: Tensor, w: Tensor, offset: Tensor, b: Tensor | None = None,
                mask: Tensor | None = None) -> Tensor:
    """``DeformConv`` (opsets 19, 22; torchvision ``deform_conv2d``): each kernel tap of ``W`` ``[M, C / group,
    *kernel]`` reads ``X`` bilinearly (zero outside) at its regular position plus ``offset`` ``[N, offset_group *
    K * nd, *out]``, scaled by ``mask`` ``[N, offset_group * K, *out]`` when given; then a grouped product over
    channels and taps, plus ``B``."""
    nd = spatial_rank(node, x)
    n, c = x.shape[0], x.shape[1]
    m = w.shape[0]
    g = geometry(node, x.shape[2:], w.shape[2:])
    groups = int(node.attr("group", 1))
    og = int(node.attr("offset_group", 1))
    out = list(offset.shape[2:])
    k = math.prod(g.kernel)
    if c % og or offset.shape[1] != og * k * nd or len(out) != nd or c != w.shape[1] * groups:
        raise OnnxImportError(f"{node.where()}: expected offset [N, offset_group * K * {nd}, *out] with "
                              f"offset_group {og} dividing the {c} channels and W [M, C / group, *kernel]; got X "
                              f"{list(x.shape)}, W {list(w.shape)}, offset {list(offset.shape)}, group {groups}.")
    offs = offset.cast(x.dtype).reshape([n * og, k, nd] + out)
    coords = []
    for d in range(nd):
        base = _deform_positions(ctx, g, out, d, x.dtype)
        coords.append(offs.slice([None, None, d]).reshape([n * og, k] + out) + base)
    xs = x.reshape([n * og, c // og] + list(x.shape[2:]))
    v = sample(xs, coords, "linear", "zeros")  # [N * og, C / og, K, *out]
    if mask is not None:
        v = v * mask.cast(x.dtype).reshape([n * og, 1, k] + out)
    v = v.reshape([n, groups, (c // groups) * k, math.prod(out)])
    wg = w.reshape([1, groups, m // groups, (c // groups) * k])
    y = wg.matmul(v).reshape([n, m] + out)
    return add_channel_bias(y, b)
