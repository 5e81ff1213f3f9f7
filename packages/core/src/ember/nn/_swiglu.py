"""``SwiGlu`` (Burn's ``nn::SwiGlu``; Shazeer 2020, "GLU Variants Improve Transformer")."""

from __future__ import annotations

import math

from ..backend._device import Device
from ..config import config
from ..module import Module
from ..tensor import Tensor
from ..tensor import activation as A
from ._checks import config_error
from ._initializer import AnyInitializer, KaimingUniform
from ._linear import Linear, LinearConfig

__all__ = ["SwiGluConfig", "SwiGlu"]


@config
class SwiGluConfig:
    """Configuration of :class:`SwiGlu` (Burn's ``SwiGluConfig``).

    Args:
        d_input: input features.
        d_output: output features.
        bias: learn biases (default ``False``, Burn).
        initializer: default ``KaimingUniform(gain=1/sqrt(3))`` (Burn).
    """

    d_input: int
    d_output: int
    bias: bool = False
    initializer: AnyInitializer = KaimingUniform(gain=1.0 / math.sqrt(3.0), fan_out_only=False)

    def init(self, device: Device) -> SwiGlu:
        """A new :class:`SwiGlu`. Raises ConfigError for a size below 1."""
        if self.d_input < 1 or self.d_output < 1:
            raise config_error("SwiGluConfig", f"d_input ({self.d_input}) and d_output ({self.d_output}) must be >= 1.")
        cfg = LinearConfig(self.d_input, self.d_output, self.bias, self.initializer)
        return SwiGlu(linear_inner=cfg.init(device), linear_outer=cfg.init(device))


class SwiGlu(Module):
    """``silu(linear_inner(x)) * linear_outer(x)`` (Burn's ``SwiGlu``).

    Params: ``linear_inner``, ``linear_outer``: ``Linear [d_input, d_output]``.
    Shapes: ``[..., d_input] -> [..., d_output]``.
    """

    linear_inner: Linear
    linear_outer: Linear

    def forward(self, x: Tensor) -> Tensor:
        return A.silu(self.linear_inner.forward(x)) * self.linear_outer.forward(x)
