"""``InstanceNorm`` (Burn's ``nn::InstanceNorm``; Ulyanov et al. 2016)."""

from __future__ import annotations

from ..backend._device import Device
from ..config import config
from ..module import Module, Param
from ..tensor import Tensor
from ._checks import config_error
from ._norm_group import group_norm

__all__ = ["InstanceNormConfig", "InstanceNorm"]


@config
class InstanceNormConfig:
    """Configuration of :class:`InstanceNorm` (Burn's ``InstanceNormConfig``).

    Args:
        num_channels: channels of the input.
        epsilon: added to the variance (default ``1e-5``).
        affine: learn per-channel ``gamma`` / ``beta`` (default ``True`` as Burn; PyTorch's
            ``nn.InstanceNorm2d`` defaults to ``False``).
    """

    num_channels: int
    epsilon: float = 1e-5
    affine: bool = True

    def init(self, device: Device) -> InstanceNorm:
        """A new :class:`InstanceNorm`. Raises ConfigError for ``num_channels < 1``."""
        if self.num_channels < 1:
            raise config_error("InstanceNormConfig", f"num_channels must be >= 1, got {self.num_channels}.")
        c = self.num_channels
        gamma = Param(Tensor.ones([c], device)) if self.affine else None
        beta = Param(Tensor.zeros([c], device)) if self.affine else None
        return InstanceNorm(gamma=gamma, beta=beta, num_channels=c, epsilon=self.epsilon)


class InstanceNorm(Module):
    """Normalizes each channel of each sample over its spatial positions (biased variance; no running
    statistics), then applies a per-channel affine (Burn; PyTorch ``nn.InstanceNorm*d``).

    Params (when ``affine``): ``gamma``, ``beta`` ``[num_channels]``.
    Shapes: ``[batch, channels, ...] -> same`` (rank >= 2).
    """

    gamma: Param | None
    beta: Param | None
    num_channels: int
    epsilon: float = 1e-5

    def forward(self, x: Tensor) -> Tensor:
        c = self.num_channels
        return group_norm("InstanceNorm", x, c, c, self.gamma, self.beta, self.epsilon)
