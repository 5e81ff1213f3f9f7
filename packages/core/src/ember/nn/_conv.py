"""Convolution layers ``Conv1d``, ``Conv2d``, ``Conv3d`` (Burn's ``nn::conv``), built on
:mod:`ember.tensor.functional`."""

from __future__ import annotations

import math
from typing import Any

from ..backend._device import Device
from ..config import config
from ..module import Module, Param
from ..tensor import Tensor
from ..tensor import functional as M
from ._checks import check_dim, check_float, check_rank, config_error
from ._initializer import AnyInitializer, KaimingUniform
from ._padding import PaddingConfig1d, PaddingConfig2d, PaddingConfig3d, resolve_padding

__all__ = ["Conv1dConfig", "Conv1d", "Conv2dConfig", "Conv2d", "Conv3dConfig", "Conv3d"]

_LAYOUTS = {1: "[batch, channels_in, length]", 2: "[batch, channels_in, height, width]",
            3: "[batch, channels_in, depth, height, width]"}
_OPS = {1: "conv1d", 2: "conv2d", 3: "conv3d"}
_DEFAULT_INIT = KaimingUniform(gain=1.0 / math.sqrt(3.0), fan_out_only=False)


def _build(cfg: Any, nd: int, device: Device) -> dict[str, Any]:
    name = type(cfg).__name__
    c_in, c_out = cfg.channels
    kernel = tuple(cfg.kernel_size)
    stride, dilation = tuple(cfg.stride), tuple(cfg.dilation)
    for what, v in (("kernel_size", kernel), ("stride", stride), ("dilation", dilation)):
        if len(v) != nd or any(int(i) < 1 for i in v):
            raise config_error(name, f"{what} must be {nd} integers >= 1, got {list(v)}.")
    if c_in < 1 or c_out < 1 or cfg.groups < 1:
        raise config_error(name, f"channels ({list(cfg.channels)}) and groups ({cfg.groups}) must be >= 1.")
    if c_in % cfg.groups or c_out % cfg.groups:
        raise config_error(name, f"groups ({cfg.groups}) must divide both channels_in ({c_in}) and channels_out "
                           f"({c_out}).")
    left, right = resolve_padding(name, cfg.padding, kernel, stride, dilation)
    stride, dilation = tuple(int(i) for i in stride), tuple(int(i) for i in dilation)
    left, right = tuple(int(i) for i in left), tuple(int(i) for i in right)
    k = math.prod(kernel)
    fan_in, fan_out = c_in // cfg.groups * k, c_out // cfg.groups * k
    weight = cfg.initializer.init_param_with([c_out, c_in // cfg.groups, *kernel], fan_in, fan_out, device)
    bias = cfg.initializer.init_param_with([c_out], fan_in, fan_out, device) if cfg.bias else None
    return dict(weight=weight, bias=bias, stride=stride, dilation=dilation, groups=int(cfg.groups),
                padding=left, padding_right=right)


def _forward(layer: str, nd: int, conv: Any, x: Tensor) -> Tensor:
    """The layer's forward: the input is checked here, once (kind, rank, channels); the options and the weight were
    checked by the config's ``init`` (``_build``), so the functional convolution's argument checks are skipped."""
    check_float(layer, x)
    layout = _LAYOUTS[nd]
    check_rank(layer, x, nd + 2, layout)
    w = conv.weight.val()
    check_dim(layer, x, 1, w.shape[1] * conv.groups, layout, "channels_in")
    pad = conv.padding
    if conv.padding_right != pad:  # asymmetric "Same" padding of an even window
        pairs = [(lo, hi) for lo, hi in zip(conv.padding, conv.padding_right)]
        x = x.pad([(0, 0), (0, 0), *pairs])
        pad = (0,) * nd
    b = conv.bias.val() if conv.bias is not None else None
    return M._conv_prechecked(_OPS[nd], x, w, b, conv.stride, pad, conv.dilation, conv.groups)


@config
class Conv1dConfig:
    """Configuration of :class:`Conv1d` (Burn's ``burn::nn::conv::Conv1dConfig``; PyTorch ``nn.Conv1d``). See
    :class:`Conv2dConfig` for the shared explanation.

    Args:
        channels: ``(channels_in, channels_out)``, ``tuple[int, int]``, each >= 1 (PyTorch ``in_channels``,
            ``out_channels``).
        kernel_size: ``tuple[int, ...]`` of 1 int >= 1, ``(kernel_length)``.
        stride: 1 int >= 1, default ``(1,)`` (Burn, PyTorch).
        dilation: 1 int >= 1, default ``(1,)`` (Burn, PyTorch).
        groups: ``int`` >= 1 dividing both channel counts, default 1 (Burn, PyTorch).
        padding: ``PaddingConfig1d``, default ``PaddingConfig1d.Valid`` (no padding; Burn's default, PyTorch's
            ``padding=0``); ``.Same`` keeps the input size (stride 1 only; an even window pads one more on the
            right, as PyTorch ``padding="same"``); ``.Explicit(p...)`` zero-pads ``p`` on both sides.
        bias: ``bool``, default ``True`` (Burn, PyTorch): learn a ``[channels_out]`` bias.
        initializer: ``AnyInitializer`` for the weight and the bias, default ``KaimingUniform(gain=1/sqrt(3),
            fan_out_only=False)`` (Burn's default), i.e. ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))`` with ``fan_in =
            channels_in / groups * prod(kernel_size)``, PyTorch's default weight init.

    ``init(device)`` returns a :class:`Conv1d` on ``device``; it raises ConfigError for ``kernel_size``, ``stride``
    or ``dilation`` not 1 int >= 1, channels or groups below 1, groups not dividing both channel counts, or ``Same``
    padding with a stride other than 1.
    """

    channels: tuple[int, int]
    kernel_size: tuple[int]
    stride: tuple[int] = (1,)
    dilation: tuple[int] = (1,)
    groups: int = 1
    padding: PaddingConfig1d = PaddingConfig1d.Valid
    bias: bool = True
    initializer: AnyInitializer = _DEFAULT_INIT

    def init(self, device: Device) -> Conv1d:
        return Conv1d(**_build(self, 1, device))


class Conv1d(Module):
    """1-D convolution (cross-correlation, no kernel flip) (Burn's ``burn::nn::conv::Conv1d``; PyTorch ``nn.Conv1d``).
    See :class:`Conv2d` for the shared explanation.

    Shapes: input ``[batch, channels_in, length]`` -> output ``[batch, channels_out, length_out]``, with ``out =
    floor((n + pad_left + pad_right - dilation * (kernel - 1) - 1) / stride) + 1`` per spatial dim (PyTorch's
    formula; ``Valid``: no padding, ``Explicit(p)``: ``p`` each side, ``Same``: ``out = n``). Dtype: the input's
    Float dtype.

    Params: ``weight`` ``[channels_out, channels_in / groups, kernel_length]``, ``bias`` ``[channels_out]`` (or
    ``None`` with ``bias=False``). This is PyTorch's layout, so ``torch.nn.Conv1d`` weights copy across unchanged
    (``weight`` <- ``conv.weight``, ``bias`` <- ``conv.bias``). Attributes ``stride``, ``dilation``, ``groups``,
    ``padding`` (left/top) and ``padding_right`` (right/bottom, differs only for ``Same`` with an even window, which
    pads the input explicitly before the convolution).

    Raises (forward):
        KindError: a non-Float input.
        ShapeError: an input not of rank 3, ``[batch, channels_in, length]``, or whose dim 1 is not
            ``weight.shape[1] * groups`` (the message names the layout and the shape received), or a dilated kernel
            larger than the padded input.
        DeviceError: an input on another device than the parameters.
    """

    weight: Param
    bias: Param | None
    stride: tuple[int, ...]
    dilation: tuple[int, ...]
    groups: int
    padding: tuple[int, ...]
    padding_right: tuple[int, ...]

    def forward(self, x: Tensor) -> Tensor:
        return _forward("Conv1d", 1, self, x)


@config
class Conv2dConfig:
    """Configuration of :class:`Conv2d` (Burn's ``burn::nn::conv::Conv2dConfig``; PyTorch ``nn.Conv2d``).

    Args:
        channels: ``(channels_in, channels_out)``, ``tuple[int, int]``, each >= 1 (PyTorch ``in_channels``,
            ``out_channels``).
        kernel_size: ``tuple[int, ...]`` of 2 ints >= 1, ``(kernel_height, kernel_width)``.
        stride: 2 ints >= 1, default ``(1, 1)`` (Burn, PyTorch).
        dilation: 2 ints >= 1, default ``(1, 1)`` (Burn, PyTorch).
        groups: ``int`` >= 1 dividing both channel counts, default 1 (Burn, PyTorch).
        padding: ``PaddingConfig2d``, default ``PaddingConfig2d.Valid`` (no padding; Burn's default, PyTorch's
            ``padding=0``); ``.Same`` keeps the input size (stride 1 only; an even window pads one more on the
            right, as PyTorch ``padding="same"``); ``.Explicit(p...)`` zero-pads ``p`` on both sides.
        bias: ``bool``, default ``True`` (Burn, PyTorch): learn a ``[channels_out]`` bias.
        initializer: ``AnyInitializer`` for the weight and the bias, default ``KaimingUniform(gain=1/sqrt(3),
            fan_out_only=False)`` (Burn's default), i.e. ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))`` with ``fan_in =
            channels_in / groups * prod(kernel_size)``, PyTorch's default weight init.

    ``init(device)`` returns a :class:`Conv2d` on ``device``; it raises ConfigError for ``kernel_size``, ``stride``
    or ``dilation`` not 2 ints >= 1, channels or groups below 1, groups not dividing both channel counts, or
    ``Same`` padding with a stride other than 1.
    """

    channels: tuple[int, int]
    kernel_size: tuple[int, int]
    stride: tuple[int, int] = (1, 1)
    dilation: tuple[int, int] = (1, 1)
    groups: int = 1
    padding: PaddingConfig2d = PaddingConfig2d.Valid
    bias: bool = True
    initializer: AnyInitializer = _DEFAULT_INIT

    def init(self, device: Device) -> Conv2d:
        return Conv2d(**_build(self, 2, device))


class Conv2d(Module):
    """2-D convolution (cross-correlation, no kernel flip) (Burn's ``burn::nn::conv::Conv2d``; PyTorch ``nn.Conv2d``).

    Shapes: input ``[batch, channels_in, height, width]`` -> output ``[batch, channels_out, height_out,
    width_out]``, with ``out = floor((n + pad_left + pad_right - dilation * (kernel - 1) - 1) / stride) + 1`` per
    spatial dim (PyTorch's formula; ``Valid``: no padding, ``Explicit(p)``: ``p`` each side, ``Same``: ``out = n``).
    Dtype: the input's Float dtype.

    Params: ``weight`` ``[channels_out, channels_in / groups, kernel_height, kernel_width]``, ``bias``
    ``[channels_out]`` (or ``None`` with ``bias=False``). This is PyTorch's layout, so ``torch.nn.Conv2d`` weights
    copy across unchanged (``weight`` <- ``conv.weight``, ``bias`` <- ``conv.bias``). Attributes ``stride``,
    ``dilation``, ``groups``, ``padding`` (left/top) and ``padding_right`` (right/bottom, differs only for ``Same``
    with an even window, which pads the input explicitly before the convolution).

    Raises (forward):
        KindError: a non-Float input.
        ShapeError: an input not of rank 4, ``[batch, channels_in, height, width]``, or whose dim 1 is not
            ``weight.shape[1] * groups`` (the message names the layout and the shape received), or a dilated kernel
            larger than the padded input.
        DeviceError: an input on another device than the parameters.
    """

    weight: Param
    bias: Param | None
    stride: tuple[int, ...]
    dilation: tuple[int, ...]
    groups: int
    padding: tuple[int, ...]
    padding_right: tuple[int, ...]

    def forward(self, x: Tensor) -> Tensor:
        return _forward("Conv2d", 2, self, x)


@config
class Conv3dConfig:
    """Configuration of :class:`Conv3d` (Burn's ``burn::nn::conv::Conv3dConfig``; PyTorch ``nn.Conv3d``). See
    :class:`Conv2dConfig` for the shared explanation.

    Args:
        channels: ``(channels_in, channels_out)``, ``tuple[int, int]``, each >= 1 (PyTorch ``in_channels``,
            ``out_channels``).
        kernel_size: ``tuple[int, ...]`` of 3 ints >= 1, ``(kernel_depth, kernel_height, kernel_width)``.
        stride: 3 ints >= 1, default ``(1, 1, 1)`` (Burn, PyTorch).
        dilation: 3 ints >= 1, default ``(1, 1, 1)`` (Burn, PyTorch).
        groups: ``int`` >= 1 dividing both channel counts, default 1 (Burn, PyTorch).
        padding: ``PaddingConfig3d``, default ``PaddingConfig3d.Valid`` (no padding; Burn's default, PyTorch's
            ``padding=0``); ``.Same`` keeps the input size (stride 1 only; an even window pads one more on the
            right, as PyTorch ``padding="same"``); ``.Explicit(p...)`` zero-pads ``p`` on both sides.
        bias: ``bool``, default ``True`` (Burn, PyTorch): learn a ``[channels_out]`` bias.
        initializer: ``AnyInitializer`` for the weight and the bias, default ``KaimingUniform(gain=1/sqrt(3),
            fan_out_only=False)`` (Burn's default), i.e. ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))`` with ``fan_in =
            channels_in / groups * prod(kernel_size)``, PyTorch's default weight init.

    ``init(device)`` returns a :class:`Conv3d` on ``device``; it raises ConfigError for ``kernel_size``, ``stride``
    or ``dilation`` not 3 ints >= 1, channels or groups below 1, groups not dividing both channel counts, or
    ``Same`` padding with a stride other than 1.
    """

    channels: tuple[int, int]
    kernel_size: tuple[int, int, int]
    stride: tuple[int, int, int] = (1, 1, 1)
    dilation: tuple[int, int, int] = (1, 1, 1)
    groups: int = 1
    padding: PaddingConfig3d = PaddingConfig3d.Valid
    bias: bool = True
    initializer: AnyInitializer = _DEFAULT_INIT

    def init(self, device: Device) -> Conv3d:
        return Conv3d(**_build(self, 3, device))


class Conv3d(Module):
    """3-D convolution (cross-correlation, no kernel flip) (Burn's ``burn::nn::conv::Conv3d``; PyTorch ``nn.Conv3d``).
    See :class:`Conv2d` for the shared explanation.

    Shapes: input ``[batch, channels_in, depth, height, width]`` -> output ``[batch, channels_out, depth_out,
    height_out, width_out]``, with ``out = floor((n + pad_left + pad_right - dilation * (kernel - 1) - 1) / stride)
    + 1`` per spatial dim (PyTorch's formula; ``Valid``: no padding, ``Explicit(p)``: ``p`` each side, ``Same``:
    ``out = n``). Dtype: the input's Float dtype.

    Params: ``weight`` ``[channels_out, channels_in / groups, kernel_depth, kernel_height, kernel_width]``, ``bias``
    ``[channels_out]`` (or ``None`` with ``bias=False``). This is PyTorch's layout, so ``torch.nn.Conv3d`` weights
    copy across unchanged (``weight`` <- ``conv.weight``, ``bias`` <- ``conv.bias``). Attributes ``stride``,
    ``dilation``, ``groups``, ``padding`` (left/top) and ``padding_right`` (right/bottom, differs only for ``Same``
    with an even window, which pads the input explicitly before the convolution).

    Raises (forward):
        KindError: a non-Float input.
        ShapeError: an input not of rank 5, ``[batch, channels_in, depth, height, width]``, or whose dim 1 is not
            ``weight.shape[1] * groups`` (the message names the layout and the shape received), or a dilated kernel
            larger than the padded input.
        DeviceError: an input on another device than the parameters.
    """

    weight: Param
    bias: Param | None
    stride: tuple[int, ...]
    dilation: tuple[int, ...]
    groups: int
    padding: tuple[int, ...]
    padding_right: tuple[int, ...]

    def forward(self, x: Tensor) -> Tensor:
        return _forward("Conv3d", 3, self, x)

