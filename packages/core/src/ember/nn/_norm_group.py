"""``GroupNorm`` (Burn's ``nn::GroupNorm``; Wu & He 2018) and the shared group normalization."""

from __future__ import annotations

from ..backend._device import Device
from ..config import config
from ..module import Module, Param
from ..tensor import Tensor
from ..tensor import functional as M
from ._checks import check_dim, check_float, check_rank, config_error

__all__ = ["GroupNormConfig", "GroupNorm", "group_norm"]


def group_norm(layer: str, x: Tensor, num_groups: int, num_channels: int, gamma: Param | None,
               beta: Param | None, epsilon: float) -> Tensor:
    """Normalize ``x`` ``[batch, channels, ...]`` over each group of channels and the spatial dims
    (biased variance), then apply the per-channel affine ``gamma``, ``beta`` when given: one
    :func:`ember.tensor.functional.group_norm` primitive (ones and zeros for no affine)."""
    check_float(layer, x)
    layout = "[batch, channels, ...]"
    if x.rank < 2:
        check_rank(layer, x, 2, layout)
    check_dim(layer, x, 1, num_channels, layout, "channels")
    if gamma is not None and beta is not None:
        g, b = gamma.val(), beta.val()
    else:
        g, b = Tensor.ones([num_channels], x.device), Tensor.zeros([num_channels], x.device)
    return M.group_norm(x, g, b, num_groups, epsilon)[0]


@config
class GroupNormConfig:
    """Configuration of :class:`GroupNorm` (Burn's ``GroupNormConfig``).

    Args:
        num_groups: groups the channels are split into; must divide ``num_channels``.
        num_channels: channels of the input.
        epsilon: added to the variance (default ``1e-5``).
        affine: learn per-channel ``gamma`` (ones) and ``beta`` (zeros) (default ``True``).
    """

    num_groups: int
    num_channels: int
    epsilon: float = 1e-5
    affine: bool = True

    def init(self, device: Device) -> GroupNorm:
        """A new :class:`GroupNorm`.

        Raises:
            ConfigError: ``num_groups`` does not divide ``num_channels``, or a size below 1.
        """
        if self.num_groups < 1 or self.num_channels < 1:
            raise config_error("GroupNormConfig", f"num_groups ({self.num_groups}) and num_channels "
                               f"({self.num_channels}) must be >= 1.")
        if self.num_channels % self.num_groups:
            raise config_error("GroupNormConfig", f"num_groups ({self.num_groups}) must divide num_channels "
                               f"({self.num_channels}).")
        c = self.num_channels
        gamma = Param(Tensor.ones([c], device)) if self.affine else None
        beta = Param(Tensor.zeros([c], device)) if self.affine else None
        return GroupNorm(gamma=gamma, beta=beta, num_groups=self.num_groups, num_channels=c, epsilon=self.epsilon)


class GroupNorm(Module):
    """Normalizes each group of ``num_channels / num_groups`` channels over the channels of the group
    and all spatial positions, per sample (biased variance), then applies a per-channel affine
    (Burn; PyTorch ``nn.GroupNorm``).

    Params (when ``affine``): ``gamma``, ``beta`` ``[num_channels]``.
    Shapes: ``[batch, channels, ...] -> same`` (rank >= 2).
    """

    gamma: Param | None
    beta: Param | None
    num_groups: int
    num_channels: int
    epsilon: float = 1e-5

    def forward(self, x: Tensor) -> Tensor:
        return group_norm("GroupNorm", x, self.num_groups, self.num_channels, self.gamma, self.beta, self.epsilon)
