"""``PositionalEncoding``: sinusoidal position encodings (Burn's ``nn::PositionalEncoding``;
Vaswani et al. 2017, section 3.5)."""

from __future__ import annotations

import numpy as np

from .._errors import ShapeError
from ..backend._device import Device
from ..config import config
from ..module import Module
from ..tensor import Tensor
from ._checks import check_dim, check_float, check_rank, config_error

__all__ = ["PositionalEncodingConfig", "PositionalEncoding", "generate_sinusoids"]


def generate_sinusoids(length: int, d_model: int, max_timescale: float, device: Device) -> Tensor:
    """The table ``[length, d_model]``: ``pe[p, i] = sin(p / max_timescale^(i / d_model))`` for even ``i``
    and ``pe[p, i] = cos(p / max_timescale^((i - 1) / d_model))`` for odd ``i`` (Burn's
    ``generate_sinusoids``, the paper's formula). Computed in float64 on the host."""
    pos = np.arange(length, dtype=np.float64)[:, None]
    i = np.arange(0, d_model, 2, dtype=np.float64)[None, :]
    angle = pos / np.power(float(max_timescale), i / d_model)
    pe = np.empty((length, d_model), dtype=np.float64)
    pe[:, 0::2] = np.sin(angle)
    pe[:, 1::2] = np.cos(angle)
    return Tensor.from_data(pe, device).float()


@config
class PositionalEncodingConfig:
    """Configuration of :class:`PositionalEncoding` (Burn's ``PositionalEncodingConfig``).

    Args:
        d_model: embedding size (even).
        max_sequence_size: longest sequence (default 5000, Burn).
        max_timescale: the base of the wavelengths (default 10000, the paper).
    """

    d_model: int
    max_sequence_size: int = 5000
    max_timescale: float = 10000.0

    def init(self, device: Device) -> PositionalEncoding:
        """A new :class:`PositionalEncoding` (the table is a constant tensor, not a parameter).

        Raises:
            ConfigError: odd or non-positive ``d_model``, ``max_sequence_size < 1``, ``max_timescale <= 0``.
        """
        if self.d_model < 2 or self.d_model % 2 or self.max_sequence_size < 1 or self.max_timescale <= 0:
            raise config_error("PositionalEncodingConfig", f"need an even d_model >= 2, max_sequence_size >= 1 and "
                               f"max_timescale > 0, got {self.d_model}, {self.max_sequence_size}, "
                               f"{self.max_timescale}.")
        table = generate_sinusoids(self.max_sequence_size, self.d_model, self.max_timescale, device)
        return PositionalEncoding(sinusoids=table.unsqueeze_dim(0), max_sequence_size=self.max_sequence_size)


class PositionalEncoding(Module):
    """Adds the sinusoid table to the input (Burn's ``PositionalEncoding``).

    Constant: ``sinusoids`` ``[1, max_sequence_size, d_model]``.
    Shapes: ``[batch, seq_length, d_model] -> same``.

    Raises (forward):
        ShapeError: a wrong rank or ``d_model``, or ``seq_length > max_sequence_size``.
    """

    sinusoids: Tensor
    max_sequence_size: int

    def forward(self, x: Tensor) -> Tensor:
        layer, layout = "PositionalEncoding", "[batch, seq_length, d_model]"
        check_float(layer, x)
        check_rank(layer, x, 3, layout)
        check_dim(layer, x, 2, self.sinusoids.shape[2], layout, "d_model")
        seq = x.shape[1]
        if seq > self.max_sequence_size:
            raise ShapeError(f"{layer}: seq_length {seq} exceeds max_sequence_size {self.max_sequence_size}; "
                             "raise it in PositionalEncodingConfig.")
        table = self.sinusoids if seq == self.max_sequence_size else self.sinusoids.narrow(1, 0, seq)
        return x + table
