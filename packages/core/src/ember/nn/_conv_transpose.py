"""Transposed convolution layers ``ConvTranspose1d/2d/3d`` (Burn's ``nn::conv``), built on
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

__all__ = ["ConvTranspose1dConfig", "ConvTranspose1d", "ConvTranspose2dConfig", "ConvTranspose2d",
           "ConvTranspose3dConfig", "ConvTranspose3d"]

_LAYOUTS = {1: "[batch, channels_in, length]", 2: "[batch, channels_in, height, width]",
            3: "[batch, channels_in, depth, height, width]"}
_FNS = {1: M.conv_transpose1d, 2: M.conv_transpose2d, 3: M.conv_transpose3d}
_DEFAULT_INIT = KaimingUniform(gain=1.0 / math.sqrt(3.0), fan_out_only=False)


def _build(cfg: Any, nd: int, device: Device) -> dict[str, Any]:
    name = type(cfg).__name__
    c_in, c_out = cfg.channels
    kernel = tuple(cfg.kernel_size)
    checks = (("kernel_size", kernel, 1), ("stride", tuple(cfg.stride), 1), ("dilation", tuple(cfg.dilation), 1),
              ("padding", tuple(cfg.padding), 0), ("padding_out", tuple(cfg.padding_out), 0))
    for what, v, lo in checks:
        if len(v) != nd or any(int(i) < lo for i in v):
            raise config_error(name, f"{what} must be {nd} integers >= {lo}, got {list(v)}.")
    if c_in < 1 or c_out < 1 or cfg.groups < 1:
        raise config_error(name, f"channels ({list(cfg.channels)}) and groups ({cfg.groups}) must be >= 1.")
    if c_in % cfg.groups or c_out % cfg.groups:
        raise config_error(name, f"groups ({cfg.groups}) must divide both channels_in ({c_in}) and channels_out "
                           f"({c_out}).")
    for po, s, d in zip(cfg.padding_out, cfg.stride, cfg.dilation):
        if po >= max(s, d):
            raise config_error(name, f"padding_out {list(cfg.padding_out)} must be smaller than stride "
                               f"{list(cfg.stride)} or dilation {list(cfg.dilation)} (PyTorch's rule).")
    k = math.prod(kernel)
    fan_in, fan_out = c_out // cfg.groups * k, c_in // cfg.groups * k
    weight = cfg.initializer.init_param_with([c_in, c_out // cfg.groups, *kernel], fan_in, fan_out, device)
    bias = cfg.initializer.init_param_with([c_out], fan_in, fan_out, device) if cfg.bias else None
    return dict(weight=weight, bias=bias, stride=tuple(cfg.stride), dilation=tuple(cfg.dilation), groups=cfg.groups,
                padding=tuple(cfg.padding), padding_out=tuple(cfg.padding_out))


def _forward(layer: str, nd: int, conv: Any, x: Tensor) -> Tensor:
    check_float(layer, x)
    layout = _LAYOUTS[nd]
    check_rank(layer, x, nd + 2, layout)
    w = conv.weight.val()
    check_dim(layer, x, 1, w.shape[0], layout, "channels_in")
    b = conv.bias.val() if conv.bias is not None else None
    opts = M.ConvTransposeOptions(stride=conv.stride, padding=conv.padding, padding_out=conv.padding_out,
                                  dilation=conv.dilation, groups=conv.groups)
    return _FNS[nd](x, w, b, opts)


_CONFIG_DOC = """Configuration of :class:`{cls}` (Burn's ``{cls}Config``).

    Args:
        channels: ``(channels_in, channels_out)``.
        kernel_size: {nd} ints.
        stride, dilation: default all 1.
        padding: removed from both sides of the output, default all 0.
        padding_out: added to one side of the output (PyTorch's ``output_padding``), default all 0;
            smaller than stride or dilation.
        groups: default 1; must divide both channel counts.
        bias: default ``True``.
        initializer: default ``KaimingUniform(gain=1/sqrt(3))`` (Burn) with ``fan_in = channels_out /
            groups * prod(kernel)`` (PyTorch's fan of this layout).

    ``init`` raises ConfigError for groups not dividing the channels, bad sizes or too large ``padding_out``.
"""

_LAYER_DOC = """{nd}-D transposed convolution (Burn's ``{cls}``; PyTorch ``nn.{cls}``, same layout).

    Params: ``weight`` ``[channels_in, channels_out / groups, {kernel}]``, ``bias`` ``[channels_out]``.
    Shapes: ``{layout}`` -> ``[batch, channels_out, ...]`` with ``out = (n - 1) stride - 2 padding +
    dilation (k - 1) + padding_out + 1`` per spatial dim.

    Raises (forward):
        ShapeError: a wrong rank or channel count. KindError: a non-Float input.
"""


@config
class ConvTranspose1dConfig:
    channels: tuple[int, int]
    kernel_size: tuple[int]
    stride: tuple[int] = (1,)
    dilation: tuple[int] = (1,)
    padding: tuple[int] = (0,)
    padding_out: tuple[int] = (0,)
    groups: int = 1
    bias: bool = True
    initializer: AnyInitializer = _DEFAULT_INIT

    def init(self, device: Device) -> ConvTranspose1d:
        return ConvTranspose1d(**_build(self, 1, device))


class ConvTranspose1d(Module):
    weight: Param
    bias: Param | None
    stride: tuple[int, ...]
    dilation: tuple[int, ...]
    groups: int
    padding: tuple[int, ...]
    padding_out: tuple[int, ...]

    def forward(self, x: Tensor) -> Tensor:
        return _forward("ConvTranspose1d", 1, self, x)

    __call__ = forward


@config
class ConvTranspose2dConfig:
    channels: tuple[int, int]
    kernel_size: tuple[int, int]
    stride: tuple[int, int] = (1, 1)
    dilation: tuple[int, int] = (1, 1)
    padding: tuple[int, int] = (0, 0)
    padding_out: tuple[int, int] = (0, 0)
    groups: int = 1
    bias: bool = True
    initializer: AnyInitializer = _DEFAULT_INIT

    def init(self, device: Device) -> ConvTranspose2d:
        return ConvTranspose2d(**_build(self, 2, device))


class ConvTranspose2d(Module):
    weight: Param
    bias: Param | None
    stride: tuple[int, ...]
    dilation: tuple[int, ...]
    groups: int
    padding: tuple[int, ...]
    padding_out: tuple[int, ...]

    def forward(self, x: Tensor) -> Tensor:
        return _forward("ConvTranspose2d", 2, self, x)

    __call__ = forward


@config
class ConvTranspose3dConfig:
    channels: tuple[int, int]
    kernel_size: tuple[int, int, int]
    stride: tuple[int, int, int] = (1, 1, 1)
    dilation: tuple[int, int, int] = (1, 1, 1)
    padding: tuple[int, int, int] = (0, 0, 0)
    padding_out: tuple[int, int, int] = (0, 0, 0)
    groups: int = 1
    bias: bool = True
    initializer: AnyInitializer = _DEFAULT_INIT

    def init(self, device: Device) -> ConvTranspose3d:
        return ConvTranspose3d(**_build(self, 3, device))


class ConvTranspose3d(Module):
    weight: Param
    bias: Param | None
    stride: tuple[int, ...]
    dilation: tuple[int, ...]
    groups: int
    padding: tuple[int, ...]
    padding_out: tuple[int, ...]

    def forward(self, x: Tensor) -> Tensor:
        return _forward("ConvTranspose3d", 3, self, x)

    __call__ = forward


_KERNEL = {1: "kernel_length", 2: "kernel_height, kernel_width", 3: "kernel_depth, kernel_height, kernel_width"}
for _nd, _cfg, _layer in ((1, ConvTranspose1dConfig, ConvTranspose1d), (2, ConvTranspose2dConfig, ConvTranspose2d),
                          (3, ConvTranspose3dConfig, ConvTranspose3d)):
    _cfg.__doc__ = _CONFIG_DOC.format(cls=_layer.__name__, nd=_nd)
    _layer.__doc__ = _LAYER_DOC.format(cls=_layer.__name__, nd=_nd, kernel=_KERNEL[_nd], layout=_LAYOUTS[_nd])
