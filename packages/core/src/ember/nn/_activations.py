"""Activation layers (Burn's ``nn`` activation modules; PyTorch's names and defaults where Burn
has none). Each wraps a function of :mod:`ember.tensor.activation`; only :class:`PRelu` has
parameters. Shapes: any -> same (``Glu`` halves ``dim``). Errors: a non-Float input raises
:class:`~ember.KindError` naming the function.

Layers without options are built directly (``Relu()``); the others also have a ``...Config``
(``LeakyReluConfig(negative_slope=0.2).init()``).
"""

from __future__ import annotations

from ..backend._device import Device
from ..config import config
from ..module import Module, Param
from ..tensor import Tensor
from ..tensor import activation as A
from ._checks import config_error

__all__ = [
    "Relu", "LeakyRelu", "LeakyReluConfig", "PRelu", "PReluConfig", "Gelu", "GeluConfig", "Sigmoid", "Tanh",
    "Silu", "Swish", "Elu", "EluConfig", "Celu", "CeluConfig", "Selu", "Softplus", "SoftplusConfig", "Softsign",
    "HardSigmoid", "HardSigmoidConfig", "HardSwish", "Mish", "Glu", "GluConfig",
]


class Relu(Module):
    """``max(0, x)`` (Burn's ``Relu``)."""

    def forward(self, x: Tensor) -> Tensor:
        return A.relu(x)


class LeakyRelu(Module):
    """``x`` for ``x >= 0`` else ``negative_slope * x`` (Burn's ``LeakyRelu``; default slope 0.01)."""

    negative_slope: float = 0.01

    def forward(self, x: Tensor) -> Tensor:
        return A.leaky_relu(x, self.negative_slope)


@config
class LeakyReluConfig:
    """Configuration of :class:`LeakyRelu` (Burn's ``LeakyReluConfig``; ``negative_slope`` default 0.01)."""

    negative_slope: float = 0.01

    def init(self, device: Device | None = None) -> LeakyRelu:
        return LeakyRelu(negative_slope=self.negative_slope)


class PRelu(Module):
    """Parametric ReLU: ``x`` for ``x >= 0`` else ``alpha_c * x`` (He et al. 2015; Burn's ``PRelu``).

    Params: ``alpha`` ``[num_parameters]`` (1: shared, or one per channel, dim 1 of the input).
    """

    alpha: Param

    def forward(self, x: Tensor) -> Tensor:
        return A.prelu(x, self.alpha.val())


@config
class PReluConfig:
    """Configuration of :class:`PRelu` (Burn's ``PReluConfig``).

    Args:
        num_parameters: 1 (one slope shared by every channel) or the number of channels (default 1).
        alpha: the initial slope (default 0.25, Burn and PyTorch).
    """

    num_parameters: int = 1
    alpha: float = 0.25

    def init(self, device: Device) -> PRelu:
        """A new :class:`PRelu`. Raises ConfigError for ``num_parameters < 1``."""
        if self.num_parameters < 1:
            raise config_error("PReluConfig", f"num_parameters must be >= 1, got {self.num_parameters}.")
        return PRelu(alpha=Param(Tensor.full([self.num_parameters], self.alpha, device)))


class Gelu(Module):
    """GELU ``x * Phi(x)`` (Hendrycks & Gimpel 2016; Burn's ``Gelu``); ``approximate=True`` uses the
    tanh approximation (PyTorch ``approximate="tanh"``)."""

    approximate: bool = False

    def forward(self, x: Tensor) -> Tensor:
        return A.gelu(x, "tanh" if self.approximate else "none")


@config
class GeluConfig:
    """Configuration of :class:`Gelu` (``approximate`` default ``False``: the exact erf form)."""

    approximate: bool = False

    def init(self, device: Device | None = None) -> Gelu:
        return Gelu(approximate=self.approximate)


class Sigmoid(Module):
    """``1 / (1 + exp(-x))`` (Burn's ``Sigmoid``)."""

    def forward(self, x: Tensor) -> Tensor:
        return A.sigmoid(x)


class Tanh(Module):
    """Hyperbolic tangent (Burn's ``Tanh``)."""

    def forward(self, x: Tensor) -> Tensor:
        return A.tanh(x)


class Silu(Module):
    """``x * sigmoid(x)`` (SiLU, also called Swish; Elfwing et al. 2017; PyTorch ``nn.SiLU``)."""

    def forward(self, x: Tensor) -> Tensor:
        return A.silu(x)


