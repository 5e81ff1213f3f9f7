"""Pooling layers ``MaxPool1d/2d``, ``AvgPool1d/2d``, ``AdaptiveAvgPool1d/2d`` (Burn's
``nn::pool``), built on :mod:`ember.tensor.functional`.

Defaults: ``strides`` ``None`` = ``kernel_size`` (PyTorch's default; Burn's config defaults ``strides`` to 1),
padding ``Valid`` (Burn), dilation 1, ``ceil_mode`` ``False``, ``count_include_pad`` ``True``.
``Same`` padding (stride 1) pads ``(kernel - 1) / 2`` on each side
(odd kernels only for pooling: the ops pad symmetrically).
"""

from __future__ import annotations

from typing import Any

from ..backend._device import Device
from ..config import config
from ..module import Module
from ..tensor import Tensor
from ..tensor import functional as M
from ._checks import check_float, check_rank, config_error
from ._padding import PaddingConfig1d, PaddingConfig2d, resolve_padding

__all__ = ["MaxPool1dConfig", "MaxPool1d", "MaxPool2dConfig", "MaxPool2d", "AvgPool1dConfig", "AvgPool1d",
           "AvgPool2dConfig", "AvgPool2d", "AdaptiveAvgPool1dConfig", "AdaptiveAvgPool1d", "AdaptiveAvgPool2dConfig",
           "AdaptiveAvgPool2d"]

_LAYOUTS = {1: "[batch, channels, length]", 2: "[batch, channels, height, width]"}


