"""``ember.tensor.functional``: the functional module ops (PyTorch's ``torch.nn.functional``; Burn's
``burn::tensor::module``, the name this module had before 0.2: ``ember.tensor.module`` is a deprecated alias).

Convolution, transposed convolution, pooling, embedding, interpolation and ``unfold4d`` as
functions of tensors; the layers of ``ember.nn`` are built on them. Layouts are Burn's and
PyTorch's, channels first:

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
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._errors import DeviceError, EmberError, IndexError_, KindError, ShapeError
from .._kind import Float, Int
from ..backend import _module_geometry as geo
from . import _core
from ._core import wrap
from ._functional_attention import scaled_dot_product_attention
from ._functional_norm import batch_norm, batch_norm_running, group_norm, layer_norm, rms_norm
from ._functional_rnn import lstm
from ._index_check import check_index_values
from ._util import check_same

if TYPE_CHECKING:
    from ._tensor import Tensor

__all__ = [
    "batch_norm",
    "batch_norm_running",
    "layer_norm",
    "group_norm",
    "rms_norm",
    "lstm",
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
    "unfold4d",
]

IntOrSeq = int | Sequence[int]
Ints = tuple[int, ...]

_LAYOUT = {
    1: "[batch, channels, length]",
    2: "[batch, channels, height, width]",
    3: "[batch, channels, depth, height, width]",
}
_DIMS = {1: ("length",), 2: ("height", "width"), 3: ("depth", "height", "width")}


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


# ---------------------------------------------------------------------------- checks
def _tensor(op: str, name: str, t: Any, kind: Any = Float) -> None:
    if type(t) is not _core.Tensor:
        raise TypeError(f"{op}: {name} must be an ember.Tensor, got {type(t).__name__}.")
    if t.kind is not kind:
        raise KindError(f"{op}: {name} must be {'a Float' if kind is Float else 'an Int'} tensor, got {t.kind}; "
                        f"convert it with {'.float()' if kind is Float else '.int()'} first.")


def _rank(op: str, name: str, t: Any, rank: int, layout: str) -> None:
    if t.rank != rank:
        raise ShapeError(f"{op}: expected {name} of shape {layout} (rank {rank}), got shape {list(t.shape)} "
                         f"(rank {t.rank}).")


def _ints(op: str, name: str, v: Any, n: int, minimum: int) -> Ints:
    if isinstance(v, bool):
        raise TypeError(f"{op}: {name} must be an int or {n} ints, got {v!r}.")
    if isinstance(v, int):
        out: Ints = (v,) * n
    else:
        try:
            out = tuple(v)
        except TypeError:
            raise TypeError(f"{op}: {name} must be an int or {n} ints, got {v!r}.") from None
        if len(out) != n or not all(isinstance(i, int) and not isinstance(i, bool) for i in out):
            raise ValueError(f"{op}: {name} must be an int or a sequence of {n} ints (one per spatial dim), "
                             f"got {v!r}.")
    if any(i < minimum for i in out):
        raise ValueError(f"{op}: {name} must be >= {minimum}, got {v!r}.")
    return out


def _groups(op: str, groups: Any) -> int:
    if isinstance(groups, bool) or not isinstance(groups, int) or groups < 1:
        raise ValueError(f"{op}: groups must be a positive int, got {groups!r}.")
    return groups


def _same(op: str, x: Any, *others: Any) -> None:
    for t in others:
        if t is not None and t.device is not x.device:
            check_same(op, x, t)


def _fits(op: str, x: Any, kernel: Ints, padding: Ints, dilation: Ints, what: str = "kernel") -> None:
    sizes = x.shape[2:]
    for i, (s, k, p, d) in enumerate(zip(sizes, kernel, padding, dilation)):
        eff = d * (k - 1) + 1
        if eff > s + 2 * p:
            nd = len(sizes)
            raise ShapeError(
                f"{op}: the {what} ({list(kernel)}, dilation {list(dilation)}: {eff} along {_DIMS[nd][i]}) is "
                f"larger than the padded input ({s} + 2 * {p} = {s + 2 * p}) of input shape {list(x.shape)}; "
                "use a smaller kernel or more padding."
            )


def _device_error(op: str, a: Any, b: Any) -> Exception:
    try:
        check_same(op, a, b)
    except Exception as exc:  # the device error of the core
        return exc
    return DeviceError(f"{op}: tensors on different devices {a.device} and {b.device}; move one with "
                       ".to_device(other.device).")  # pragma: no cover


def _call(op: str, fn: Any, *tensors: Any) -> Any:
    try:
        return fn()
    except IndexError as exc:
        raise IndexError_(f"{op}: index out of range: {exc}") from exc
    except EmberError:
        raise
    except Exception as exc:  # a backend failure: name the op and the operands (no broadcasting story)
        desc = ", ".join(f"{t.kind} {list(t.shape)} {t.dtype}" for t in tensors)
        raise EmberError(f"{op} failed in the {tensors[0].device.backend.name} backend on ({desc}): "
                         f"{type(exc).__name__}: {exc}") from exc


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


# ---------------------------------------------------------------------------- pooling
def _pool_args(op: str, nd: int, x: Any, kernel_size: Any, stride: Any, padding: Any, dilation: Any,
               ceil_mode: bool) -> tuple[Ints, Ints, Ints, Ints]:
    _tensor(op, "x", x)
    _rank(op, "x", x, nd + 2, _LAYOUT[nd])
    kernel = _ints(op, "kernel_size", kernel_size, nd, 1)
    st = kernel if stride is None else _ints(op, "stride", stride, nd, 1)
    pad = _ints(op, "padding", padding, nd, 0)
    dil = _ints(op, "dilation", dilation, nd, 1)
    if any(2 * p > k for p, k in zip(pad, kernel)):
        raise ValueError(f"{op}: padding {list(pad)} must be at most half of kernel_size {list(kernel)} "
                         "(PyTorch's rule: every window must hold an input element).")
    _fits(op, x, kernel, pad, dil)
    out = [geo.pool_out(s, k, a, p, d, ceil_mode) for s, k, a, p, d in zip(x.shape[2:], kernel, st, pad, dil)]
    if any(n < 1 for n in out):
        raise ShapeError(f"{op}: the output would have spatial size {out} for input {list(x.shape)}.")
    return kernel, st, pad, dil


def max_pool1d(x: Tensor, kernel_size: IntOrSeq, stride: IntOrSeq | None = None, padding: IntOrSeq = 0,
               dilation: IntOrSeq = 1, ceil_mode: bool = False) -> Tensor:
    """1-D max pooling of ``[batch, channels, length]`` (Burn ``max_pool1d``, PyTorch
    ``F.max_pool1d``): ``stride`` defaults to ``kernel_size``; padding counts as ``-inf``."""
    op = "max_pool1d"
    k, s, p, d = _pool_args(op, 1, x, kernel_size, stride, padding, dilation, ceil_mode)
    return wrap(_call(op, lambda: x.ops.max_pool1d(x.primitive, k, s, p, d, bool(ceil_mode)), x), x, Float)


def max_pool1d_with_indices(x: Tensor, kernel_size: IntOrSeq, stride: IntOrSeq | None = None, padding: IntOrSeq = 0,
                            dilation: IntOrSeq = 1, ceil_mode: bool = False) -> tuple[Tensor, Tensor]:
    """:func:`max_pool1d` and the Int position of each maximum in its input row."""
    op = "max_pool1d_with_indices"
    k, s, p, d = _pool_args(op, 1, x, kernel_size, stride, padding, dilation, ceil_mode)
    v, i = _call(op, lambda: x.ops.max_pool1d_with_indices(x.primitive, k, s, p, d, bool(ceil_mode)), x)
    return wrap(v, x, Float), wrap(i, x, Int)


def max_pool2d(x: Tensor, kernel_size: IntOrSeq, stride: IntOrSeq | None = None, padding: IntOrSeq = 0,
               dilation: IntOrSeq = 1, ceil_mode: bool = False) -> Tensor:
    """2-D max pooling: ``[batch, channels, height, width]`` -> ``[batch, channels, h_out, w_out]``
    (Burn ``max_pool2d``, PyTorch ``F.max_pool2d``). ``stride`` defaults to ``kernel_size``;
    padding counts as ``-inf``; NaN propagates."""
    op = "max_pool2d"
    k, s, p, d = _pool_args(op, 2, x, kernel_size, stride, padding, dilation, ceil_mode)
    return wrap(_call(op, lambda: x.ops.max_pool2d(x.primitive, k, s, p, d, bool(ceil_mode)), x), x, Float)


def max_pool2d_with_indices(x: Tensor, kernel_size: IntOrSeq, stride: IntOrSeq | None = None, padding: IntOrSeq = 0,
                            dilation: IntOrSeq = 1, ceil_mode: bool = False) -> tuple[Tensor, Tensor]:
    """:func:`max_pool2d` and Int indices ``row * width + column`` of each maximum in its input
    plane (PyTorch ``return_indices=True``); ties keep the first in window order."""
    op = "max_pool2d_with_indices"
    k, s, p, d = _pool_args(op, 2, x, kernel_size, stride, padding, dilation, ceil_mode)
    v, i = _call(op, lambda: x.ops.max_pool2d_with_indices(x.primitive, k, s, p, d, bool(ceil_mode)), x)
    return wrap(v, x, Float), wrap(i, x, Int)


def avg_pool1d(x: Tensor, kernel_size: IntOrSeq, stride: IntOrSeq | None = None, padding: IntOrSeq = 0,
               count_include_pad: bool = True, ceil_mode: bool = False) -> Tensor:
    """1-D average pooling of ``[batch, channels, length]`` (Burn ``avg_pool1d``, PyTorch
    ``F.avg_pool1d``); see :func:`avg_pool2d` for the divisor."""
    op = "avg_pool1d"
    k, s, p, _ = _pool_args(op, 1, x, kernel_size, stride, padding, 1, ceil_mode)
    return wrap(_call(op, lambda: x.ops.avg_pool1d(x.primitive, k, s, p, bool(count_include_pad),
                                                   bool(ceil_mode)), x), x, Float)


def avg_pool2d(x: Tensor, kernel_size: IntOrSeq, stride: IntOrSeq | None = None, padding: IntOrSeq = 0,
               count_include_pad: bool = True, ceil_mode: bool = False) -> Tensor:
    """2-D average pooling: ``[batch, channels, height, width]`` -> ``[batch, channels, h_out,
    w_out]`` (Burn ``avg_pool2d``, PyTorch ``F.avg_pool2d``). The divisor is the window clipped to
    the padded input when ``count_include_pad`` (PyTorch's default), else the number of input
    elements in the window."""
    op = "avg_pool2d"
    k, s, p, _ = _pool_args(op, 2, x, kernel_size, stride, padding, 1, ceil_mode)
    return wrap(_call(op, lambda: x.ops.avg_pool2d(x.primitive, k, s, p, bool(count_include_pad),
                                                   bool(ceil_mode)), x), x, Float)


def _adaptive(op: str, nd: int, x: Any, output_size: Any) -> Any:
    _tensor(op, "x", x)
    _rank(op, "x", x, nd + 2, _LAYOUT[nd])
    size = _ints(op, "output_size", output_size, nd, 1)
    return wrap(_call(op, lambda: getattr(x.ops, op)(x.primitive, size), x), x, Float)


def adaptive_avg_pool1d(x: Tensor, output_size: IntOrSeq) -> Tensor:
    """Adaptive average pooling ``[batch, channels, length]`` -> ``[batch, channels, output_size]``;
    output ``i`` averages ``[floor(i n / out), ceil((i + 1) n / out))`` (PyTorch, Burn)."""
    return _adaptive("adaptive_avg_pool1d", 1, x, output_size)


def adaptive_avg_pool2d(x: Tensor, output_size: IntOrSeq) -> Tensor:
    """Adaptive average pooling ``[batch, channels, height, width]`` -> ``[batch, channels,
    *output_size]`` (PyTorch ``F.adaptive_avg_pool2d``, Burn); ``output_size`` 1 gives global
    average pooling."""
    return _adaptive("adaptive_avg_pool2d", 2, x, output_size)


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
