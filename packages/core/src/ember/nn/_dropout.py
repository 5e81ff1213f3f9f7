"""``Dropout`` (Burn's ``nn::Dropout``; Srivastava et al. 2014)."""

from __future__ import annotations

from collections.abc import Sequence

from .._distribution import Distribution
from ..backend._device import Device
from ..config import config
from ..module import Module, ad_enabled
from ..tensor import Tensor
from ._checks import check_float, config_error

__all__ = ["DropoutConfig", "Dropout"]


@config
class DropoutConfig:
    """Configuration of :class:`Dropout` (Burn's ``DropoutConfig``).

    Args:
        prob: the probability of zeroing an element, in ``[0, 1]``.
    """

    prob: float

    def init(self, device: Device | None = None) -> Dropout:
        """A new :class:`Dropout` (it has no tensors; ``device`` is accepted for symmetry).

        Raises:
            ConfigError: ``prob`` outside ``[0, 1]``.
        """
        if not 0.0 <= self.prob <= 1.0:
            raise config_error("DropoutConfig", f"prob must be in [0, 1], got {self.prob}.")
        return Dropout(prob=self.prob)


class Dropout(Module):
    """Zeroes each element with probability ``prob`` and scales the others by ``1 / (1 - prob)``
    (inverted dropout, so the expected value is unchanged; Burn, PyTorch).

    Active only when the input is on an autodiff backend (training), as in Burn: after
    ``model.valid()`` (the inner backend) it is the identity. ``prob = 1`` gives zeros.
    The mask is a Bernoulli draw of the backend generator (``backend.seed(n)`` makes it reproducible).

    Shapes: any -> same.
    """

    prob: float = 0.5

    def forward(self, x: Tensor) -> Tensor:
        check_float("Dropout", x)
        m = self.multiplier(x)
        return x if m is None else x * m

    def multiplier(self, like: Tensor, shape: Sequence[int] | None = None) -> Tensor | None:
        """The factor :meth:`forward` multiplies by: ``keep / (1 - prob)``, ``keep`` a Bernoulli draw of shape
        ``shape`` (default ``like``'s) on ``like``'s device; zeros when ``prob >= 1``; ``None`` when dropout is
        inactive (``prob = 0``, or ``like`` not on an autodiff backend). For layers that apply dropout inside a
        fused primitive (:class:`~ember.nn.MultiHeadAttention`): the same draw as :meth:`forward`'s."""
        p = self.prob
        if p == 0.0 or not ad_enabled(like):
            return None
        dims = list(like.shape if shape is None else shape)
        if p >= 1.0:
            return Tensor.zeros(dims, like.device)
        keep = Tensor.random(dims, Distribution.bernoulli(1.0 - p), like.device)
        return keep * (1.0 / (1.0 - p))
