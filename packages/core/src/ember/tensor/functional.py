"""``ember.tensor.functional``: the functional module ops (PyTorch's ``torch.nn.functional``; Burn's
``burn::tensor::module``, the name this module had before 0.2: ``ember.tensor.module`` is a deprecated alias).

Convolution, transposed convolution, pooling, embedding, interpolation, ``unfold4d`` and
``non_max_suppression`` (boxes, a data-dependent size) as functions of tensors; the layers of
``ember.nn`` are built on them. Layouts are Burn's and PyTorch's, channels first:

=======================  ==============================================================
input, 1-D / 2-D / 3-D   ``[batch, channels, length]`` / ``[batch, channels, height, width]`` /
                         ``[batch, channels, depth, height, width]``
convolution weight       ``[channels_out, channels_in / groups, *kernel]``
transposed conv weight   ``[channels_in, channels_out / groups, *kernel]``
bias                     ``[channels_out]`` or ``None``
embedding weights        ``[num_embeddings, dim]``; indices: Int, any shape
=======================  ==============================================================

Output sizes follow PyTorch: a convolution gives ``floor((n + 2 p - d (k - 1) - 1) / s) + 1``
per spatial dim, a transposed one ``(n - 1) s - 2 p + d (k - 1) + padding_out + 1``; pooling
uses the same formula with ``ceil`` in ``ceil_mode``.

Every function validates in the core, then makes one backend call, so all backends raise the
same errors and every op is differentiable under ``ember.autodiff.Autodiff``:

- :class:`~ember.KindError`: a non-Float input or weight, non-Int embedding indices;
- :class:`~ember.ShapeError`: a wrong rank or channel count (the message names the op, the
  expected layout and the shape received), groups not dividing the channels, a kernel larger
  than the padded input, an empty output, pooling padding above half the kernel;
- :class:`ValueError`: a negative padding, a non-positive stride, dilation, groups or size, an
  unknown interpolation mode.
- ``ember.IndexError``: an embedding index outside ``[0, num_embeddings)``, negative ones included
  (:mod:`ember.tensor._index_check`).

Example::

    from ember.tensor import functional as M
    y = M.conv2d(x, w, b, M.ConvOptions(stride=1, padding=1))   # x [64, 1, 28, 28], w [8, 1, 3, 3]
    y = M.max_pool2d(y, 2)                                     # [64, 8, 14, 14]
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._errors import ShapeError
from .._kind import Float, Int
from ..backend import _module_geometry as geo
from ._core import wrap
from ._functional_attention import scaled_dot_product_attention
from ._functional_checks import (
    _DIMS,
    _LAYOUT,
    IntOrSeq,
    Ints,
    _call,
    _device_error,
    _fits,
    _groups,
    _ints,
    _rank,
    _same,
    _tensor,
)
from ._functional_detection import non_max_suppression
from ._functional_norm import batch_norm, batch_norm_running, group_norm, layer_norm, rms_norm
from ._functional_pool import (
    adaptive_avg_pool1d,
    adaptive_avg_pool2d,
    avg_pool1d,
    avg_pool2d,
    max_pool1d,
    max_pool1d_with_indices,
    max_pool2d,
    max_pool2d_with_indices,
)
from ._functional_rnn import lstm, lstm_stack
from ._index_check import check_index_values

if TYPE_CHECKING:
    from ._tensor import Tensor

__all__ = [
    "batch_norm",
    "batch_norm_running",
    "layer_norm",
    "group_norm",
    "rms_norm",
    "lstm",
    "lstm_stack",
    "scaled_dot_product_attention",
    "ConvOptions",
    "ConvTransposeOptions",
    "UnfoldOptions",
    "InterpolateMode",
    "InterpolateOptions",
    "conv1d",
    "conv2d",
    "conv3d",
    "conv_transpose1d",
    "conv_transpose2d",
    "conv_transpose3d",
    "max_pool1d",
    "max_pool1d_with_indices",
    "max_pool2d",
    "max_pool2d_with_indices",
    "avg_pool1d",
    "avg_pool2d",
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
    "embedding",
    "interpolate",
    "non_max_suppression",
    "unfold4d",
]

# ---------------------------------------------------------------------------- options
@dataclass(frozen=True)
class ConvOptions:
    """Options of :func:`conv1d` / :func:`conv2d` / :func:`conv3d` (Burn's ``ConvOptions``).

    Each of ``stride``, ``padding``, ``dilation`` is an int (the same for every spatial dim) or
    one int per spatial dim. Defaults are PyTorch's: stride 1, no padding, no dilation, 1 group.
    ``padding`` is zero padding on both sides.
    """

    stride: IntOrSeq = 1
    padding: IntOrSeq = 0
    dilation: IntOrSeq = 1
    groups: int = 1


@dataclass(frozen=True)
class ConvTransposeOptions:
    """Options of the transposed convolutions (Burn's ``ConvTransposeOptions``).

    ``padding_out`` (PyTorch's ``output_padding``) adds rows and columns on one side of the output
    to pick among the input sizes a strided convolution maps to the same size; it must be smaller
    than ``stride`` or ``dilation``.
    """

    stride: IntOrSeq = 1
    padding: IntOrSeq = 0
    padding_out: IntOrSeq = 0
    dilation: IntOrSeq = 1
    groups: int = 1


@dataclass(frozen=True)
class UnfoldOptions:
    """Options of :func:`unfold4d` (Burn's ``UnfoldOptions``; PyTorch ``F.unfold``)."""

    stride: IntOrSeq = 1
    padding: IntOrSeq = 0
    dilation: IntOrSeq = 1


class InterpolateMode(str, enum.Enum):
    """Interpolation kernels (Burn's ``InterpolateMode``; PyTorch's ``mode`` strings)."""

    NEAREST = "nearest"
    BILINEAR = "bilinear"
    BICUBIC = "bicubic"


@dataclass(frozen=True)
class InterpolateOptions:
    """Options of :func:`interpolate` (Burn's ``InterpolateOptions``).

    ``mode``: an :class:`InterpolateMode` or its string. ``align_corners`` (bilinear and
    bicubic only, PyTorch's meaning): ``True`` maps the corner pixel centres of input and output
    onto each other; ``False`` (PyTorch's default) maps their corner edges.
    """

    mode: InterpolateMode | str = InterpolateMode.NEAREST
    align_corners: bool = False


# ---------------------------------------------------------------------------- convolution
def _conv(op: str, nd: int, x: Any, weight: Any, bias: Any, options: ConvOptions) -> Any:
    _tensor(op, "x", x)
    _tensor(op, "weight", weight)
    if bias is not None:
        _tensor(op, "bias", bias)
    layout = _LAYOUT[nd]
    _rank(op, "x", x, nd + 2, layout.replace("channels", "channels_in"))
    _rank(op, "weight", weight, nd + 2,
          f"[channels_out, channels_in / groups, {', '.join('kernel_' + d for d in _DIMS[nd])}]")
    stride = _ints(op, "stride", options.stride, nd, 1)
    padding = _ints(op, "padding", options.padding, nd, 0)
    dilation = _ints(op, "dilation", options.dilation, nd, 1)
    groups = _groups(op, options.groups)
    c, o, cg = x.shape[1], weight.shape[0], weight.shape[1]
    if c % groups or o % groups:
        raise ShapeError(f"{op}: groups={groups} must divide channels_in ({c}) and channels_out ({o}).")
    if cg * groups != c:
        raise ShapeError(
            f"{op}: x has {c} channels (shape {list(x.shape)}) but weight {list(weight.shape)} expects "
            f"channels_in = {cg} * groups {groups} = {cg * groups}; weight layout is [channels_out, "
            "channels_in / groups, *kernel]."
        )
    if bias is not None and tuple(bias.shape) != (o,):
        raise ShapeError(f"{op}: bias must have shape [channels_out] = [{o}], got {list(bias.shape)}.")
    return _conv_prechecked(op, x, weight, bias, stride, padding, dilation, groups)


def _conv_prechecked(op: str, x: Tensor, weight: Tensor, bias: Tensor | None, stride: Ints, padding: Ints,
                    dilation: Ints, groups: int) -> Tensor:
    """The convolution ``op`` (``"conv1d"``, ``"conv2d"`` or ``"conv3d"``) without the argument checks of
    :func:`conv2d`: for the ``ember.nn`` layers, whose config's ``init`` checked the options and built the weight
    and bias once, and whose ``forward`` checked the input's kind, rank and channels. What depends on the input
    alone is still checked here: the devices agree and the dilated kernel fits the padded input.

    ``stride``, ``padding``, ``dilation``: tuples of one int per spatial dim; ``groups``: an int >= 1.
    """
    _same(op, x, weight, bias)
    _fits(op, x, tuple(weight.shape[2:]), padding, dilation)
    bp = None if bias is None else bias.primitive
    fn = getattr(x.ops, op)
    p = _call(op, lambda: fn(x.primitive, weight.primitive, bp, stride, padding, dilation, groups), x, weight)
    return wrap(p, x, Float)


def conv1d(x: Tensor, weight: Tensor, bias: Tensor | None = None, options: ConvOptions = ConvOptions()) -> Tensor:
    """1-D convolution (cross-correlation): ``x`` ``[batch, channels_in, length]``, ``weight``
    ``[channels_out, channels_in / groups, kernel]``, ``bias`` ``[channels_out]`` or ``None`` ->
    ``[batch, channels_out, length_out]`` (Burn ``conv1d``, PyTorch ``F.conv1d``). Errors: see
    the module docstring."""
    return _conv("conv1d", 1, x, weight, bias, options)


def conv2d(x: Tensor, weight: Tensor, bias: Tensor | None = None, options: ConvOptions = ConvOptions()) -> Tensor:
    """2-D convolution: ``x`` ``[batch, channels_in, height, width]``, ``weight`` ``[channels_out,
    channels_in / groups, kernel_h, kernel_w]`` -> ``[batch, channels_out, h_out, w_out]`` (Burn
    ``conv2d``, PyTorch ``F.conv2d``)."""
    return _conv("conv2d", 2, x, weight, bias, options)


def conv3d(x: Tensor, weight: Tensor, bias: Tensor | None = None, options: ConvOptions = ConvOptions()) -> Tensor:
    """3-D convolution: ``x`` ``[batch, channels_in, depth, height, width]``, ``weight``
    ``[channels_out, channels_in / groups, k_d, k_h, k_w]`` (Burn ``conv3d``, PyTorch ``F.conv3d``)."""
    return _conv("conv3d", 3, x, weight, bias, options)


def _conv_transpose(op: str, nd: int, x: Any, weight: Any, bias: Any, options: ConvTransposeOptions) -> Any:
    _tensor(op, "x", x)
    _tensor(op, "weight", weight)
    if bias is not None:
        _tensor(op, "bias", bias)
    _rank(op, "x", x, nd + 2, _LAYOUT[nd].replace("channels", "channels_in"))
    _rank(op, "weight", weight, nd + 2,
          f"[channels_in, channels_out / groups, {', '.join('kernel_' + d for d in _DIMS[nd])}]")
    stride = _ints(op, "stride", options.stride, nd, 1)
    padding = _ints(op, "padding", options.padding, nd, 0)
    padding_out = _ints(op, "padding_out", options.padding_out, nd, 0)
    dilation = _ints(op, "dilation", options.dilation, nd, 1)
    groups = _groups(op, options.groups)
    c = x.shape[1]
    if weight.shape[0] != c:
        raise ShapeError(
            f"{op}: x has {c} channels (shape {list(x.shape)}) but weight {list(weight.shape)} has "
            f"channels_in = {weight.shape[0]}; the transposed-convolution weight layout is [channels_in, "
            "channels_out / groups, *kernel]."
        )
    if c % groups:
        raise ShapeError(f"{op}: groups={groups} must divide channels_in ({c}).")
    o = weight.shape[1] * groups
    if bias is not None and tuple(bias.shape) != (o,):
        raise ShapeError(f"{op}: bias must have shape [channels_out] = [{o}], got {list(bias.shape)}.")
    for po, s, d in zip(padding_out, stride, dilation):
        if po >= max(s, d):
            raise ValueError(f"{op}: padding_out {list(padding_out)} must be smaller than stride {list(stride)} "
                             f"or dilation {list(dilation)} (PyTorch's rule).")
    return _conv_transpose_prechecked(op, x, weight, bias, stride, padding, padding_out, dilation, groups)


def _conv_transpose_prechecked(op: str, x: Tensor, weight: Tensor, bias: Tensor | None, stride: Ints,
                              padding: Ints, padding_out: Ints, dilation: Ints, groups: int) -> Tensor:
    """The transposed convolution ``op`` (``"conv_transpose1d"`` ...) without the argument checks of
    :func:`conv_transpose2d` (see :func:`_conv_prechecked`): the devices and the output size are still checked."""
    _same(op, x, weight, bias)
    kernel = tuple(weight.shape[2:])
    out = [geo.conv_transpose_out(s, k, st, p, po, d)
           for s, k, st, p, po, d in zip(x.shape[2:], kernel, stride, padding, padding_out, dilation)]
    if any(n < 1 for n in out):
        raise ShapeError(f"{op}: the output would have spatial size {out} for input {list(x.shape)}; reduce "
                         "the padding.")
    bp = None if bias is None else bias.primitive
    fn = getattr(x.ops, op)
    p = _call(op, lambda: fn(x.primitive, weight.primitive, bp, stride, padding, padding_out, dilation, groups),
              x, weight)
    return wrap(p, x, Float)


def conv_transpose1d(x: Tensor, weight: Tensor, bias: Tensor | None = None,
                     options: ConvTransposeOptions = ConvTransposeOptions()) -> Tensor:
    """1-D transposed convolution: ``x`` ``[batch, channels_in, length]``, ``weight`` ``[channels_in,
    channels_out / groups, kernel]`` -> ``[batch, channels_out, (length - 1) s - 2 p + d (k - 1) +
    padding_out + 1]`` (Burn ``conv_transpose1d``, PyTorch ``F.conv_transpose1d``)."""
    return _conv_transpose("conv_transpose1d", 1, x, weight, bias, options)


def conv_transpose2d(x: Tensor, weight: Tensor, bias: Tensor | None = None,
                     options: ConvTransposeOptions = ConvTransposeOptions()) -> Tensor:
    """2-D transposed convolution (the adjoint of :func:`conv2d`, "deconvolution"): ``x``
    ``[batch, channels_in, height, width]``, ``weight`` ``[channels_in, channels_out / groups, k_h,
    k_w]`` (Burn ``conv_transpose2d``, PyTorch ``F.conv_transpose2d``)."""
    return _conv_transpose("conv_transpose2d", 2, x, weight, bias, options)


def conv_transpose3d(x: Tensor, weight: Tensor, bias: Tensor | None = None,
                     options: ConvTransposeOptions = ConvTransposeOptions()) -> Tensor:
    """3-D transposed convolution: ``x`` ``[batch, channels_in, depth, height, width]``, ``weight``
    ``[channels_in, channels_out / groups, k_d, k_h, k_w]``."""
    return _conv_transpose("conv_transpose3d", 3, x, weight, bias, options)


def unfold4d(x: Tensor, kernel_size: IntOrSeq, options: UnfoldOptions = UnfoldOptions()) -> Tensor:
    """Sliding blocks as columns (im2col; Burn ``unfold4d``, PyTorch ``F.unfold``): ``x``
    ``[batch, channels, height, width]`` -> ``[batch, channels * k_h * k_w, blocks]``, rows ordered
    channel, kernel row, kernel column; blocks in row-major order of their positions."""
    op = "unfold4d"
    _tensor(op, "x", x)
    _rank(op, "x", x, 4, _LAYOUT[2])
    kernel = _ints(op, "kernel_size", kernel_size, 2, 1)
    stride = _ints(op, "stride", options.stride, 2, 1)
    padding = _ints(op, "padding", options.padding, 2, 0)
    dilation = _ints(op, "dilation", options.dilation, 2, 1)
    _fits(op, x, kernel, padding, dilation)
    p = _call(op, lambda: x.ops.unfold4d(x.primitive, kernel, stride, padding, dilation), x)
    return wrap(p, x, Float)


# ---------------------------------------------------------------------------- embedding, interpolation
def embedding(weights: Tensor, indices: Tensor) -> Tensor:
    """Look-up of rows: ``weights`` Float ``[num_embeddings, dim]``, ``indices`` Int of any shape ->
    ``[*indices.shape, dim]`` (Burn ``embedding``, PyTorch ``F.embedding``).

    Raises:
        KindError: Float indices or non-Float weights.
        ShapeError: ``weights`` is not 2-D.
        IndexError: an index outside ``[0, num_embeddings)``, negative ones included (``ember.IndexError``;
            checked in the core with one min/max reduction, on concrete values and where
            ``Backend.checks_index_values`` holds: see :mod:`ember.tensor._index_check`). The backward pass
            reuses the checked indices.
    """
    op = "embedding"
    _tensor(op, "weights", weights)
    _tensor(op, "indices", indices, Int)
    _rank(op, "weights", weights, 2, "[num_embeddings, dim]")
    if indices.device is not weights.device:
        raise _device_error(op, weights, indices)
    n = weights.shape[0]
    check_index_values(op, indices, n, 0, where=f"{n} embeddings (weights {list(weights.shape)})")
    return wrap(_call(op, lambda: weights.ops.embedding(weights.primitive, indices.primitive), weights, indices),
                weights, Float)


def interpolate(x: Tensor, output_size: IntOrSeq, options: InterpolateOptions = InterpolateOptions()) -> Tensor:
    """Resize ``[batch, channels, height, width]`` to ``[batch, channels, *output_size]`` (Burn
    ``interpolate``, PyTorch ``F.interpolate`` with ``size``): nearest (``floor(dst * in / out)``),
    bilinear, or bicubic (cubic convolution, ``A = -0.75``, border indices clamped), with
    PyTorch's source-coordinate formulas for ``align_corners``."""
    op = "interpolate"
    _tensor(op, "x", x)
    _rank(op, "x", x, 4, _LAYOUT[2])
    size = _ints(op, "output_size", output_size, 2, 1)
    try:
        mode = InterpolateMode(options.mode)
    except ValueError:
        raise ValueError(f"{op}: unknown mode {options.mode!r}; expected one of "
                         f"{[m.value for m in InterpolateMode]}.") from None
    ac = bool(options.align_corners) and mode is not InterpolateMode.NEAREST
    return wrap(_call(op, lambda: x.ops.interpolate(x.primitive, size, mode.value, ac), x), x, Float)