#: Alias of :class:`Silu` (Ramachandran et al. 2017 call it Swish).
Swish = Silu
"""Another name of :class:`Silu` (``x * sigmoid(x)``; Ramachandran et al. 2017 call it Swish)."""


class Elu(Module):
    """``x`` for ``x > 0`` else ``alpha * (exp(x) - 1)`` (Clevert et al. 2015; PyTorch default ``alpha=1``)."""

    alpha: float = 1.0

    def forward(self, x: Tensor) -> Tensor:
        return A.elu(x, self.alpha)


@config
class EluConfig:
    """Configuration of :class:`Elu` (``alpha`` default 1.0)."""

    alpha: float = 1.0

    def init(self, device: Device | None = None) -> Elu:
        return Elu(alpha=self.alpha)


class Celu(Module):
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))`` (Barron 2017; PyTorch default ``alpha=1``)."""

    alpha: float = 1.0

    def forward(self, x: Tensor) -> Tensor:
        return A.celu(x, self.alpha)


@config
class CeluConfig:
    """Configuration of :class:`Celu` (``alpha`` default 1.0, must be non-zero)."""

    alpha: float = 1.0

    def init(self, device: Device | None = None) -> Celu:
        """Raises ConfigError for ``alpha == 0``."""
        if self.alpha == 0.0:
            raise config_error("CeluConfig", "alpha must be non-zero (it divides x).")
        return Celu(alpha=self.alpha)


class Selu(Module):
    """Scaled ELU with the constants of Klambauer et al. 2017 (Burn, PyTorch)."""

    def forward(self, x: Tensor) -> Tensor:
        return A.selu(x)


class Softplus(Module):
    """``log(1 + exp(beta * x)) / beta`` (PyTorch default ``beta=1``)."""

    beta: float = 1.0

    def forward(self, x: Tensor) -> Tensor:
        return A.softplus(x, self.beta)


@config
class SoftplusConfig:
    """Configuration of :class:`Softplus` (``beta`` default 1.0, must be non-zero)."""

    beta: float = 1.0

    def init(self, device: Device | None = None) -> Softplus:
        """Raises ConfigError for ``beta == 0``."""
        if self.beta == 0.0:
            raise config_error("SoftplusConfig", "beta must be non-zero (it divides the result).")
        return Softplus(beta=self.beta)


class Softsign(Module):
    """``x / (1 + |x|)`` (PyTorch ``nn.Softsign``)."""

    def forward(self, x: Tensor) -> Tensor:
        return A.softsign(x)


class HardSigmoid(Module):
    """``max(0, min(1, alpha * x + beta))`` (Burn's ``HardSigmoid``, defaults 0.2 and 0.5 as ONNX;
    PyTorch's ``nn.Hardsigmoid`` is ``alpha=1/6``)."""

    alpha: float = 0.2
    beta: float = 0.5

    def forward(self, x: Tensor) -> Tensor:
        return A.hard_sigmoid(x, self.alpha, self.beta)


@config
class HardSigmoidConfig:
    """Configuration of :class:`HardSigmoid` (Burn's ``HardSigmoidConfig``: ``alpha`` 0.2, ``beta`` 0.5)."""

    alpha: float = 0.2
    beta: float = 0.5

    def init(self, device: Device | None = None) -> HardSigmoid:
        return HardSigmoid(alpha=self.alpha, beta=self.beta)


class HardSwish(Module):
    """``x * relu6(x + 3) / 6`` (Howard et al. 2019; PyTorch ``nn.Hardswish``)."""

    def forward(self, x: Tensor) -> Tensor:
        return A.hard_swish(x)


class Mish(Module):
    """``x * tanh(softplus(x))`` (Misra 2019; PyTorch ``nn.Mish``)."""

    def forward(self, x: Tensor) -> Tensor:
        return A.mish(x)


class Glu(Module):
    """Gated linear unit ``a * sigmoid(b)`` over the halves of ``dim`` (Dauphin et al. 2016; Burn's
    ``Glu``; PyTorch default ``dim=-1``). Shapes: ``[..., 2n, ...] -> [..., n, ...]``."""

    dim: int = -1

    def forward(self, x: Tensor) -> Tensor:
        return A.glu(x, self.dim)


@config
class GluConfig:
    """Configuration of :class:`Glu` (Burn's ``GluConfig``; ``dim`` default -1)."""

    dim: int = -1

    def init(self, device: Device | None = None) -> Glu:
        return Glu(dim=self.dim)
