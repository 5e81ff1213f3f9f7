"""``GradientClippingConfig``: clip each parameter's gradient by value or by L2 norm (Burn's ``GradientClipping``)."""

from __future__ import annotations

from typing import Literal

from .._errors import ConfigError
from ..config import config
from ..tensor import Tensor

__all__ = ["GradientClippingConfig"]


@config
class GradientClippingConfig:
    """Gradient clipping, applied to each parameter's gradient before the optimizer's update (as Burn).

    Build it with :meth:`value` or :meth:`norm` and set it on any optimizer config::

        AdamConfig().with_grad_clipping(GradientClippingConfig.norm(1.0))

    - ``value(v)``: every element is clamped to ``[-v, v]`` (PyTorch's ``clip_grad_value_``).
    - ``norm(n)``: a gradient whose L2 norm exceeds ``n`` is rescaled to norm ``n``:
      ``g * min(1, n / (||g||_2 + tiny))`` with ``tiny`` the float32 smallest normal (Burn). The norm is taken
      **per parameter tensor**, as Burn does; PyTorch's ``clip_grad_norm_`` uses one norm over all parameters
      (equal when applied to a single tensor).

    Args:
        mode: ``"value"`` or ``"norm"``.
        threshold: the clip value or the maximal norm (> 0).
    """

    mode: Literal["value", "norm"]
    threshold: float

    def __post_init__(self) -> None:
        if not self.threshold > 0.0:
            raise ConfigError(
                f"GradientClippingConfig.threshold: expected a value > 0, got {self.threshold} (mode {self.mode!r})."
            )

    @classmethod
    def value(cls, threshold: float) -> GradientClippingConfig:
        """Clip every gradient element to ``[-threshold, threshold]`` (Burn's ``Value``)."""
        return cls("value", threshold)

    @classmethod
    def norm(cls, max_norm: float) -> GradientClippingConfig:
        """Rescale each parameter's gradient to an L2 norm of at most ``max_norm`` (Burn's ``Norm``)."""
        return cls("norm", max_norm)

    def clip(self, grad: Tensor) -> Tensor:
        """The clipped gradient (same shape ``[...]`` and dtype), written with tensor ops (no host sync)."""
        t = self.threshold
        if self.mode == "value":
            return grad.clamp(-t, t)
        norm = grad.square().sum().sqrt()  # [1]
        coef = norm.add_scalar(_TINY).recip().mul_scalar(t).clamp_max(1.0)
        return grad.mul(coef if grad.shape else coef.reshape(()))  # a rank-0 gradient stays rank 0


#: float32's smallest positive normal number, Burn's ``min_positive`` guard against a zero norm
_TINY = 1.1754943508222875e-38
