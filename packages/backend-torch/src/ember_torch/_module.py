"""Module primitives of the torch backend (contract: :mod:`ember.backend._ops_module`).

Every primitive of the contract is overridden by native torch kernels (``torch.nn.functional``
for the forward ops, ``torch.ops.aten.*_backward`` for most backward primitives), called on
tensors that never require grad: no torch.autograd is involved, and no input is written.

Layouts and semantics are the contract's, which are PyTorch's (inputs ``[batch, channels,
*spatial]``, convolution weights ``[channels_out, channels_in / groups, *kernel]``, transposed
ones ``[channels_in, channels_out / groups, *kernel]``). Points where the contract and torch's
kernels could differ, and how they are reconciled:

- max-pooling indices: torch's ``return_indices`` are int64 flat positions ``h * width + w`` in
  each ``(batch, channel)`` plane, the contract's convention; ties keep the first maximum and the
  last NaN wins, as torch's CPU kernel. They are cast to the backend's ``int_dtype``;
- ``interpolate(mode="nearest")``: torch computes ``floor(dst * float32(size / out))``, which
  float32 rounding puts one pixel off for some sizes (e.g. 2 -> 82, 3 -> 123); the contract's
  ``floor(dst * size / out)`` is computed here in integers (``dst * size // out``) and applied
  with ``index_select``, its backward with ``index_add``;
- convolution backward primitives: ``aten.convolution_backward`` (what ``torch.nn.grad`` calls),
  ``conv*d_backward`` one call for all the gradients its mask asks for (as torch's autograd), the
  single-gradient ones with an uninitialized stand-in for the tensor whose values are not needed, except the
  2-D input gradient of convolutions with at most :data:`FOLD_MAX_CHANNELS` input channels, which
  is col2im (a matmul and ``F.fold``) as oneDNN is slow there. An input longer
  than the outputs cover (a transposed convolution's ``padding_out``) gets the gradient of the
  missing trailing outputs as zeros, as the contract's default;
- ``avg_pool2d`` divisor (``count_include_pad``, ``ceil_mode``), adaptive pooling windows and the
  bilinear / bicubic source-index formulas are torch's own, which
  :mod:`ember.backend.contract` restates.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F  # noqa: N812 - torch's convention

from ember.backend.contract import conv_out

Ints = tuple[int, ...]
_aten = torch.ops.aten

#: ``conv2d_backward_input`` uses col2im (matmul + ``F.fold``) up to this many input channels:
#: oneDNN's backward-data kernel is 2-3x slower there on this machine's CPU (Zen 4), e.g. 2.6 ms
#: against 1.1 ms for the MNIST guide's first conv (batch 64, 1->8 3x3, 28x28), but 4x faster
#: from 8 channels on (2.8 ms against 12 ms for its 8->16 conv)
FOLD_MAX_CHANNELS = 3
_UPSAMPLE_BACKWARD = {"bilinear": _aten.upsample_bilinear2d_backward, "bicubic": _aten.upsample_bicubic2d_backward}


def _stand_in(like: Any, shape: Ints) -> Any:
    """An uninitialized tensor of ``shape`` for an aten argument read for its shape only. Contiguous: an
    expanded one-element tensor would be copied out in full by ``convolution_backward``'s ``contiguous()``
    (and oneDNN's weight gradient then took 15 ms instead of 8 for ResNet-18's 512-channel 3x3 convs)."""
    return like.new_empty(shape)


def _cover(grad: Any, x_shape: Ints, kernel: Ints, stride: Ints, padding: Ints, dilation: Ints) -> Any:
    """``grad`` zero-padded at the end to the output size of a convolution of ``x_shape``: the
    trailing outputs a transposed convolution's ``padding_out`` drops have no gradient."""
    out = tuple(conv_out(s, k, st, p, d) for s, k, st, p, d in zip(x_shape[2:], kernel, stride, padding, dilation))
    extra = [o - g for o, g in zip(out, grad.shape[2:])]
    if not any(extra):
        return grad
    pads: list[int] = []
    for e in reversed(extra):  # F.pad lists the last dim first
        pads += [0, e]
    return F.pad(grad, pads)


def _conv_backward(grad: Any, x: Any, weight: Any, stride: Ints, padding: Ints, dilation: Ints, groups: int,
                   which: int) -> Any:
    mask = [which == 0, which == 1, False]
    return _aten.convolution_backward(grad, x, weight, None, list(stride), list(padding), list(dilation), False,
                                      [0] * len(stride), groups, mask)[which]


def _fold_input(grad: Any, weight: Any, x_shape: Ints, stride: Ints, padding: Ints, dilation: Ints,
                groups: int) -> Any:
    """The 2-D input gradient as col2im (a matmul and ``F.fold``) where oneDNN is slow (few input channels,
    :data:`FOLD_MAX_CHANNELS`), else ``None``."""
    if len(x_shape) != 4 or groups != 1 or weight.shape[1] > FOLD_MAX_CHANNELS:
        return None
    # columns W^T g [batch, C k_h k_w, L] folded back (F.fold adds overlapping taps)
    n, o = grad.shape[:2]
    cols = torch.matmul(weight.reshape(o, -1).t(), grad.reshape(n, o, -1))
    return F.fold(cols, x_shape[2:], tuple(weight.shape[2:]), dilation, padding, stride)


