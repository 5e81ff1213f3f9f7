"""``batch_norm``, ``layer_norm``, ``group_norm`` and ``rms_norm``: the normalization primitives as functions of
tensors (re-exported by :mod:`ember.tensor.functional`; used by :class:`~ember.nn.BatchNorm` in training,
:class:`~ember.nn.LayerNorm`, :class:`~ember.nn.GroupNorm`, :class:`~ember.nn.InstanceNorm` and
:class:`~ember.nn.RmsNorm`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._errors import DeviceError, KindError, ShapeError
from .._kind import Float
from ._core import wrap

if TYPE_CHECKING:
    from ._tensor import Tensor

__all__ = ["batch_norm", "batch_norm_running", "layer_norm", "group_norm", "rms_norm"]

_CHANNELS = "[batch, channels, ...]"


def _check(op: str, x: Tensor, params: dict[str, Tensor], epsilon: float, dim: int, layout: str,
           x_name: str = "x") -> None:
    for name, t in ((x_name, x), *params.items()):
        if t.kind is not Float:
            raise KindError(f"{op}: {name} must be a Float tensor, got {t.kind}; convert it with .float() first.")
        if t.device is not x.device:
            raise DeviceError(f"{op}: {name} lives on {t.device}, {x_name} on {x.device}; move it with .to_device().")
    n = x.shape[dim]
    for name, t in params.items():
        if t.shape != (n,):
            raise ShapeError(f"{op}: {name} must have shape [{n}] (dim {dim} of {x_name} {layout} = {list(x.shape)}), "
                             f"got {list(t.shape)}.")
    if not epsilon >= 0.0:
        raise ValueError(f"{op}: epsilon must be >= 0, got {epsilon}.")


def _check_channels(op: str, x: Tensor) -> None:
    if x.rank < 2:
        raise ShapeError(f"{op}: expected x of shape {_CHANNELS} (rank >= 2), got {list(x.shape)}.")


def _check_last(op: str, x: Tensor) -> None:
    if x.rank < 1:
        raise ShapeError(f"{op}: expected x of shape [..., d] (rank >= 1), got a rank-0 tensor.")


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
    _check_channels(op, x)
    _check(op, x, {"gamma": gamma, "beta": beta}, epsilon, 1, _CHANNELS)
    y, mean, invstd = x.ops.batch_norm(x.primitive, gamma.primitive, beta.primitive, float(epsilon))
    return wrap(y, x, Float), wrap(mean, x, Float), wrap(invstd, x, Float)


def batch_norm_running(running_mean: Tensor, running_var: Tensor, mean: Tensor, invstd: Tensor, momentum: float,
                       epsilon: float = 1e-5) -> tuple[Tensor, Tensor]:
    """The running statistics of batch normalization after one training batch, from the ``mean`` and ``invstd`` that
    :func:`batch_norm` returned (Burn's ``BatchNorm``; PyTorch's momentum convention):
    ``running_mean' = (1 - momentum) * running_mean + momentum * mean`` and
    ``running_var' = (1 - momentum) * running_var + momentum * (invstd^-2 - epsilon)``, the batch's biased variance.

    Args:
        running_mean: Float ``[channels]``, the running mean so far.
        running_var: Float ``[channels]``, the running (unbiased) variance so far.
        mean: Float ``[channels]``, the batch mean :func:`batch_norm` returned.
        invstd: Float ``[channels]``, the ``1 / sqrt(var + epsilon)`` :func:`batch_norm` returned (all four on one
            device).
        momentum: the weight of the batch, in ``[0, 1]``.
        epsilon: the one given to :func:`batch_norm` (1e-5).

    Returns:
        ``(running_mean', running_var')`` ``[channels]``, new tensors, never tracked by autodiff.

    Raises:
        KindError: a non-Float argument. ShapeError: a tensor that is not ``[channels]``. DeviceError: arguments on
        different devices. ValueError: a negative ``epsilon`` or ``momentum`` outside ``[0, 1]``.
    """
    op = "batch_norm_running"
    if running_mean.rank != 1:
        raise ShapeError(f"{op}: expected running_mean of shape [channels], got {list(running_mean.shape)}.")
    _check(op, running_mean, {"running_var": running_var, "mean": mean, "invstd": invstd}, epsilon, 0, "[channels]",
           "running_mean")
    if not 0.0 <= momentum <= 1.0:
        raise ValueError(f"{op}: momentum must be in [0, 1], got {momentum}.")
    rm, rv = running_mean.ops.batch_norm_running(running_mean.primitive, running_var.primitive, mean.primitive,
                                                 invstd.primitive, float(momentum), float(epsilon))
    return wrap(rm, running_mean, Float), wrap(rv, running_mean, Float)


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
    _check_last(op, x)
    _check(op, x, {"gamma": gamma, "beta": beta}, epsilon, x.rank - 1, "[..., d]")
    y, mean, rstd = x.ops.layer_norm(x.primitive, gamma.primitive, beta.primitive, float(epsilon))
    return wrap(y, x, Float), wrap(mean, x, Float), wrap(rstd, x, Float)


def group_norm(x: Tensor, gamma: Tensor, beta: Tensor, num_groups: int,
               epsilon: float = 1e-5) -> tuple[Tensor, Tensor, Tensor]:
    """Group normalization (Wu & He 2018, PyTorch's ``F.group_norm``): each sample's channels split into
    ``num_groups`` groups of consecutive channels, ``y = (x - mean) * rstd * gamma + beta`` with the mean and the
    biased variance of each group over its channels and the spatial dims, ``rstd = 1 / sqrt(var + epsilon)``.

    Args:
        x: Float ``[batch, channels, *spatial]`` (rank >= 2).
        gamma: ``[channels]`` scale (ones for no affine).
        beta: ``[channels]`` shift (zeros for no affine).
        num_groups: the number of groups; divides ``channels``.
        epsilon: added to the variance (1e-5).

    Returns:
        ``(y like x, mean [batch, num_groups], rstd [batch, num_groups])``; only ``y`` is differentiable.

    Raises:
        KindError: as :func:`batch_norm`.
        ShapeError: as :func:`batch_norm`.
        DeviceError: as :func:`batch_norm`.
        ValueError: as :func:`batch_norm`, and for a ``num_groups`` below 1 or not dividing ``channels``.
    """
    op = "group_norm"
    _check_channels(op, x)
    _check(op, x, {"gamma": gamma, "beta": beta}, epsilon, 1, _CHANNELS)
    if num_groups < 1 or x.shape[1] % num_groups:
        raise ValueError(f"{op}: num_groups must be >= 1 and divide the {x.shape[1]} channels, got {num_groups}.")
    y, mean, rstd = x.ops.group_norm(x.primitive, gamma.primitive, beta.primitive, int(num_groups), float(epsilon))
    return wrap(y, x, Float), wrap(mean, x, Float), wrap(rstd, x, Float)


def rms_norm(x: Tensor, gamma: Tensor, epsilon: float = 1e-5) -> tuple[Tensor, Tensor]:
    """RMS normalization over the last dim (Zhang & Sennrich 2019, PyTorch's ``F.rms_norm(x, [d])``):
    ``y = x * rstd * gamma``, ``rstd = 1 / sqrt(mean(x^2) + epsilon)``.

    Args:
        x: Float ``[..., d]`` (rank >= 1). gamma: ``[d]``. epsilon: added to the mean square (1e-5, Burn).

    Returns:
        ``(y like x, rstd [..., 1])``; only ``y`` is differentiable.

    Raises:
        KindError, ShapeError, DeviceError, ValueError: as :func:`layer_norm`.
    """
    op = "rms_norm"
    _check_last(op, x)
    _check(op, x, {"gamma": gamma}, epsilon, x.rank - 1, "[..., d]")
    y, rstd = x.ops.rms_norm(x.primitive, gamma.primitive, float(epsilon))
    return wrap(y, x, Float), wrap(rstd, x, Float)
