"""``LayerNorm`` (Burn's ``nn::LayerNorm``; Ba et al. 2016)."""

from __future__ import annotations

from .._errors import ShapeError
from ..backend._device import Device
from ..config import config
from ..module import Module, Param
from ..tensor import Tensor
from ..tensor import functional as M
from ._checks import check_dim, check_float, config_error

__all__ = ["LayerNormConfig", "LayerNorm"]


@config
class LayerNormConfig:
    """Configuration of :class:`LayerNorm` (Burn's ``LayerNormConfig``).

    Args:
        d_model: the size of the normalized (last) dim.
        epsilon: added to the variance (default ``1e-5``, Burn and PyTorch).
    """

    d_model: int
    epsilon: float = 1e-5

    def init(self, device: Device) -> LayerNorm:
        """A new :class:`LayerNorm` (``gamma`` ones, ``beta`` zeros). Raises ConfigError for ``d_model < 1``
        or ``epsilon < 0``."""
        if self.d_model < 1 or self.epsilon < 0:
            raise config_error("LayerNormConfig", f"need d_model >= 1 and epsilon >= 0, got {self.d_model}, "
                               f"{self.epsilon}.")
        return LayerNorm(gamma=Param(Tensor.ones([self.d_model], device)),
                         beta=Param(Tensor.zeros([self.d_model], device)), epsilon=self.epsilon)


class LayerNorm(Module):
    """``y = (x - mean) / sqrt(var + epsilon) * gamma + beta`` over the last dim, with the biased
    variance (Burn, PyTorch ``nn.LayerNorm(d_model)``).

    Params: ``gamma``, ``beta`` ``[d_model]``. Shapes: ``[..., d_model] -> [..., d_model]``.
    """

    gamma: Param
    beta: Param
    epsilon: float = 1e-5

    def forward(self, x: Tensor) -> Tensor:
        check_float("LayerNorm", x)
        d = self.gamma.shape[0]
        if x.rank == 0:
            raise ShapeError("LayerNorm: expected input of shape [..., d_model] (rank >= 1), got a rank-0 tensor.")
        check_dim("LayerNorm", x, -1, d, "[..., d_model]", "d_model")
        return M.layer_norm(x, self.gamma.val(), self.beta.val(), self.epsilon)[0]
