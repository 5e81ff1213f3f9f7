"""``Interpolate1d`` / ``Interpolate2d``: resizing layers (Burn's ``nn::interpolate``), built on
:func:`ember.tensor.functional.interpolate`."""

from __future__ import annotations

import enum
import math

from .._errors import ShapeError
from ..backend._device import Device
from ..config import config
from ..module import Module
from ..tensor import Tensor
from ..tensor import functional as M
from ._checks import check_float, check_rank, config_error

__all__ = ["InterpolateMode", "Interpolate1dConfig", "Interpolate1d", "Interpolate2dConfig", "Interpolate2d"]


class InterpolateMode(str, enum.Enum):
    """Burn's ``nn::interpolate::InterpolateMode``: ``NEAREST`` (default), ``LINEAR`` (bilinear in 2-D),
    ``CUBIC`` (bicubic, ``A = -0.75``). Source coordinates follow PyTorch with ``align_corners=False``."""

    NEAREST = "nearest"
    LINEAR = "linear"
    CUBIC = "cubic"


_OPS = {InterpolateMode.NEAREST: "nearest", InterpolateMode.LINEAR: "bilinear", InterpolateMode.CUBIC: "bicubic"}


def _sizes(name: str, output_size: tuple[int, ...] | None, scale_factor: tuple[float, ...] | None, n: int) -> None:
    if (output_size is None) == (scale_factor is None):
        raise config_error(name, "give exactly one of output_size and scale_factor.")
    vals: tuple[float, ...] = tuple(output_size if output_size is not None else scale_factor or ())
    if len(vals) != n or any(v <= 0 for v in vals):
        raise config_error(name, f"output_size / scale_factor must be {n} positive numbers, got {list(vals)}.")


def _out(layer: str, size: tuple[int, ...] | None, scale: tuple[float, ...] | None, spatial: tuple[int, ...],
         ) -> list[int]:
    if size is not None:
        return list(size)
    out = [int(math.floor(n * s)) for n, s in zip(spatial, scale)]  # type: ignore[arg-type]
    if any(o < 1 for o in out):
        raise ShapeError(f"{layer}: scale_factor {list(scale)} gives an empty output for spatial size {list(spatial)}.")  # type: ignore[arg-type]
    return out


@config
class Interpolate1dConfig:
    """Configuration of :class:`Interpolate1d` (Burn's): exactly one of ``output_size`` (int) and
    ``scale_factor`` (float; output ``floor(length * scale)``), and ``mode`` (default nearest)."""

    output_size: int | None = None
    scale_factor: float | None = None
    mode: InterpolateMode = InterpolateMode.NEAREST

    def init(self, device: Device | None = None) -> Interpolate1d:
        """Raises ConfigError unless exactly one positive size or scale is given."""
        size = None if self.output_size is None else (self.output_size,)
        scale = None if self.scale_factor is None else (self.scale_factor,)
        _sizes("Interpolate1dConfig", size, scale, 1)
        return Interpolate1d(output_size=size, scale_factor=scale, mode=InterpolateMode(self.mode))


class Interpolate1d(Module):
    """Resizes ``[batch, channels, length] -> [batch, channels, length_out]`` (Burn's ``Interpolate1d``;
    PyTorch ``F.interpolate`` modes ``nearest`` / ``linear`` / ``cubic``, ``align_corners=False``).

    Raises (forward): ShapeError for a wrong rank; KindError for a non-Float input.
    """

    output_size: tuple[int, ...] | None
    scale_factor: tuple[float, ...] | None
    mode: InterpolateMode = InterpolateMode.NEAREST

    def forward(self, x: Tensor) -> Tensor:
        layer = "Interpolate1d"
        check_float(layer, x)
        check_rank(layer, x, 3, "[batch, channels, length]")
        b, c, n = x.shape
        out = _out(layer, self.output_size, self.scale_factor, (n,))
        y = M.interpolate(x.reshape([b, c, 1, n]), [1, out[0]], M.InterpolateOptions(mode=_OPS[self.mode]))
        return y.reshape([b, c, out[0]])


@config
class Interpolate2dConfig:
    """Configuration of :class:`Interpolate2d` (Burn's): exactly one of ``output_size`` ``(height, width)``
    and ``scale_factor`` ``(sh, sw)`` (output ``floor(n * s)``), and ``mode`` (default nearest)."""

    output_size: tuple[int, int] | None = None
    scale_factor: tuple[float, float] | None = None
    mode: InterpolateMode = InterpolateMode.NEAREST

    def init(self, device: Device | None = None) -> Interpolate2d:
        """Raises ConfigError unless exactly one of two positive sizes or scales is given."""
        size = None if self.output_size is None else tuple(self.output_size)
        scale = None if self.scale_factor is None else tuple(self.scale_factor)
        _sizes("Interpolate2dConfig", size, scale, 2)
        return Interpolate2d(output_size=size, scale_factor=scale, mode=InterpolateMode(self.mode))


class Interpolate2d(Module):
    """Resizes ``[batch, channels, height, width] -> [batch, channels, height_out, width_out]`` (Burn's
    ``Interpolate2d``; PyTorch ``F.interpolate`` ``nearest`` / ``bilinear`` / ``bicubic``,
    ``align_corners=False``).

    Raises (forward): ShapeError for a wrong rank; KindError for a non-Float input.
    """

    output_size: tuple[int, ...] | None
    scale_factor: tuple[float, ...] | None
    mode: InterpolateMode = InterpolateMode.NEAREST

    def forward(self, x: Tensor) -> Tensor:
        layer = "Interpolate2d"
        check_float(layer, x)
        check_rank(layer, x, 4, "[batch, channels, height, width]")
        out = _out(layer, self.output_size, self.scale_factor, x.shape[2:])
        return M.interpolate(x, out, M.InterpolateOptions(mode=_OPS[self.mode]))
