"""``RmsNorm`` (Burn's ``nn::RmsNorm``; Zhang & Sennrich 2019)."""

from __future__ import annotations

from .._errors import ShapeError
from ..backend._device import Device
from ..config import config
from ..module import Module, Param
from ..tensor import Tensor
from ..tensor import functional as M
from ._checks import check_dim, check_float, config_error

__all__ = ["RmsNormConfig", "RmsNorm"]


@config
class RmsNormConfig:
    """Configuration of :class:`RmsNorm` (Burn's ``RmsNormConfig``).

    Args:
        d_model: the size of the normalized (last) dim.
        epsilon: added to the mean square (default ``1e-5``, Burn).
    """

    d_model: int
    epsilon: float = 1e-5

    def init(self, device: Device) -> RmsNorm:
        """A new :class:`RmsNorm` (``gamma`` ones). Raises ConfigError for ``d_model < 1`` or ``epsilon < 0``."""
        if self.d_model < 1 or self.epsilon < 0:
            raise config_error("RmsNormConfig", f"need d_model >= 1 and epsilon >= 0, got {self.d_model}, "
                               f"{self.epsilon}.")
        return RmsNorm(gamma=Param(Tensor.ones([self.d_model], device)), epsilon=self.epsilon)


class RmsNorm(Module):
    """``y = x / sqrt(mean(x^2) + epsilon) * gamma`` over the last dim (Burn; PyTorch ``nn.RMSNorm``).

    Params: ``gamma`` ``[d_model]``. Shapes: ``[..., d_model] -> [..., d_model]``.
    """

    gamma: Param
    epsilon: float = 1e-5

    def forward(self, x: Tensor) -> Tensor:
        check_float("RmsNorm", x)
        if x.rank == 0:
            raise ShapeError("RmsNorm: expected input of shape [..., d_model] (rank >= 1), got a rank-0 tensor.")
        check_dim("RmsNorm", x, -1, self.gamma.shape[0], "[..., d_model]", "d_model")
        return M.rms_norm(x, self.gamma.val(), self.epsilon)[0]
