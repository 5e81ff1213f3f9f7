"""Transposed convolution layers ``ConvTranspose1d/2d/3d`` (Burn's ``nn::conv``), built on
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

__all__ = ["ConvTranspose1dConfig", "ConvTranspose1d", "ConvTranspose2dConfig", "ConvTranspose2d",
           "ConvTranspose3dConfig", "ConvTranspose3d"]

_LAYOUTS = {1: "[batch, channels_in, length]", 2: "[batch, channels_in, height, width]",
            3: "[batch, channels_in, depth, height, width]"}
_OPS = {1: "conv_transpose1d", 2: "conv_transpose2d", 3: "conv_transpose3d"}
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
    return dict(weight=weight, bias=bias, stride=_ints(cfg.stride), dilation=_ints(cfg.dilation),
                groups=int(cfg.groups), padding=_ints(cfg.padding), padding_out=_ints(cfg.padding_out))


def _ints(v: Any) -> tuple[int, ...]:
    return tuple(int(i) for i in v)


def _forward(layer: str, nd: int, conv: Any, x: Tensor) -> Tensor:
    """The layer's forward: the input is checked here, once (kind, rank, channels); the options and the weight were
    checked by the config's ``init`` (``_build``), so the functional convolution's argument checks are skipped."""
    check_float(layer, x)
    layout = _LAYOUTS[nd]
    check_rank(layer, x, nd + 2, layout)
    w = conv.weight.val()
    check_dim(layer, x, 1, w.shape[0], layout, "channels_in")
    b = conv.bias.val() if conv.bias is not None else None
    return M._conv_transpose_prechecked(_OPS[nd], x, w, b, conv.stride, conv.padding, conv.padding_out,
                                        conv.dilation, conv.groups)


@config
class ConvTranspose1dConfig:
    """Configuration of :class:`ConvTranspose1d` (Burn's ``burn::nn::conv::ConvTranspose1dConfig``; PyTorch
    ``nn.ConvTranspose1d``). See :class:`ConvTranspose2dConfig` for the shared explanation.

    Args:
        channels: ``(channels_in, channels_out)``, ``tuple[int, int]``, each >= 1.
        kernel_size: 1 int >= 1, ``(kernel_length)``.
        stride: 1 int >= 1, default ``(1,)`` (Burn, PyTorch).
        dilation: 1 int >= 1, default ``(1,)`` (Burn, PyTorch).
        padding: 1 int >= 0, default ``(0,)``: ``dilation * (kernel - 1) - padding`` zeros pad each side of the
            stride-dilated input, i.e. ``padding`` is removed from both sides of the output (Burn, PyTorch).
        padding_out: 1 int >= 0, default ``(0,)``: extra size added to one side (the end) of the output (Burn's
            ``padding_out``, PyTorch's ``output_padding``); each must be smaller than its stride or its dilation
            (PyTorch's rule).
        groups: ``int`` >= 1 dividing both channel counts, default 1.
        bias: ``bool``, default ``True``: learn a ``[channels_out]`` bias.
        initializer: ``AnyInitializer`` for the weight and the bias, default ``KaimingUniform(gain=1/sqrt(3),
            fan_out_only=False)`` (Burn's default), i.e. ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))`` with ``fan_in =
            channels_out / groups * prod(kernel_size)`` (PyTorch's fan for this weight layout, so PyTorch's default
            init).

    ``init(device)`` returns a :class:`ConvTranspose1d` on ``device``; it raises ConfigError for ``kernel_size``,
    ``stride`` or ``dilation`` not 1 int >= 1, ``padding`` or ``padding_out`` not 1 int >= 0, channels or groups
    below 1, groups not dividing both channel counts, or a ``padding_out`` not smaller than its stride or dilation.
    """

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
    """1-D transposed convolution (gradient of :class:`Conv1d` w.r.t. its input) (Burn's
    ``burn::nn::conv::ConvTranspose1d``; PyTorch ``nn.ConvTranspose1d``). See :class:`ConvTranspose2d` for the
    shared explanation.

    Shapes: input ``[batch, channels_in, length]`` -> output ``[batch, channels_out, length_out]``, with ``out = (n
    - 1) * stride - 2 * padding + dilation * (kernel - 1) + padding_out + 1`` per spatial dim (PyTorch's formula,
    ``padding_out`` = ``output_padding``). Dtype: the input's Float dtype.

    Params: ``weight`` ``[channels_in, channels_out / groups, kernel_length]`` (note: channels_in first), ``bias``
    ``[channels_out]`` (or ``None`` with ``bias=False``). This is PyTorch's layout, so ``torch.nn.ConvTranspose1d``
    weights copy across unchanged (``weight`` <- ``conv.weight``, ``bias`` <- ``conv.bias``).

    Raises (forward):
        KindError: a non-Float input.
        ShapeError: an input not of rank 3, ``[batch, channels_in, length]``, or whose dim 1 is not
            ``weight.shape[0]`` (the message names the layout and the shape received), or an output size below 1
            (too much ``padding``).
        DeviceError: an input on another device than the parameters.
    """

    weight: Param
    bias: Param | None
    stride: tuple[int, ...]
    dilation: tuple[int, ...]
    groups: int
    padding: tuple[int, ...]
    padding_out: tuple[int, ...]

    def forward(self, x: Tensor) -> Tensor:
        return _forward("ConvTranspose1d", 1, self, x)


@config
class ConvTranspose2dConfig:
    """Configuration of :class:`ConvTranspose2d` (Burn's ``burn::nn::conv::ConvTranspose2dConfig``; PyTorch
    ``nn.ConvTranspose2d``).

    Args:
        channels: ``(channels_in, channels_out)``, ``tuple[int, int]``, each >= 1.
        kernel_size: 2 ints >= 1, ``(kernel_height, kernel_width)``.
        stride: 2 ints >= 1, default ``(1, 1)`` (Burn, PyTorch).
        dilation: 2 ints >= 1, default ``(1, 1)`` (Burn, PyTorch).
        padding: 2 ints >= 0, default ``(0, 0)``: ``dilation * (kernel - 1) - padding`` zeros pad each side of the
            stride-dilated input, i.e. ``padding`` is removed from both sides of the output (Burn, PyTorch).
        padding_out: 2 ints >= 0, default ``(0, 0)``: extra size added to one side (the end) of the output (Burn's
            ``padding_out``, PyTorch's ``output_padding``); each must be smaller than its stride or its dilation
            (PyTorch's rule).
        groups: ``int`` >= 1 dividing both channel counts, default 1.
        bias: ``bool``, default ``True``: learn a ``[channels_out]`` bias.
        initializer: ``AnyInitializer`` for the weight and the bias, default ``KaimingUniform(gain=1/sqrt(3),
            fan_out_only=False)`` (Burn's default), i.e. ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))`` with ``fan_in =
            channels_out / groups * prod(kernel_size)`` (PyTorch's fan for this weight layout, so PyTorch's default
            init).

    ``init(device)`` returns a :class:`ConvTranspose2d` on ``device``; it raises ConfigError for ``kernel_size``,
    ``stride`` or ``dilation`` not 2 ints >= 1, ``padding`` or ``padding_out`` not 2 ints >= 0, channels or groups
    below 1, groups not dividing both channel counts, or a ``padding_out`` not smaller than its stride or dilation.
    """

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
    """2-D transposed convolution (gradient of :class:`Conv2d` w.r.t. its input) (Burn's
    ``burn::nn::conv::ConvTranspose2d``; PyTorch ``nn.ConvTranspose2d``).

    Shapes: input ``[batch, channels_in, height, width]`` -> output ``[batch, channels_out, height_out,
    width_out]``, with ``out = (n - 1) * stride - 2 * padding + dilation * (kernel - 1) + padding_out + 1`` per
    spatial dim (PyTorch's formula, ``padding_out`` = ``output_padding``). Dtype: the input's Float dtype.

    Params: ``weight`` ``[channels_in, channels_out / groups, kernel_height, kernel_width]`` (note: channels_in
    first), ``bias`` ``[channels_out]`` (or ``None`` with ``bias=False``). This is PyTorch's layout, so
    ``torch.nn.ConvTranspose2d`` weights copy across unchanged (``weight`` <- ``conv.weight``, ``bias`` <-
    ``conv.bias``).

    Raises (forward):
        KindError: a non-Float input.
        ShapeError: an input not of rank 4, ``[batch, channels_in, height, width]``, or whose dim 1 is not
            ``weight.shape[0]`` (the message names the layout and the shape received), or an output size below 1
            (too much ``padding``).
        DeviceError: an input on another device than the parameters.
    """

    weight: Param
    bias: Param | None
    stride: tuple[int, ...]
    dilation: tuple[int, ...]
    groups: int
    padding: tuple[int, ...]
    padding_out: tuple[int, ...]

    def forward(self, x: Tensor) -> Tensor:
        return _forward("ConvTranspose2d", 2, self, x)


@config
class ConvTranspose3dConfig:
    """Configuration of :class:`ConvTranspose3d` (Burn's ``burn::nn::conv::ConvTranspose3dConfig``; PyTorch
    ``nn.ConvTranspose3d``). See :class:`ConvTranspose2dConfig` for the shared explanation.

    Args:
        channels: ``(channels_in, channels_out)``, ``tuple[int, int]``, each >= 1.
        kernel_size: 3 ints >= 1, ``(kernel_depth, kernel_height, kernel_width)``.
        stride: 3 ints >= 1, default ``(1, 1, 1)`` (Burn, PyTorch).
        dilation: 3 ints >= 1, default ``(1, 1, 1)`` (Burn, PyTorch).
        padding: 3 ints >= 0, default ``(0, 0, 0)``: ``dilation * (kernel - 1) - padding`` zeros pad each side of
            the dilated input, i.e. ``padding`` is removed from both sides of the output (Burn, PyTorch).
        padding_out: 3 ints >= 0, default ``(0, 0, 0)``: extra size added to one side (the end) of the output
            (Burn's ``padding_out``, PyTorch's ``output_padding``); each must be smaller than its stride or its
            dilation (PyTorch's rule).
        groups: ``int`` >= 1 dividing both channel counts, default 1.
        bias: ``bool``, default ``True``: learn a ``[channels_out]`` bias.
        initializer: ``AnyInitializer`` for the weight and the bias, default ``KaimingUniform(gain=1/sqrt(3),
            fan_out_only=False)`` (Burn's default), i.e. ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))`` with ``fan_in =
            channels_out / groups * prod(kernel_size)`` (PyTorch's fan for this weight layout, so PyTorch's default
            init).

    ``init(device)`` returns a :class:`ConvTranspose3d` on ``device``; it raises ConfigError for ``kernel_size``,
    ``stride`` or ``dilation`` not 3 ints >= 1, ``padding`` or ``padding_out`` not 3 ints >= 0, channels or groups
    below 1, groups not dividing both channel counts, or a ``padding_out`` not smaller than its stride or dilation.
    """

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
    """3-D transposed convolution (gradient of :class:`Conv3d` w.r.t. its input) (Burn's
    ``burn::nn::conv::ConvTranspose3d``; PyTorch ``nn.ConvTranspose3d``). See :class:`ConvTranspose2d` for the
    shared explanation.

    Shapes: input ``[batch, channels_in, depth, height, width]`` -> output ``[batch, channels_out, depth_out,
    height_out, width_out]``, with ``out = (n - 1) * stride - 2 * padding + dilation * (kernel - 1) + padding_out +
    1`` per spatial dim (PyTorch's formula, ``padding_out`` = ``output_padding``). Dtype: the input's Float dtype.

    Params: ``weight`` ``[channels_in, channels_out / groups, kernel_depth, kernel_height, kernel_width]`` (note:
    channels_in first), ``bias`` ``[channels_out]`` (or ``None`` with ``bias=False``). This is PyTorch's layout, so
    ``torch.nn.ConvTranspose3d`` weights copy across unchanged (``weight`` <- ``conv.weight``, ``bias`` <-
    ``conv.bias``).

    Raises (forward):
        KindError: a non-Float input.
        ShapeError: an input not of rank 5, ``[batch, channels_in, depth, height, width]``, or whose dim 1 is not
            ``weight.shape[0]`` (the message names the layout and the shape received), or an output size below 1
            (too much ``padding``).
        DeviceError: an input on another device than the parameters.
    """

    weight: Param
    bias: Param | None
    stride: tuple[int, ...]
    dilation: tuple[int, ...]
    groups: int
    padding: tuple[int, ...]
    padding_out: tuple[int, ...]

    def forward(self, x: Tensor) -> Tensor:
        return _forward("ConvTranspose3d", 3, self, x)

