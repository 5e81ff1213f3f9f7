"""Pooling layers ``MaxPool1d/2d``, ``AvgPool1d/2d``, ``AdaptiveAvgPool1d/2d`` (Burn's
``nn::pool``), built on :mod:`ember.tensor.module`.

Burn's defaults: ``strides`` = ``kernel_size`` (``None`` here means that), padding ``Valid``,
dilation 1, ``ceil_mode`` ``False``, ``count_include_pad`` ``True``. ``Same`` padding (stride 1) pads
``(kernel - 1) / 2`` on each side (odd kernels only for pooling: the ops pad symmetrically).
"""

from __future__ import annotations

from typing import Any

from ..backend._device import Device
from ..config import config
from ..module import Module
from ..tensor import Tensor
from ..tensor import module as M
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


_MAX_CFG_DOC = """Configuration of :class:`{cls}` (Burn's ``{cls}Config``).

    Args:
        kernel_size: {nd} ints.
        strides: default ``None`` = ``kernel_size`` (Burn, PyTorch).
        padding: ``{pad}.Valid`` (default), ``.Same`` (odd kernels) or ``.Explicit(...)``; padded cells
            count as ``-inf``; at most half the kernel.
        dilation: default all 1.
        ceil_mode: ceiling instead of floor for the output size (default ``False``).
"""

_AVG_CFG_DOC = """Configuration of :class:`{cls}` (Burn's ``{cls}Config``).

    Args:
        kernel_size: {nd} ints.
        strides: default ``None`` = ``kernel_size``.
        padding: ``{pad}.Valid`` (default), ``.Same`` (odd kernels) or ``.Explicit(...)``; at most half the kernel.
        count_include_pad: padded zeros count in the divisor (default ``True``, Burn and PyTorch).
        ceil_mode: ceiling instead of floor for the output size (default ``False``).
"""

_LAYER_DOC = """{nd}-D {what} pooling (Burn's ``{cls}``, PyTorch ``nn.{cls}``).

    Shapes: ``{layout}`` -> same batch and channels, spatial ``floor((n + 2 p - d (k - 1) - 1) / s) + 1``.

    Raises (forward):
        ShapeError: a wrong rank, or a window larger than the padded input. KindError: non-Float input.
"""


@config
class MaxPool1dConfig:
    kernel_size: tuple[int]
    strides: tuple[int] | None = None
    padding: PaddingConfig1d = PaddingConfig1d.Valid
    dilation: tuple[int] = (1,)
    ceil_mode: bool = False

    def init(self, device: Device | None = None) -> MaxPool1d:
        k, s, p = _geometry(self, 1, tuple(self.dilation))
        return MaxPool1d(kernel_size=k, stride=s, padding=p, dilation=tuple(self.dilation), ceil_mode=self.ceil_mode)


class MaxPool1d(Module):
    kernel_size: tuple[int, ...]
    stride: tuple[int, ...]
    padding: tuple[int, ...]
    dilation: tuple[int, ...]
    ceil_mode: bool = False

    def forward(self, x: Tensor) -> Tensor:
        _check("MaxPool1d", 1, x)
        return M.max_pool1d(x, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode)

    __call__ = forward


@config
class MaxPool2dConfig:
    kernel_size: tuple[int, int]
    strides: tuple[int, int] | None = None
    padding: PaddingConfig2d = PaddingConfig2d.Valid
    dilation: tuple[int, int] = (1, 1)
    ceil_mode: bool = False

    def init(self, device: Device | None = None) -> MaxPool2d:
        k, s, p = _geometry(self, 2, tuple(self.dilation))
        return MaxPool2d(kernel_size=k, stride=s, padding=p, dilation=tuple(self.dilation), ceil_mode=self.ceil_mode)


class MaxPool2d(Module):
    kernel_size: tuple[int, ...]
    stride: tuple[int, ...]
    padding: tuple[int, ...]
    dilation: tuple[int, ...]
    ceil_mode: bool = False

    def forward(self, x: Tensor) -> Tensor:
        _check("MaxPool2d", 2, x)
        return M.max_pool2d(x, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode)

    __call__ = forward


@config
class AvgPool1dConfig:
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
    kernel_size: tuple[int, ...]
    stride: tuple[int, ...]
    padding: tuple[int, ...]
    count_include_pad: bool = True
    ceil_mode: bool = False

    def forward(self, x: Tensor) -> Tensor:
        _check("AvgPool1d", 1, x)
        return M.avg_pool1d(x, self.kernel_size, self.stride, self.padding, self.count_include_pad, self.ceil_mode)

    __call__ = forward


@config
class AvgPool2dConfig:
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
    kernel_size: tuple[int, ...]
    stride: tuple[int, ...]
    padding: tuple[int, ...]
    count_include_pad: bool = True
    ceil_mode: bool = False

    def forward(self, x: Tensor) -> Tensor:
        _check("AvgPool2d", 2, x)
        return M.avg_pool2d(x, self.kernel_size, self.stride, self.padding, self.count_include_pad, self.ceil_mode)

    __call__ = forward


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

    __call__ = forward


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

    __call__ = forward


_DOCS = ((1, MaxPool1dConfig, MaxPool1d, "max"), (2, MaxPool2dConfig, MaxPool2d, "max"),
         (1, AvgPool1dConfig, AvgPool1d, "average"), (2, AvgPool2dConfig, AvgPool2d, "average"))
for _nd, _cfg, _layer, _what in _DOCS:
    _doc = _MAX_CFG_DOC if _what == "max" else _AVG_CFG_DOC
    _cfg.__doc__ = _doc.format(cls=_layer.__name__, nd=_nd, pad=f"PaddingConfig{_nd}d")
    _layer.__doc__ = _LAYER_DOC.format(cls=_layer.__name__, nd=_nd, what=_what, layout=_LAYOUTS[_nd])