def _conv_backward_all(grad: Any, x: Any, weight: Any, stride: Ints, padding: Ints, dilation: Ints, groups: int,
                       mask: tuple[bool, bool, bool]) -> tuple[Any, Any, Any]:
    """``conv*d_backward``: one ``aten.convolution_backward`` call for the gradients ``mask`` asks for (the
    input's as col2im instead where :func:`_fold_input` applies)."""
    gx = _fold_input(grad, weight, tuple(x.shape), stride, padding, dilation, groups) if mask[0] else None
    native = [mask[0] and gx is None, mask[1], mask[2]]
    if not any(native):
        return gx, None, None
    bias = [weight.shape[0]] if mask[2] else None
    rx, rw, rb = _aten.convolution_backward(grad, x, weight, bias, list(stride), list(padding), list(dilation),
                                            False, [0] * len(stride), groups, native)
    return (rx if native[0] else gx), (rw if native[1] else None), (rb if native[2] else None)


def _nearest_index(size: int, out: int, device: Any) -> Any:
    """Source rows ``floor(dst * size / out)`` of nearest interpolation, exact in integers."""
    return torch.div(torch.arange(out, device=device) * size, out, rounding_mode="floor")


class TorchModuleOps:
    """Convolution, pooling, embedding and interpolation as native torch kernels."""

    _itd: torch.dtype

    # ------------------------------------------------------------------ convolution
    @staticmethod
    def conv1d(x: Any, weight: Any, bias: Any, stride: Ints, padding: Ints, dilation: Ints, groups: int) -> Any:
        return F.conv1d(x, weight, bias, stride, padding, dilation, groups)

    @staticmethod
    def conv2d(x: Any, weight: Any, bias: Any, stride: Ints, padding: Ints, dilation: Ints, groups: int) -> Any:
        return F.conv2d(x, weight, bias, stride, padding, dilation, groups)

    @staticmethod
    def conv3d(x: Any, weight: Any, bias: Any, stride: Ints, padding: Ints, dilation: Ints, groups: int) -> Any:
        return F.conv3d(x, weight, bias, stride, padding, dilation, groups)

    @staticmethod
    def conv2d_backward_input(grad: Any, weight: Any, x_shape: Ints, stride: Ints, padding: Ints, dilation: Ints,
                              groups: int) -> Any:
        grad = _cover(grad, x_shape, tuple(weight.shape[2:]), stride, padding, dilation)
        gx = _fold_input(grad, weight, x_shape, stride, padding, dilation, groups)
        if gx is not None:
            return gx
        return _conv_backward(grad, _stand_in(grad, x_shape), weight, stride, padding, dilation, groups, 0)

    @staticmethod
    def conv3d_backward_input(grad: Any, weight: Any, x_shape: Ints, stride: Ints, padding: Ints, dilation: Ints,
                              groups: int) -> Any:
        grad = _cover(grad, x_shape, tuple(weight.shape[2:]), stride, padding, dilation)
        return _conv_backward(grad, _stand_in(grad, x_shape), weight, stride, padding, dilation, groups, 0)

    @staticmethod
    def conv2d_backward_weight(x: Any, grad: Any, weight_shape: Ints, stride: Ints, padding: Ints, dilation: Ints,
                               groups: int) -> Any:
        grad = _cover(grad, tuple(x.shape), weight_shape[2:], stride, padding, dilation)
        return _conv_backward(grad, x, _stand_in(grad, weight_shape), stride, padding, dilation, groups, 1)

    conv3d_backward_weight = conv2d_backward_weight
    conv2d_backward = staticmethod(_conv_backward_all)
    conv3d_backward = staticmethod(_conv_backward_all)

    @staticmethod
    def conv_transpose1d(x: Any, weight: Any, bias: Any, stride: Ints, padding: Ints, output_padding: Ints,
                         dilation: Ints, groups: int) -> Any:
        # torch's argument order: ... output_padding, groups, dilation
        return F.conv_transpose1d(x, weight, bias, stride, padding, output_padding, groups, dilation)

    @staticmethod
    def conv_transpose2d(x: Any, weight: Any, bias: Any, stride: Ints, padding: Ints, output_padding: Ints,
                         dilation: Ints, groups: int) -> Any:
        return F.conv_transpose2d(x, weight, bias, stride, padding, output_padding, groups, dilation)

    @staticmethod
    def conv_transpose3d(x: Any, weight: Any, bias: Any, stride: Ints, padding: Ints, output_padding: Ints,
                         dilation: Ints, groups: int) -> Any:
        return F.conv_transpose3d(x, weight, bias, stride, padding, output_padding, groups, dilation)

    @staticmethod
    def unfold4d(x: Any, kernel: Ints, stride: Ints, padding: Ints, dilation: Ints) -> Any:
        # F.unfold's rows are channel-major, then kernel row, then column: the contract's layout
        return F.unfold(x, kernel, dilation, padding, stride)

    # ------------------------------------------------------------------ max pooling
    @staticmethod
    def max_pool1d(x: Any, kernel: Ints, stride: Ints, padding: Ints, dilation: Ints, ceil_mode: bool) -> Any:
        return F.max_pool1d(x, kernel, stride, padding, dilation, ceil_mode)

    def max_pool1d_with_indices(self, x: Any, kernel: Ints, stride: Ints, padding: Ints, dilation: Ints,
                                ceil_mode: bool) -> tuple[Any, Any]:
        v, i = F.max_pool1d(x, kernel, stride, padding, dilation, ceil_mode, return_indices=True)
        return v, i.to(self._itd)

    @staticmethod
    def max_pool2d(x: Any, kernel: Ints, stride: Ints, padding: Ints, dilation: Ints, ceil_mode: bool) -> Any:
        return F.max_pool2d(x, kernel, stride, padding, dilation, ceil_mode)

    def max_pool2d_with_indices(self, x: Any, kernel: Ints, stride: Ints, padding: Ints, dilation: Ints,
                                ceil_mode: bool) -> tuple[Any, Any]:
        v, i = F.max_pool2d(x, kernel, stride, padding, dilation, ceil_mode, return_indices=True)
        return v, i.to(self._itd)

    @staticmethod
    def max_pool2d_backward(grad: Any, indices: Any, x_shape: Ints, kernel: Ints, stride: Ints, padding: Ints,
                            dilation: Ints, ceil_mode: bool) -> Any:
        # aten reads ``self`` for its shape and memory format only
        return _aten.max_pool2d_with_indices_backward(grad, grad.new_empty(x_shape), list(kernel), list(stride),
                                                      list(padding), list(dilation), ceil_mode,
                                                      indices.to(torch.int64))

    # ------------------------------------------------------------------ average pooling
    @staticmethod
    def avg_pool1d(x: Any, kernel: Ints, stride: Ints, padding: Ints, count_include_pad: bool,
                   ceil_mode: bool) -> Any:
        return F.avg_pool1d(x, kernel, stride, padding, ceil_mode, count_include_pad)

    @staticmethod
    def avg_pool2d(x: Any, kernel: Ints, stride: Ints, padding: Ints, count_include_pad: bool,
                   ceil_mode: bool) -> Any:
        return F.avg_pool2d(x, kernel, stride, padding, ceil_mode, count_include_pad)

    @staticmethod
    def avg_pool2d_backward(grad: Any, x_shape: Ints, kernel: Ints, stride: Ints, padding: Ints,
                            count_include_pad: bool, ceil_mode: bool) -> Any:
        # aten's order: ... ceil_mode, count_include_pad, divisor_override
        return _aten.avg_pool2d_backward(grad, grad.new_empty(x_shape), list(kernel), list(stride), list(padding),
                                         ceil_mode, count_include_pad, None)

    # ------------------------------------------------------------------ adaptive average pooling
    @staticmethod
    def adaptive_avg_pool1d(x: Any, output_size: Ints) -> Any:
        return F.adaptive_avg_pool1d(x, output_size)

    @staticmethod
    def adaptive_avg_pool2d(x: Any, output_size: Ints) -> Any:
        return F.adaptive_avg_pool2d(x, (output_size[0], output_size[1]))

    @staticmethod
    def adaptive_avg_pool2d_backward(grad: Any, x_shape: Ints) -> Any:
        return _aten._adaptive_avg_pool2d_backward(grad, grad.new_empty(x_shape))

    # ------------------------------------------------------------------ embedding
    @staticmethod
    def embedding(weights: Any, indices: Any) -> Any:
        return F.embedding(indices, weights)  # an index out of range raises IndexError (CPU)

    @staticmethod
    def embedding_backward(grad: Any, indices: Any, weights_shape: Ints) -> Any:
        d = weights_shape[1]
        z = grad.new_zeros(weights_shape)
        return z.index_add_(0, indices.reshape(-1), grad.reshape(-1, d))  # z is fresh; repeats accumulate

    # ------------------------------------------------------------------ interpolation
    @staticmethod
    def interpolate(x: Any, output_size: Ints, mode: str, align_corners: bool) -> Any:
        if mode == "nearest":
            h, w = x.shape[2:]
            rows = _nearest_index(h, output_size[0], x.device)
            cols = _nearest_index(w, output_size[1], x.device)
            return x.index_select(2, rows).index_select(3, cols)
        return F.interpolate(x, size=output_size, mode=mode, align_corners=align_corners)

    @staticmethod
    def interpolate_backward(grad: Any, x_shape: Ints, output_size: Ints, mode: str, align_corners: bool) -> Any:
        if mode == "nearest":
            n, c, h, w = x_shape
            rows = _nearest_index(h, output_size[0], grad.device)
            cols = _nearest_index(w, output_size[1], grad.device)
            g = grad.new_zeros((n, c, output_size[0], w)).index_add_(3, cols, grad)
            return grad.new_zeros(x_shape).index_add_(2, rows, g)
        return _UPSAMPLE_BACKWARD[mode](grad, list(output_size), list(x_shape), align_corners, None, None)
