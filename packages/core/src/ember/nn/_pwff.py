"""``PositionWiseFeedForward`` (Burn's ``nn::PositionWiseFeedForward``; Vaswani et al. 2017)."""

from __future__ import annotations

import math

from ..backend._device import Device
from ..config import config
from ..module import Module
from ..tensor import Tensor
from ..tensor import activation as A
from ._checks import config_error
from ._dropout import Dropout
from ._initializer import AnyInitializer, KaimingUniform
from ._linear import Linear, LinearConfig

__all__ = ["PositionWiseFeedForwardConfig", "PositionWiseFeedForward"]


@config
class PositionWiseFeedForwardConfig:
    """Configuration of :class:`PositionWiseFeedForward` (Burn's ``PositionWiseFeedForwardConfig``).

    Args:
        d_model: input and output size.
        d_ff: hidden size.
        dropout: after the activation (default 0.1, Burn).
        initializer: default ``KaimingUniform(gain=1/sqrt(3))`` (Burn).
    """

    d_model: int
    d_ff: int
    dropout: float = 0.1
    initializer: AnyInitializer = KaimingUniform(gain=1.0 / math.sqrt(3.0), fan_out_only=False)

    def init(self, device: Device) -> PositionWiseFeedForward:
        """A new :class:`PositionWiseFeedForward`. Raises ConfigError for a size below 1 or dropout outside [0, 1]."""
        if self.d_model < 1 or self.d_ff < 1 or not 0.0 <= self.dropout <= 1.0:
            raise config_error("PositionWiseFeedForwardConfig", f"need d_model, d_ff >= 1 and dropout in [0, 1], got "
                               f"{self.d_model}, {self.d_ff}, {self.dropout}.")
        return PositionWiseFeedForward(
            linear_inner=LinearConfig(self.d_model, self.d_ff, True, self.initializer).init(device),
            linear_outer=LinearConfig(self.d_ff, self.d_model, True, self.initializer).init(device),
            dropout=Dropout(prob=self.dropout),
        )


class PositionWiseFeedForward(Module):
    """``linear_outer(dropout(gelu(linear_inner(x))))`` (Burn's layer: GELU activation).

    Shapes: ``[..., d_model] -> [..., d_model]``.
    """

    linear_inner: Linear
    linear_outer: Linear
    dropout: Dropout

    def forward(self, x: Tensor) -> Tensor:
        return self.linear_outer.forward(self.dropout.forward(A.gelu(self.linear_inner.forward(x))))
