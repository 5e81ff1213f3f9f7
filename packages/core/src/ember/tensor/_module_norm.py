"""``batch_norm`` and ``layer_norm``: the normalization primitives as functions of tensors (re-exported by
:mod:`ember.tensor.module`; used by :class:`~ember.nn.BatchNorm` in training and :class:`~ember.nn.LayerNorm`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._errors import DeviceError, KindError, ShapeError
from .._kind import Float
from ._core import wrap

if TYPE_CHECKING:
    from ._tensor import Tensor

__all__ = ["batch_norm", "layer_norm"]


def _check(op: str, x: Tensor, gamma: Tensor, beta: Tensor, epsilon: float, dim: int, layout: str) -> None:
    for name, t in (("x", x), ("gamma", gamma), ("beta", beta)):
        if t.kind is not Float:
            raise KindError(f"{op}: {name} must be a Float tensor, got {t.kind}; convert it with .float() first.")
        if t.device is not x.device:
            raise DeviceError(f"{op}: {name} lives on {t.device}, x on {x.device}; move it with .to_device().")
    n = x.shape[dim]
    for name, t in (("gamma", gamma), ("beta", beta)):
        if t.shape != (n,):
            raise ShapeError(f"{op}: {name} must have shape [{n}] (dim {dim} of x {layout} = {list(x.shape)}), got "
                             f"{list(t.shape)}.")
    if not epsilon >= 0.0:
        raise ValueError(f"{op}: epsilon must be >= 0, got {epsilon}.")


def batch_norm(x: Tensor, gamma: Tensor, beta: Tensor, epsilon: float = 1e-5) -> tuple[Tensor, Tensor, Tensor]:
    """Batch normalization with the batch's statistics (training mode; Ioffe & Szegedy 2015, PyTorch's
    ``F.batch_norm(training=True)``): ``y = (x - mean) * invstd * gamma + beta`` per channel (dim 1), the mean and
    the biased variance taken over every other dim, ``invstd = 1 / sqrt(var + epsilon)``.

    Args:
        x: Float ``[batch, channels, *spatial]`` (rank >= 2). gamma, beta: ``[channels]``.
        epsilon: added to the variance (PyTorch and Burn: 1e-5).

    Returns:
        ``(y like x, mean [channels], invstd [channels])``; only ``y`` is differentiable (the statistics are for
        running averages: the biased variance is ``invstd^-2 - epsilon``).

    Raises:
        KindError: a non-Float argument. ShapeError: ``x`` of rank < 2, ``gamma``/``beta`` not ``[channels]``.
        DeviceError: arguments on different devices. ValueError: a negative ``epsilon``.
    """
    op = "batch_norm"
    if x.rank < 2:
        raise ShapeError(f"{op}: expected x of shape [batch, channels, ...] (rank >= 2), got {list(x.shape)}.")
    _check(op, x, gamma, beta, epsilon, 1, "[batch, channels, ...]")
    y, mean, invstd = x.ops.batch_norm(x.primitive, gamma.primitive, beta.primitive, float(epsilon))
    return wrap(y, x, Float), wrap(mean, x, Float), wrap(invstd, x, Float)


def layer_norm(x: Tensor, gamma: Tensor, beta: Tensor, epsilon: float = 1e-5) -> tuple[Tensor, Tensor, Tensor]:
    """Layer normalization over the last dim (Ba et al. 2016, PyTorch's ``F.layer_norm(x, [d])``):
    ``y = (x - mean) * rstd * gamma + beta`` with the biased variance, ``rstd = 1 / sqrt(var + epsilon)``.

    Args:
        x: Float ``[..., d]`` (rank >= 1). gamma, beta: ``[d]``. epsilon: added to the variance (1e-5).

    Returns:
        ``(y like x, mean [..., 1], rstd [..., 1])``; only ``y`` is differentiable.

    Raises:
        KindError, ShapeError, DeviceError, ValueError: as :func:`batch_norm` (``x`` of rank 0).
    """
    op = "layer_norm"
    if x.rank < 1:
        raise ShapeError(f"{op}: expected x of shape [..., d] (rank >= 1), got a rank-0 tensor.")
    _check(op, x, gamma, beta, epsilon, x.rank - 1, "[..., d]")
    y, mean, rstd = x.ops.layer_norm(x.primitive, gamma.primitive, beta.primitive, float(epsilon))
    return wrap(y, x, Float), wrap(mean, x, Float), wrap(rstd, x, Float)
