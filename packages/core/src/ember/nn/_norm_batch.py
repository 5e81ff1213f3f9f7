"""``BatchNorm`` (Burn's ``nn::BatchNorm``; Ioffe & Szegedy 2015)."""

from __future__ import annotations

from ..backend._device import Device
from ..config import config
from ..module import Module, Param, RunningState, ad_enabled
from ..tensor import Tensor
from ..tensor import functional as M
from ._checks import check_dim, check_float, check_rank, config_error

__all__ = ["BatchNormConfig", "BatchNorm"]


@config
class BatchNormConfig:
    """Configuration of :class:`BatchNorm` (Burn's ``BatchNormConfig``).

    Args:
        num_features: channels (dim 1 of the input).
        epsilon: added to the variance (default ``1e-5``, Burn and PyTorch).
        momentum: weight of the new batch in the running statistics (default ``0.1``, Burn and PyTorch):
            ``running = (1 - momentum) * running + momentum * batch``.
    """

    num_features: int
    epsilon: float = 1e-5
    momentum: float = 0.1

    def init(self, device: Device) -> BatchNorm:
        """A new :class:`BatchNorm`: ``gamma`` ones, ``beta`` zeros, running mean zeros, running var ones.

        Raises:
            ConfigError: ``num_features < 1``, ``epsilon < 0`` or ``momentum`` outside ``[0, 1]``.
        """
        if self.num_features < 1 or self.epsilon < 0 or not 0.0 <= self.momentum <= 1.0:
            raise config_error("BatchNormConfig", f"need num_features >= 1, epsilon >= 0 and momentum in [0, 1], got "
                               f"{self.num_features}, {self.epsilon}, {self.momentum}.")
        c = self.num_features
        return BatchNorm(
            gamma=Param(Tensor.ones([c], device)),
            beta=Param(Tensor.zeros([c], device)),
            running_mean=RunningState(Tensor.zeros([c], device)),
            running_var=RunningState(Tensor.ones([c], device)),
            momentum=self.momentum,
            epsilon=self.epsilon,
        )


class BatchNorm(Module):
    """``y = (x - mean) / sqrt(var + epsilon) * gamma + beta`` per channel (dim 1), for inputs of any
    rank >= 2 (``[batch, channels]``, ``[batch, channels, length]``, ``[batch, channels, height,
    width]``, ...). One class covers PyTorch's ``BatchNorm1d/2d/3d``.

    - Training (the input is on an autodiff backend, Burn's rule): ``mean`` and the biased ``var``
      are the batch statistics over every dim but 1, and the running statistics are updated in place
      (``RunningState.update``): ``running = (1 - momentum) * running + momentum * batch``, one
      :func:`~ember.tensor.functional.batch_norm_running` call (a few fused kernels where the backend has them).
      As in Burn the running variance takes the *biased* batch variance (PyTorch stores the unbiased
      one, ``n / (n - 1)`` larger).
    - Inference (after ``model.valid()``, or on a plain backend): the running statistics are used.

    Params: ``gamma``, ``beta`` ``[channels]``; running states ``running_mean``, ``running_var``
    ``[channels]``.
    """

    gamma: Param
    beta: Param
    running_mean: RunningState
    running_var: RunningState
    momentum: float = 0.1
    epsilon: float = 1e-5

    def forward(self, x: Tensor) -> Tensor:
        layer = "BatchNorm"
        check_float(layer, x)
        layout = "[batch, channels, ...]"
        if x.rank < 2:
            check_rank(layer, x, 2, layout)
        c = self.gamma.shape[0]
        check_dim(layer, x, 1, c, layout, "channels")
        bshape = [1, c] + [1] * (x.rank - 2)
        if ad_enabled(x):  # one batch_norm primitive: a native kernel and one autodiff node where the backend has it
            y, mean, invstd = M.batch_norm(x, self.gamma.val(), self.beta.val(), self.epsilon)
            rm, rv = self.running_mean.value(), self.running_var.value()
            dev = rm.device
            if mean.device is not dev:
                mean, invstd = mean.to_device(dev), invstd.to_device(dev)
            if rv.device is not dev:
                rv = rv.to_device(dev)
            rm, rv = M.batch_norm_running(rm, rv, mean, invstd, self.momentum, self.epsilon)
            self.running_mean.update(rm)
            self.running_var.update(rv)
            return y
        mean = self.running_mean.value().to_device(x.device).reshape(bshape)
        var = self.running_var.value().to_device(x.device).reshape(bshape)
        y = (x - mean) / (var + self.epsilon).sqrt()
        return y * self.gamma.val().reshape(bshape) + self.beta.val().reshape(bshape)
