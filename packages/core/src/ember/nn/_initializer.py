"""Parameter initializers (Burn's ``burn::nn::Initializer``).

Each initializer is a small ``@config`` class (so a layer config that holds one saves and loads
as JSON; the ``kind`` field tags the variant):

==================  ============================================================================
``Constant(v)``     every element ``v``
``Ones()``          1
``Zeros()``         0
``Uniform(a, b)``   ``U(a, b)``
``Normal(m, s)``    ``N(m, s^2)``
``KaimingUniform``  ``U(-b, b)``, ``b = gain * sqrt(3 / fan)`` (He et al. 2015; Burn)
``KaimingNormal``   ``N(0, std^2)``, ``std = gain / sqrt(fan)``
``XavierUniform``   ``U(-b, b)``, ``b = gain * sqrt(6 / (fan_in + fan_out))`` (Glorot & Bengio 2010)
``XavierNormal``    ``N(0, std^2)``, ``std = gain * sqrt(2 / (fan_in + fan_out))``
``Orthogonal``      ``gain * Q`` from the QR decomposition of a normal matrix (Saxe et al. 2013;
                    PyTorch ``orthogonal_``): the tensor viewed as ``[shape[0], prod(shape[1:])]``
                    has orthonormal rows (or columns, whichever are fewer)
==================  ============================================================================

Kaiming uses ``fan = fan_in``, or ``fan_out`` when ``fan_out_only`` (Burn's rule). The fans are
given by the layer (``init_with(shape, fan_in, fan_out, device)``), as in Burn: a ``Linear``
weight ``[d_input, d_output]`` has ``fan_in = d_input`` and ``fan_out = d_output``; a convolution
weight ``[c_out, c_in / groups, *kernel]`` has ``fan_in = c_in / groups * prod(kernel)`` and
``fan_out = c_out / groups * prod(kernel)``. With Burn's Linear default ``KaimingUniform(gain=1 /
sqrt(3))`` the bound is ``1 / sqrt(fan_in)``, PyTorch's ``nn.Linear`` default.

Random draws use the backend generator (reproducible after ``backend.seed(n)``).

Example::

    w = KaimingUniform(gain=2 ** 0.5).init_with([784, 128], fan_in=784, fan_out=128, device=dev)
    p = Normal(0.0, 0.02).init_param([1000, 64], dev)          # a Param
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal, Union

import numpy as np

from .._distribution import Distribution
from ..backend._device import Device
from ..config import config
from ..module import Param
from ..tensor import Tensor

__all__ = [
    "Initializer",
    "AnyInitializer",
    "Constant",
    "Ones",
    "Zeros",
    "Uniform",
    "Normal",
    "KaimingUniform",
    "KaimingNormal",
    "XavierUniform",
    "XavierNormal",
    "Orthogonal",
]


class Initializer:
    """Base class of the initializers: ``init``, ``init_with``, ``init_param``, ``init_param_with``."""

    def init(self, shape: Sequence[int], device: Device) -> Tensor:
        """A Float tensor of ``shape`` on ``device`` (no fans: raises for Kaiming / Xavier)."""
        return self.init_with(shape, None, None, device)

    def init_with(self, shape: Sequence[int], fan_in: int | None, fan_out: int | None, device: Device) -> Tensor:
        """A Float tensor of ``shape``, using ``fan_in`` / ``fan_out`` where the formula needs them.

        Raises:
            ValueError: a fan the formula needs is missing or not positive.
        """
        raise NotImplementedError

    def init_param(self, shape: Sequence[int], device: Device) -> Param:
        """:meth:`init` as a trainable :class:`~ember.module.Param` (new id, ``require_grad``)."""
        return Param(self.init(shape, device))

    def init_param_with(
        self, shape: Sequence[int], fan_in: int | None, fan_out: int | None, device: Device
    ) -> Param:
        """:meth:`init_with` as a trainable :class:`~ember.module.Param`."""
        return Param(self.init_with(shape, fan_in, fan_out, device))


def _fan(name: str, fan: int | None, which: str) -> int:
    if fan is None or fan <= 0:
        raise ValueError(
            f"{name} needs {which} (got {fan!r}); use init_with(shape, fan_in, fan_out, device) - layers pass "
            "their fans (Burn's rule)."
        )
    return int(fan)


def _uniform(shape: Sequence[int], low: float, high: float, device: Device) -> Tensor:
    return Tensor.random(list(shape), Distribution.uniform(low, high), device)


def _normal(shape: Sequence[int], mean: float, std: float, device: Device) -> Tensor:
    return Tensor.random(list(shape), Distribution.normal(mean, std), device)


@config
class Constant(Initializer):
    """Every element equals ``value`` (Burn's ``Initializer::Constant``)."""

    value: float
    kind: Literal["Constant"] = "Constant"

    def init_with(self, shape: Sequence[int], fan_in: int | None, fan_out: int | None, device: Device) -> Tensor:
        return Tensor.full(list(shape), self.value, device)


@config
class Ones(Initializer):
    """Every element is 1 (Burn's ``Initializer::Ones``)."""

    kind: Literal["Ones"] = "Ones"

    def init_with(self, shape: Sequence[int], fan_in: int | None, fan_out: int | None, device: Device) -> Tensor:
        return Tensor.ones(list(shape), device)


@config
class Zeros(Initializer):
    """Every element is 0 (Burn's ``Initializer::Zeros``)."""

    kind: Literal["Zeros"] = "Zeros"

    def init_with(self, shape: Sequence[int], fan_in: int | None, fan_out: int | None, device: Device) -> Tensor:
        return Tensor.zeros(list(shape), device)


@config
class Uniform(Initializer):
    """Uniform on ``[min, max)`` (Burn's ``Initializer::Uniform``)."""

    min: float
    max: float
    kind: Literal["Uniform"] = "Uniform"

    def init_with(self, shape: Sequence[int], fan_in: int | None, fan_out: int | None, device: Device) -> Tensor:
        return _uniform(shape, self.min, self.max, device)


@config
class Normal(Initializer):
    """Normal with ``mean`` and standard deviation ``std`` (Burn's ``Initializer::Normal``)."""

    mean: float
    std: float
    kind: Literal["Normal"] = "Normal"

    def init_with(self, shape: Sequence[int], fan_in: int | None, fan_out: int | None, device: Device) -> Tensor:
        return _normal(shape, self.mean, self.std, device)


@config
class KaimingUniform(Initializer):
    """``U(-b, b)`` with ``b = gain * sqrt(3 / fan)``, ``fan = fan_out if fan_out_only else fan_in``
    (He et al. 2015, "Delving Deep into Rectifiers"; Burn's ``Initializer::KaimingUniform``).
    ``gain = sqrt(2)`` suits ReLU; Burn's layer default ``gain = 1 / sqrt(3)`` gives ``b = 1 / sqrt(fan_in)``."""

    gain: float
    fan_out_only: bool = False
    kind: Literal["KaimingUniform"] = "KaimingUniform"

    def init_with(self, shape: Sequence[int], fan_in: int | None, fan_out: int | None, device: Device) -> Tensor:
        fan = _fan("KaimingUniform", fan_out if self.fan_out_only else fan_in,
                   "fan_out" if self.fan_out_only else "fan_in")
        b = math.sqrt(3.0) * self.gain / math.sqrt(fan)
        return _uniform(shape, -b, b, device)


@config
class KaimingNormal(Initializer):
    """``N(0, std^2)`` with ``std = gain / sqrt(fan)`` (He et al. 2015; Burn's ``Initializer::KaimingNormal``)."""

    gain: float
    fan_out_only: bool = False
    kind: Literal["KaimingNormal"] = "KaimingNormal"

    def init_with(self, shape: Sequence[int], fan_in: int | None, fan_out: int | None, device: Device) -> Tensor:
        fan = _fan("KaimingNormal", fan_out if self.fan_out_only else fan_in,
                   "fan_out" if self.fan_out_only else "fan_in")
        return _normal(shape, 0.0, self.gain / math.sqrt(fan), device)


@config
class XavierUniform(Initializer):
    """``U(-b, b)`` with ``b = gain * sqrt(6 / (fan_in + fan_out))`` (Glorot & Bengio 2010; Burn)."""

    gain: float = 1.0
    kind: Literal["XavierUniform"] = "XavierUniform"

    def init_with(self, shape: Sequence[int], fan_in: int | None, fan_out: int | None, device: Device) -> Tensor:
        fi, fo = _fan("XavierUniform", fan_in, "fan_in"), _fan("XavierUniform", fan_out, "fan_out")
        b = self.gain * math.sqrt(6.0 / (fi + fo))
        return _uniform(shape, -b, b, device)


@config
class XavierNormal(Initializer):
    """``N(0, std^2)`` with ``std = gain * sqrt(2 / (fan_in + fan_out))`` (Glorot & Bengio 2010; Burn)."""

    gain: float = 1.0
    kind: Literal["XavierNormal"] = "XavierNormal"

    def init_with(self, shape: Sequence[int], fan_in: int | None, fan_out: int | None, device: Device) -> Tensor:
        fi, fo = _fan("XavierNormal", fan_in, "fan_in"), _fan("XavierNormal", fan_out, "fan_out")
        return _normal(shape, 0.0, self.gain * math.sqrt(2.0 / (fi + fo)), device)


@config
class Orthogonal(Initializer):
    """``gain * Q``: the tensor, viewed as ``[shape[0], prod(shape[1:])]``, has orthonormal rows (when
    ``rows <= cols``) or columns (Saxe et al. 2013; PyTorch ``nn.init.orthogonal_``; Burn's
    ``Initializer::Orthogonal``). ``Q`` comes from the QR decomposition of a standard normal matrix
    drawn with the backend generator, with the sign of ``diag(R)`` folded in (a uniform draw over
    orthogonal matrices). Needs rank >= 2.

    Raises:
        ValueError: a shape of rank < 2.
    """

    gain: float = 1.0
    kind: Literal["Orthogonal"] = "Orthogonal"

    def init_with(self, shape: Sequence[int], fan_in: int | None, fan_out: int | None, device: Device) -> Tensor:
        shape = list(shape)
        if len(shape) < 2:
            raise ValueError(f"Orthogonal needs a shape of rank >= 2, got {shape}.")
        rows = shape[0]
        cols = int(np.prod(shape[1:]))
        flat = _normal([max(rows, cols), min(rows, cols)], 0.0, 1.0, device).to_numpy().astype(np.float64)
        q, r = np.linalg.qr(flat)
        q = q * np.sign(np.where(np.diag(r) == 0, 1.0, np.diag(r)))
        if rows < cols:
            q = q.T
        return Tensor.from_data((self.gain * q).reshape(shape), device).float()


#: Any initializer (the type of the ``initializer`` fields of layer configs).
AnyInitializer = Union[  # noqa: UP007 - evaluated at run time by @config
    Constant, Ones, Zeros, Uniform, Normal, KaimingUniform, KaimingNormal, XavierUniform, XavierNormal, Orthogonal
]
