"""``RotaryEncoding`` (Burn's ``nn::RotaryEncoding``; Su et al. 2021, "RoFormer")."""

from __future__ import annotations

import numpy as np

from .._errors import ShapeError
from ..backend._device import Device
from ..config import config
from ..module import Module
from ..tensor import Tensor
from ._checks import check_dim, check_float, config_error

__all__ = ["RotaryEncodingConfig", "RotaryEncoding"]


@config
class RotaryEncodingConfig:
    """Configuration of :class:`RotaryEncoding` (Burn's ``RotaryEncodingConfig``).

    Args:
        max_sequence_length: longest sequence (positions ``0 .. max_sequence_length - 1``).
        d_model: the rotated (last) dim; even.
        theta: the frequency base (default 10000, Burn and the paper).
    """

    max_sequence_length: int
    d_model: int
    theta: float = 10000.0

    def init(self, device: Device) -> RotaryEncoding:
        """A new :class:`RotaryEncoding` (cos / sin tables as constants).

        Raises:
            ConfigError: odd ``d_model``, ``theta <= 0`` or ``max_sequence_length < 1``.
        """
        if self.d_model < 2 or self.d_model % 2 or self.theta <= 0 or self.max_sequence_length < 1:
            raise config_error("RotaryEncodingConfig", f"need an even d_model >= 2, theta > 0 and "
                               f"max_sequence_length >= 1, got {self.d_model}, {self.theta}, "
                               f"{self.max_sequence_length}.")
        freq = 1.0 / np.power(float(self.theta), np.arange(0, self.d_model, 2, dtype=np.float64) / self.d_model)
        angle = np.arange(self.max_sequence_length, dtype=np.float64)[:, None] * freq[None, :]
        return RotaryEncoding(cos=Tensor.from_data(np.cos(angle), device).float(),
                              sin=Tensor.from_data(np.sin(angle), device).float(),
                              max_sequence_length=self.max_sequence_length)


class RotaryEncoding(Module):
    """Rotates each pair of features ``(x[2i], x[2i+1])`` at position ``p`` by the angle ``p * theta_i``,
    ``theta_i = theta^(-2i / d_model)`` (Burn's interleaved-pair layout, as the RoFormer paper and
    Meta's LLaMA code; Hugging Face's "rotate_half" layout pairs ``i`` with ``i + d/2`` instead)::

        y[2i]   = x[2i] cos - x[2i+1] sin
        y[2i+1] = x[2i] sin + x[2i+1] cos

    Constants: ``cos``, ``sin`` ``[max_sequence_length, d_model / 2]``.
    Shapes: ``[..., seq_length, d_model] -> same`` (e.g. ``[batch, heads, seq, d_k]``).
    """

    cos: Tensor
    sin: Tensor
    max_sequence_length: int

    def forward(self, x: Tensor) -> Tensor:
        """:meth:`apply` from position 0."""
        return self.apply(x, 0)

    def apply(self, x: Tensor, start: int) -> Tensor:
        """Encode ``x`` ``[..., seq_length, d_model]`` for positions ``start .. start + seq_length - 1``
        (Burn's ``apply``; for decoding with a cache).

        Raises:
            ShapeError: rank < 2, a wrong ``d_model``, or positions beyond ``max_sequence_length``.
        """
        layer, layout = "RotaryEncoding", "[..., seq_length, d_model]"
        check_float(layer, x)
        if x.rank < 2:
            raise ShapeError(f"{layer}: expected input of shape {layout} (rank >= 2), got {list(x.shape)}.")
        half = self.cos.shape[1]
        check_dim(layer, x, -1, 2 * half, layout, "d_model")
        shape = list(x.shape)
        seq = shape[-2]
        if start < 0 or start + seq > self.max_sequence_length:
            raise ShapeError(f"{layer}: positions {start}..{start + seq - 1} exceed max_sequence_length "
                             f"{self.max_sequence_length}.")
        cos = self.cos.narrow(0, start, seq)
        sin = self.sin.narrow(0, start, seq)
        pairs = x.reshape([*shape[:-1], half, 2])
        a, b = pairs.split(1, -1)
        a, b = a.squeeze_dim(-1), b.squeeze_dim(-1)
        out = Tensor.stack([a * cos - b * sin, a * sin + b * cos], -1)
        return out.reshape(shape)