def _geometry(cfg: Any, nd: int, dilation: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    name = type(cfg).__name__
    kernel = tuple(cfg.kernel_size)
    stride = kernel if cfg.strides is None else tuple(cfg.strides)
    for what, v in (("kernel_size", kernel), ("strides", stride), ("dilation", dilation)):
        if len(v) != nd or any(int(i) < 1 for i in v):
            raise config_error(name, f"{what} must be {nd} integers >= 1, got {list(v)}.")
    left, right = resolve_padding(name, cfg.padding, kernel, stride, dilation)
    if left != right:
        raise config_error(name, f"padding Same with an even kernel {list(kernel)} would be asymmetric; pooling pads "
                           "symmetrically - use an odd kernel or Explicit padding.")
    if any(2 * p > k for p, k in zip(left, kernel)):
        raise config_error(name, f"padding {list(left)} must be at most half of kernel_size {list(kernel)} "
                           "(PyTorch's rule).")
    return kernel, stride, left


def _check(layer: str, nd: int, x: Tensor) -> None:
    check_float(layer, x)
    check_rank(layer, x, nd + 2, _LAYOUTS[nd])


@config
class MaxPool1dConfig:
    """Configuration of :class:`MaxPool1d` (Burn's ``burn::nn::pool::MaxPool1dConfig``; PyTorch ``nn.MaxPool1d``). See
    :class:`MaxPool2dConfig` for the shared explanation.

    Args:
        kernel_size: 1 int >= 1, the window ``(kernel_length)``.
        strides: 1 int >= 1 or ``None`` (default) meaning ``kernel_size``, PyTorch's default (Burn's ``strides``
            defaults to all 1: set it explicitly when porting a Burn config).
        padding: ``PaddingConfig1d``, default ``PaddingConfig1d.Valid`` (no padding, Burn; PyTorch ``padding=0``);
            ``.Same`` (stride 1, odd kernels: ``(kernel - 1) / 2`` each side) or ``.Explicit(p...)`` (``p`` each
            side, at most half the kernel, PyTorch's rule); padded cells count as ``-inf``.
        dilation: 1 int >= 1, default ``(1,)`` (Burn, PyTorch).
        ceil_mode: ``bool``, default ``False`` (PyTorch): round the output size up instead of down, so a last
            partial window is kept (PyTorch's rule: it must start inside the input or left padding).

    ``init(device=None)`` returns a :class:`MaxPool1d` (no parameters, so the device is unused); it raises
    ConfigError for ``kernel_size``, ``strides``, ``dilation`` not 1 int >= 1, ``Same`` padding with a stride other
    than 1 or an even kernel, or padding above half the kernel.
    """

    kernel_size: tuple[int]
    strides: tuple[int] | None = None
    padding: PaddingConfig1d = PaddingConfig1d.Valid
    dilation: tuple[int] = (1,)
    ceil_mode: bool = False

    def init(self, device: Device | None = None) -> MaxPool1d:
        k, s, p = _geometry(self, 1, tuple(self.dilation))
        return MaxPool1d(kernel_size=k, stride=s, padding=p, dilation=tuple(self.dilation), ceil_mode=self.ceil_mode)


class MaxPool1d(Module):
    """1-D max pooling (Burn's ``burn::nn::pool::MaxPool1d``; PyTorch ``nn.MaxPool1d``): the maximum of each window;
    padding counts as ``-inf``, NaN propagates. See :class:`MaxPool2d` for the shared explanation.

    Shapes: ``[batch, channels, length]`` -> ``[batch, channels, length_out]``, with ``out = floor((n + 2 * padding
    - dilation * (kernel - 1) - 1) / stride) + 1`` per spatial dim, ``ceil`` instead of ``floor`` in ``ceil_mode``
    (PyTorch's formula). Dtype: the input's Float dtype. No parameters.

    Raises (forward):
        KindError: a non-Float input.
        ShapeError: an input not of rank 3, ``[batch, channels, length]`` (the message names the layout and the
            shape received), a dilated window larger than the padded input, or an output size below 1.
    """

    kernel_size: tuple[int, ...]
    stride: tuple[int, ...]
    padding: tuple[int, ...]
    dilation: tuple[int, ...]
    ceil_mode: bool = False

    def forward(self, x: Tensor) -> Tensor:
        _check("MaxPool1d", 1, x)
        return M.max_pool1d(x, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode)


@config
class MaxPool2dConfig:
    """Configuration of :class:`MaxPool2d` (Burn's ``burn::nn::pool::MaxPool2dConfig``; PyTorch ``nn.MaxPool2d``).

    Args:
        kernel_size: 2 ints >= 1, the window ``(kernel_height, kernel_width)``.
        strides: 2 ints >= 1 or ``None`` (default) meaning ``kernel_size``, PyTorch's default (Burn's ``strides``
            defaults to all 1: set it explicitly when porting a Burn config).
        padding: ``PaddingConfig2d``, default ``PaddingConfig2d.Valid`` (no padding, Burn; PyTorch ``padding=0``);
            ``.Same`` (stride 1, odd kernels: ``(kernel - 1) / 2`` each side) or ``.Explicit(p...)`` (``p`` each
            side, at most half the kernel, PyTorch's rule); padded cells count as ``-inf``.
        dilation: 2 ints >= 1, default ``(1, 1)`` (Burn, PyTorch).
        ceil_mode: ``bool``, default ``False`` (PyTorch): round the output size up instead of down, so a last
            partial window is kept (PyTorch's rule: it must start inside the input or left padding).

    ``init(device=None)`` returns a :class:`MaxPool2d` (no parameters, so the device is unused); it raises
    ConfigError for ``kernel_size``, ``strides``, ``dilation`` not 2 ints >= 1, ``Same`` padding with a stride other
    than 1 or an even kernel, or padding above half the kernel.
    """

    kernel_size: tuple[int, int]
    strides: tuple[int, int] | None = None
    padding: PaddingConfig2d = PaddingConfig2d.Valid
    dilation: tuple[int, int] = (1, 1)
    ceil_mode: bool = False

    def init(self, device: Device | None = None) -> MaxPool2d:
        k, s, p = _geometry(self, 2, tuple(self.dilation))
        return MaxPool2d(kernel_size=k, stride=s, padding=p, dilation=tuple(self.dilation), ceil_mode=self.ceil_mode)


class MaxPool2d(Module):
    """2-D max pooling (Burn's ``burn::nn::pool::MaxPool2d``; PyTorch ``nn.MaxPool2d``): the maximum of each window;
    padding counts as ``-inf``, NaN propagates.

    Shapes: ``[batch, channels, height, width]`` -> ``[batch, channels, height_out, width_out]``, with ``out =
    floor((n + 2 * padding - dilation * (kernel - 1) - 1) / stride) + 1`` per spatial dim, ``ceil`` instead of
    ``floor`` in ``ceil_mode`` (PyTorch's formula). Dtype: the input's Float dtype. No parameters.

    Raises (forward):
        KindError: a non-Float input.
        ShapeError: an input not of rank 4, ``[batch, channels, height, width]`` (the message names the layout and
            the shape received), a dilated window larger than the padded input, or an output size below 1.
    """

    kernel_size: tuple[int, ...]
    stride: tuple[int, ...]
    padding: tuple[int, ...]
    dilation: tuple[int, ...]
    ceil_mode: bool = False

    def forward(self, x: Tensor) -> Tensor:
        _check("MaxPool2d", 2, x)
        return M.max_pool2d(x, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode)


@config
class AvgPool1dConfig:
    """Configuration of :class:`AvgPool1d` (Burn's ``burn::nn::pool::AvgPool1dConfig``; PyTorch ``nn.AvgPool1d``). See
    :class:`AvgPool2dConfig` for the shared explanation.

    Args:
        kernel_size: 1 int >= 1, the window ``(kernel_length)``.
        strides: 1 int >= 1 or ``None`` (default) meaning ``kernel_size``, PyTorch's default (Burn's ``strides``
            defaults to all 1: set it explicitly when porting a Burn config).
        padding: ``PaddingConfig1d``, default ``PaddingConfig1d.Valid`` (no padding, Burn; PyTorch ``padding=0``);
            ``.Same`` (stride 1, odd kernels: ``(kernel - 1) / 2`` each side) or ``.Explicit(p...)`` (``p`` each
            side, at most half the kernel, PyTorch's rule); padded cells are zeros.
        count_include_pad: ``bool``, default ``True`` (Burn, PyTorch): padded zeros count in the divisor.
        ceil_mode: ``bool``, default ``False`` (PyTorch): round the output size up instead of down, so a last
            partial window is kept (PyTorch's rule: it must start inside the input or left padding).

    ``init(device=None)`` returns a :class:`AvgPool1d` (no parameters, so the device is unused); it raises
    ConfigError for ``kernel_size`` or ``strides`` not 1 int >= 1, ``Same`` padding with a stride other than 1 or an
    even kernel, or padding above half the kernel.
    """

    kernel_size: tuple[int]
    strides: tuple[int] | None = None
    padding: PaddingConfig1d = PaddingConfig1d.Valid
    count_include_pad: bool = True
    ceil_mode: bool = False

    def init(self, device: Device | None = None) -> AvgPool1d:
        k, s, p = _geometry(self, 1, (1,))
        return AvgPool1d(kernel_size=k, stride=s, padding=p, count_include_pad=self.count_include_pad,
                         ceil_mode=self.ceil_mode)


class AvgPool1d(Module):
    """1-D average pooling (Burn's ``burn::nn::pool::AvgPool1d``; PyTorch ``nn.AvgPool1d``): the mean of each window.
    See :class:`AvgPool2d` for the shared explanation.

    Shapes: ``[batch, channels, length]`` -> ``[batch, channels, length_out]``, with ``out = floor((n + 2 * padding
    - kernel) / stride) + 1`` per spatial dim, ``ceil`` instead of ``floor`` in ``ceil_mode`` (PyTorch's formula).
    Dtype: the input's Float dtype. No parameters. The divisor is the window clipped to the padded input when
    ``count_include_pad`` (default), else the number of input elements in the window (PyTorch's rule).

    Raises (forward):
        KindError: a non-Float input.
        ShapeError: an input not of rank 3, ``[batch, channels, length]`` (the message names the layout and the
            shape received), a window larger than the padded input, or an output size below 1.
    """

    kernel_size: tuple[int, ...]
    stride: tuple[int, ...]
    padding: tuple[int, ...]
    count_include_pad: bool = True
    ceil_mode: bool = False

    def forward(self, x: Tensor) -> Tensor:
        _check("AvgPool1d", 1, x)
        return M.avg_pool1d(x, self.kernel_size, self.stride, self.padding, self.count_include_pad, self.ceil_mode)


@config
class AvgPool2dConfig:
    """Configuration of :class:`AvgPool2d` (Burn's ``burn::nn::pool::AvgPool2dConfig``; PyTorch ``nn.AvgPool2d``).

    Args:
        kernel_size: 2 ints >= 1, the window ``(kernel_height, kernel_width)``.
        strides: 2 ints >= 1 or ``None`` (default) meaning ``kernel_size``, PyTorch's default (Burn's ``strides``
            defaults to all 1: set it explicitly when porting a Burn config).
        padding: ``PaddingConfig2d``, default ``PaddingConfig2d.Valid`` (no padding, Burn; PyTorch ``padding=0``);
            ``.Same`` (stride 1, odd kernels: ``(kernel - 1) / 2`` each side) or ``.Explicit(p...)`` (``p`` each
            side, at most half the kernel, PyTorch's rule); padded cells are zeros.
        count_include_pad: ``bool``, default ``True`` (Burn, PyTorch): padded zeros count in the divisor.
        ceil_mode: ``bool``, default ``False`` (PyTorch): round the output size up instead of down, so a last
            partial window is kept (PyTorch's rule: it must start inside the input or left padding).

    ``init(device=None)`` returns a :class:`AvgPool2d` (no parameters, so the device is unused); it raises
    ConfigError for ``kernel_size`` or ``strides`` not 2 ints >= 1, ``Same`` padding with a stride other than 1 or an
    even kernel, or padding above half the kernel.
    """

    kernel_size: tuple[int, int]
    strides: tuple[int, int] | None = None
    padding: PaddingConfig2d = PaddingConfig2d.Valid
    count_include_pad: bool = True
    ceil_mode: bool = False

    def init(self, device: Device | None = None) -> AvgPool2d:
        k, s, p = _geometry(self, 2, (1, 1))
        return AvgPool2d(kernel_size=k, stride=s, padding=p, count_include_pad=self.count_include_pad,
                         ceil_mode=self.ceil_mode)


class AvgPool2d(Module):
    """2-D average pooling (Burn's ``burn::nn::pool::AvgPool2d``; PyTorch ``nn.AvgPool2d``): the mean of each window.

    Shapes: ``[batch, channels, height, width]`` -> ``[batch, channels, height_out, width_out]``, with ``out =
    floor((n + 2 * padding - kernel) / stride) + 1`` per spatial dim, ``ceil`` instead of ``floor`` in ``ceil_mode``
    (PyTorch's formula). Dtype: the input's Float dtype. No parameters. The divisor is the window clipped to the
    padded input when ``count_include_pad`` (default), else the number of input elements in the window (PyTorch's
    rule).

    Raises (forward):
        KindError: a non-Float input.
        ShapeError: an input not of rank 4, ``[batch, channels, height, width]`` (the message names the layout and
            the shape received), a window larger than the padded input, or an output size below 1.
    """

    kernel_size: tuple[int, ...]
    stride: tuple[int, ...]
    padding: tuple[int, ...]
    count_include_pad: bool = True
    ceil_mode: bool = False

    def forward(self, x: Tensor) -> Tensor:
        _check("AvgPool2d", 2, x)
        return M.avg_pool2d(x, self.kernel_size, self.stride, self.padding, self.count_include_pad, self.ceil_mode)


@config
class AdaptiveAvgPool1dConfig:
    """Configuration of :class:`AdaptiveAvgPool1d` (Burn's): ``output_size`` (>= 1)."""

    output_size: int

    def init(self, device: Device | None = None) -> AdaptiveAvgPool1d:
        """Raises ConfigError for ``output_size < 1``."""
        if self.output_size < 1:
            raise config_error("AdaptiveAvgPool1dConfig", f"output_size must be >= 1, got {self.output_size}.")
        return AdaptiveAvgPool1d(output_size=self.output_size)


class AdaptiveAvgPool1d(Module):
    """Adaptive average pooling ``[batch, channels, length] -> [batch, channels, output_size]``: output
    ``i`` averages ``[floor(i n / out), ceil((i + 1) n / out))`` (Burn, PyTorch ``nn.AdaptiveAvgPool1d``)."""

    output_size: int

    def forward(self, x: Tensor) -> Tensor:
        _check("AdaptiveAvgPool1d", 1, x)
        return M.adaptive_avg_pool1d(x, self.output_size)


@config
class AdaptiveAvgPool2dConfig:
    """Configuration of :class:`AdaptiveAvgPool2d` (Burn's): ``output_size`` ``(height, width)``."""

    output_size: tuple[int, int]

    def init(self, device: Device | None = None) -> AdaptiveAvgPool2d:
        """Raises ConfigError for a size below 1."""
        if len(self.output_size) != 2 or any(s < 1 for s in self.output_size):
            raise config_error("AdaptiveAvgPool2dConfig", f"output_size must be 2 integers >= 1, got "
                               f"{list(self.output_size)}.")
        return AdaptiveAvgPool2d(output_size=tuple(self.output_size))


class AdaptiveAvgPool2d(Module):
    """Adaptive average pooling ``[batch, channels, height, width] -> [batch, channels, *output_size]``
    (Burn, PyTorch ``nn.AdaptiveAvgPool2d``); ``(1, 1)`` is global average pooling."""

    output_size: tuple[int, ...]

    def forward(self, x: Tensor) -> Tensor:
        _check("AdaptiveAvgPool2d", 2, x)
        return M.adaptive_avg_pool2d(x, self.output_size)

