"""Convolution layers ``Conv1d``, ``Conv2d``, ``Conv3d`` (Burn's ``nn::conv``), built on
:mod:`ember.tensor.module`."""

from __future__ import annotations

import math
from typing import Any

from ..backend._device import Device
from ..config import config
from ..module import Module, Param
from ..tensor import Tensor
from ..tensor import module as M
from ._checks import check_dim, check_float, check_rank, config_error
from ._initializer import AnyInitializer, KaimingUniform
from ._padding import PaddingConfig1d, PaddingConfig2d, PaddingConfig3d, resolve_padding

__all__ = ["Conv1dConfig", "Conv1d", "Conv2dConfig", "Conv2d", "Conv3dConfig", "Conv3d"]

_LAYOUTS = {1: "[batch, channels_in, length]", 2: "[batch, channels_in, height, width]",
            3: "[batch, channels_in, depth, height, width]"}
_FNS = {1: M.conv1d, 2: M.conv2d, 3: M.conv3d}
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
    k = math.prod(kernel)
    fan_in, fan_out = c_in // cfg.groups * k, c_out // cfg.groups * k
    weight = cfg.initializer.init_param_with([c_out, c_in // cfg.groups, *kernel], fan_in, fan_out, device)
    bias = cfg.initializer.init_param_with([c_out], fan_in, fan_out, device) if cfg.bias else None
    return dict(weight=weight, bias=bias, stride=stride, dilation=dilation, groups=cfg.groups,
                padding=left, padding_right=right)


def _forward(layer: str, nd: int, conv: Any, x: Tensor) -> Tensor:
    check_float(layer, x)
    layout = _LAYOUTS[nd]
    check_rank(layer, x, nd + 2, layout)
    w = conv.weight.val()
    check_dim(layer, x, 1, w.shape[1] * conv.groups, layout, "channels_in")
    pad = tuple(conv.padding)
    if tuple(conv.padding_right) != pad:  # asymmetric "Same" padding of an even window
        pairs = [(lo, hi) for lo, hi in zip(conv.padding, conv.padding_right)]
        x = x.pad([(0, 0), (0, 0), *pairs])
        pad = (0,) * nd
    b = conv.bias.val() if conv.bias is not None else None
    return _FNS[nd](x, w, b, M.ConvOptions(stride=conv.stride, padding=pad, dilation=conv.dilation,
                                           groups=conv.groups))


_CONFIG_DOC = """Configuration of :class:`{cls}` (Burn's ``{cls}Config``).

    Args:
        channels: ``(channels_in, channels_out)``.
        kernel_size: {nd} ints.
        stride: default all 1.
        dilation: default all 1.
        groups: default 1; must divide both channel counts.
        padding: ``{pad}.Valid`` (default, Burn), ``.Same`` or ``.Explicit(...)``.
        bias: default ``True``.
        initializer: weight and bias; default ``KaimingUniform(gain=1/sqrt(3))`` (Burn), i.e.
            ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))`` with ``fan_in = channels_in / groups * prod(kernel)``
            as PyTorch's default.

    ``init`` raises ConfigError for groups not dividing the channels, sizes below 1, or ``Same`` padding
    with a stride other than 1.
"""

_LAYER_DOC = """{nd}-D convolution (cross-correlation) (Burn's ``{cls}``; PyTorch ``nn.{cls}``, same weight layout).

    Params: ``weight`` ``[channels_out, channels_in / groups, {kernel}]``, ``bias`` ``[channels_out]``.
    Shapes: ``{layout}`` -> ``[batch, channels_out, {out}]`` with ``out = floor((n + pad - dilation
    (k - 1) - 1) / stride) + 1`` per spatial dim.

    Raises (forward):
        ShapeError: a wrong rank or channel count (names the layout and the shape received), or a kernel
            larger than the padded input. KindError: a non-Float input.
"""


@config
class Conv1dConfig:
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
    weight: Param
    bias: Param | None
    stride: tuple[int, ...]
    dilation: tuple[int, ...]
    groups: int
    padding: tuple[int, ...]
    padding_right: tuple[int, ...]

    def forward(self, x: Tensor) -> Tensor:
        return _forward("Conv1d", 1, self, x)

    __call__ = forward


@config
class Conv2dConfig:
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
    weight: Param
    bias: Param | None
    stride: tuple[int, ...]
    dilation: tuple[int, ...]
    groups: int
    padding: tuple[int, ...]
    padding_right: tuple[int, ...]

    def forward(self, x: Tensor) -> Tensor:
        return _forward("Conv2d", 2, self, x)

    __call__ = forward


@config
class Conv3dConfig:
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
    weight: Param
    bias: Param | None
    stride: tuple[int, ...]
    dilation: tuple[int, ...]
    groups: int
    padding: tuple[int, ...]
    padding_right: tuple[int, ...]

    def forward(self, x: Tensor) -> Tensor:
        return _forward("Conv3d", 3, self, x)

    __call__ = forward


_KERNEL = {1: "kernel_length", 2: "kernel_height, kernel_width", 3: "kernel_depth, kernel_height, kernel_width"}
_OUT = {1: "length_out", 2: "height_out, width_out", 3: "depth_out, height_out, width_out"}
for _nd, _cfg, _layer in ((1, Conv1dConfig, Conv1d), (2, Conv2dConfig, Conv2d), (3, Conv3dConfig, Conv3d)):
    _cfg.__doc__ = _CONFIG_DOC.format(cls=_layer.__name__, nd=_nd, pad=f"PaddingConfig{_nd}d")
    _layer.__doc__ = _LAYER_DOC.format(cls=_layer.__name__, nd=_nd, kernel=_KERNEL[_nd], layout=_LAYOUTS[_nd],
                                       out=_OUT[_nd])
