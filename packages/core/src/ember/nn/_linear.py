"""``Linear``: the affine layer ``y = x W + b`` (Burn's ``nn::Linear``)."""

from __future__ import annotations

import math

from .._errors import ShapeError
from ..backend._device import Device
from ..config import config
from ..module import Module, Param
from ..tensor import Tensor
from ._checks import check_dim, check_float, config_error
from ._initializer import AnyInitializer, KaimingUniform

__all__ = ["LinearConfig", "Linear"]


@config
class LinearConfig:
    """Configuration of :class:`Linear` (Burn's ``LinearConfig``).

    Args:
        d_input: input features.
        d_output: output features.
        bias: learn a bias (default ``True``).
        initializer: for weight and bias; default ``KaimingUniform(gain=1/sqrt(3), fan_out_only=False)``
            (Burn's default), i.e. ``U(-1/sqrt(d_input), 1/sqrt(d_input))`` as PyTorch's ``nn.Linear``.
    """

    d_input: int
    d_output: int
    bias: bool = True
    initializer: AnyInitializer = KaimingUniform(gain=1.0 / math.sqrt(3.0), fan_out_only=False)

    def init(self, device: Device) -> Linear:
        """A new :class:`Linear` on ``device``.

        Raises:
            ConfigError: a size below 1.
        """
        if self.d_input < 1 or self.d_output < 1:
            raise config_error("LinearConfig", f"d_input ({self.d_input}) and d_output ({self.d_output}) must be >= 1.")
        fi, fo = self.d_input, self.d_output
        weight = self.initializer.init_param_with([fi, fo], fi, fo, device)
        bias = self.initializer.init_param_with([fo], fi, fo, device) if self.bias else None
        return Linear(weight=weight, bias=bias)


class Linear(Module):
    """Applies ``y = x @ weight + bias`` to the last dim (Burn's ``Linear``).

    Layout (Burn's; the transpose of PyTorch's): ``weight`` ``[d_input, d_output]``, ``bias``
    ``[d_output]`` or ``None``. Importing a PyTorch ``nn.Linear`` means ``weight = W_torch.T``.

    Shapes: ``[..., d_input] -> [..., d_output]`` (any rank >= 1; leading dims are flattened into one
    matrix product).

    Raises (forward):
        KindError: a non-Float input. ShapeError: the last dim is not ``d_input``.
    """

    weight: Param
    bias: Param | None = None

    def forward(self, x: Tensor) -> Tensor:
        check_float("Linear", x)
        w = self.weight.val()
        d_in, d_out = w.shape
        shape = x.shape
        if x.rank == 0:
            raise ShapeError("Linear: expected input of shape [..., d_input] (rank >= 1), got a rank-0 tensor.")
        check_dim("Linear", x, -1, d_in, "[..., d_input]", "d_input")
        if x.rank == 2:
            y = x @ w
        else:
            y = (x.reshape([-1, d_in]) @ w).reshape([*shape[:-1], d_out])
        if self.bias is not None:
            y = y + self.bias.val()
        return y
