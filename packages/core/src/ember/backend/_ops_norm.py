"""Normalization primitives (issue 22): batch normalization in training mode, layer, group and RMS normalization,
forward and backward, so that a backend can run each as one native kernel (torch: ``torch.native_batch_norm``,
``torch.native_layer_norm``, ``torch.native_group_norm`` and their backwards) and ``Autodiff`` records one node
instead of a dozen.

The defaults are composites of the element-wise and reduction primitives. Formulas (Ioffe & Szegedy 2015; Ba et
al. 2016; the backward as PyTorch's ``native_*_backward``), with ``xhat = (x - mean) * invstd`` and ``M`` the
number of elements each statistic is taken over::

    forward:   y = xhat * gamma + beta,  invstd = 1 / sqrt(var + epsilon)  (biased variance)
    backward:  grad_beta = sum(g),  grad_gamma = sum(g * xhat)
               grad_x = invstd * (g gamma - mean(g gamma) - xhat * mean(g gamma xhat))

the sums and means over the normalized elements: every dim but 1 for batch norm (per channel), the last dim for
layer norm (per row; ``grad_gamma``/``grad_beta`` then sum over the leading dims), each group of channels and the
spatial dims for group norm (Wu & He 2018; ``grad_gamma``/``grad_beta`` per channel). RMS normalization (Zhang &
Sennrich 2019) has no mean: ``xhat = x * rstd``, ``rstd = 1 / sqrt(mean(x^2) + epsilon)``, ``y = xhat * gamma`` and
``grad_x = rstd * (g gamma - xhat * mean(g gamma xhat))``.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["NormOps"]


def _channels(B: Any, x: Any) -> tuple[tuple[int, ...], tuple[int, int, int]]:
    """``x``'s shape and the ``[N, C, S]`` it is viewed as for per-channel statistics."""
    shape = B.shape(x)
    return shape, (shape[0], shape[1], math.prod(shape[2:]))


def _per_channel_sum(B: Any, a3: Any) -> Any:
    """``[N, C, S]`` summed to ``[1, C, 1]``."""
    return B.sum_dim(B.sum_dim(a3, 2), 0)


def _row_sum(B: Any, a: Any, d: int) -> Any:
    """``[..., d]`` summed over the leading dims to ``[d]``."""
    return B.reshape(B.sum_dim(B.reshape(a, (math.prod(B.shape(a)[:-1]), d)), 0), (d,))


def _standardize(B: Any, x: Any, dim: int, epsilon: float) -> tuple[Any, Any, Any]:
    """``(x - mean, mean, rstd)`` over ``dim`` (kept), with the biased variance."""
    mean = B.mean_dim(x, dim)
    centered = B.sub(x, mean)
    return centered, mean, B.recip(B.sqrt(B.add(B.mean_dim(B.square(centered), dim), epsilon)))


def _standardized_grad(B: Any, gxhat: Any, xhat: Any, rstd: Any, dim: int, centered: bool = True) -> Any:
    """``rstd * (gxhat - mean(gxhat) - xhat * mean(gxhat * xhat))`` over ``dim``, the gradient of ``x`` given that of
    ``xhat`` (without the ``mean(gxhat)`` term when the forward subtracted no mean: RMS norm)."""
    inner = B.sub(gxhat, B.mul(xhat, B.mean_dim(B.mul(gxhat, xhat), dim)))
    if centered:
        inner = B.sub(inner, B.mean_dim(gxhat, dim))
    return B.mul(inner, rstd)


class NormOps:
    """Normalization primitives; see the module docstring for the formulas.

    The defaults call primitives of the other op groups through ``B = self`` typed ``Any`` (the mixin only ever
    runs as part of a :class:`~ember.backend.Backend`).
    """

    def batch_norm(self, x: Any, gamma: Any, beta: Any, epsilon: float) -> tuple[Any, Any, Any]:
        """Batch normalization with the batch's statistics (training mode).

        Args:
            x: ``[batch, channels, *spatial]`` (rank >= 2). gamma, beta: ``[channels]``.
            epsilon: added to the biased variance.

        Returns:
            ``(y, mean, invstd)``: ``y`` like ``x``; ``mean`` and ``invstd = 1 / sqrt(var + epsilon)`` ``[channels]``
            (the biased variance is ``invstd^-2 - epsilon``).
        """
        B: Any = self
        shape, (n, c, s) = _channels(B, x)
        x3 = B.reshape(x, (n, c, s))
        count = float(n * s)
        mean = B.div(_per_channel_sum(B, x3), count)
        centered = B.sub(x3, mean)
        var = B.div(_per_channel_sum(B, B.square(centered)), count)
        invstd = B.recip(B.sqrt(B.add(var, epsilon)))
        y = B.add(B.mul(B.mul(centered, invstd), B.reshape(gamma, (1, c, 1))), B.reshape(beta, (1, c, 1)))
        return B.reshape(y, shape), B.reshape(mean, (c,)), B.reshape(invstd, (c,))

    def batch_norm_backward(self, grad: Any, x: Any, gamma: Any, mean: Any, invstd: Any,
                            epsilon: float) -> tuple[Any, Any, Any]:
        """Gradients of :meth:`batch_norm`'s ``y`` with respect to ``(x, gamma, beta)``.

        Args:
            grad: the gradient of ``y``, shaped like ``x``. mean, invstd: what :meth:`batch_norm` returned.
            epsilon: the forward's (a native kernel may want it).

        Returns:
            ``(grad_x like x, grad_gamma [channels], grad_beta [channels])``.
        """
        B: Any = self
        shape, (n, c, s) = _channels(B, x)
        g3, x3 = B.reshape(grad, (n, c, s)), B.reshape(x, (n, c, s))
        inv = B.reshape(invstd, (1, c, 1))
        xhat = B.mul(B.sub(x3, B.reshape(mean, (1, c, 1))), inv)
        gbeta = _per_channel_sum(B, g3)
        ggamma = _per_channel_sum(B, B.mul(g3, xhat))
        count = float(n * s)
        gam = B.reshape(gamma, (1, c, 1))
        inner = B.sub(B.sub(g3, B.div(gbeta, count)), B.mul(xhat, B.div(ggamma, count)))
        gx = B.mul(inner, B.mul(gam, inv))
        return B.reshape(gx, shape), B.reshape(ggamma, (c,)), B.reshape(gbeta, (c,))

    def batch_norm_running(self, running_mean: Any, running_var: Any, mean: Any, invstd: Any, momentum: float,
                           epsilon: float) -> tuple[Any, Any]:
        """The running statistics of batch normalization after one training batch (Burn's ``BatchNorm``; PyTorch's
        momentum convention)::

            running_mean' = (1 - momentum) * running_mean + momentum * mean
            running_var'  = (1 - momentum) * running_var  + momentum * (invstd^-2 - epsilon)

        ``invstd^-2 - epsilon`` is the batch's biased variance (as Burn; PyTorch keeps the unbiased one).

        Args:
            running_mean: ``[channels]``, the statistic so far (not written).
            running_var: ``[channels]``, the statistic so far (not written).
            mean: ``[channels]``, what :meth:`batch_norm` returned for the batch (same dtype and device).
            invstd: ``[channels]``, what :meth:`batch_norm` returned for the batch (same dtype and device).
            momentum: the weight of the batch, in ``[0, 1]``. epsilon: the ``epsilon`` given to :meth:`batch_norm`.

        Returns:
            ``(running_mean', running_var')``, new ``[channels]`` tensors. Not differentiable: ``Autodiff`` returns
            them untracked. The default is nine element-wise primitives; a backend may fuse them (torch: three
            kernels, one ``_foreach_lerp``).
        """
        B: Any = self
        keep = 1.0 - momentum
        var = B.sub(B.recip(B.square(invstd)), epsilon)
        new_mean = B.add(B.mul(running_mean, keep), B.mul(mean, momentum))
        return new_mean, B.add(B.mul(running_var, keep), B.mul(var, momentum))

    def layer_norm(self, x: Any, gamma: Any, beta: Any, epsilon: float) -> tuple[Any, Any, Any]:
        """Layer normalization over the last dim.

        Args:
            x: ``[..., d]`` (rank >= 1). gamma, beta: ``[d]``. epsilon: added to the biased variance.

        Returns:
            ``(y, mean, rstd)``: ``y`` like ``x``; ``mean`` and ``rstd = 1 / sqrt(var + epsilon)`` ``[..., 1]``.
        """
        B: Any = self
        centered, mean, rstd = _standardize(B, x, len(B.shape(x)) - 1, epsilon)
        return B.add(B.mul(B.mul(centered, rstd), gamma), beta), mean, rstd

    def layer_norm_backward(self, grad: Any, x: Any, gamma: Any, mean: Any, rstd: Any,
                            epsilon: float) -> tuple[Any, Any, Any]:
        """Gradients of :meth:`layer_norm`'s ``y`` with respect to ``(x, gamma, beta)``.

        Returns:
            ``(grad_x like x, grad_gamma [d], grad_beta [d])``.
        """
        B: Any = self
        shape = B.shape(x)
        xhat = B.mul(B.sub(x, mean), rstd)
        d = shape[-1]
        gx = _standardized_grad(B, B.mul(grad, gamma), xhat, rstd, len(shape) - 1)
        return gx, _row_sum(B, B.mul(grad, xhat), d), _row_sum(B, grad, d)

    def group_norm(self, x: Any, gamma: Any, beta: Any, num_groups: int,
                   epsilon: float) -> tuple[Any, Any, Any]:
        """Group normalization: each sample's channels split into ``num_groups`` groups, each group normalized over
        its channels and the spatial dims (biased variance), then a per-channel affine.

        Args:
            x: ``[batch, channels, *spatial]`` (rank >= 2), ``channels`` divisible by ``num_groups``.
            gamma: ``[channels]``.
            beta: ``[channels]``. epsilon: added to the biased variance.

        Returns:
            ``(y, mean, rstd)``: ``y`` like ``x``; ``mean`` and ``rstd = 1 / sqrt(var + epsilon)``
            ``[batch, num_groups]`` (as ``torch.native_group_norm``).
        """
        B: Any = self
        shape, (n, c, s) = _channels(B, x)
        grouped = (n, num_groups, c // num_groups * s)
        centered, mean, rstd = _standardize(B, B.reshape(x, grouped), 2, epsilon)
        xhat = B.reshape(B.mul(centered, rstd), (n, c, s))
        y = B.add(B.mul(xhat, B.reshape(gamma, (1, c, 1))), B.reshape(beta, (1, c, 1)))
        return B.reshape(y, shape), B.reshape(mean, (n, num_groups)), B.reshape(rstd, (n, num_groups))

    def group_norm_backward(self, grad: Any, x: Any, gamma: Any, mean: Any, rstd: Any, num_groups: int,
                            epsilon: float) -> tuple[Any, Any, Any]:
        """Gradients of :meth:`group_norm`'s ``y`` with respect to ``(x, gamma, beta)``.

        Args:
            grad: the gradient of ``y``, shaped like ``x``. mean, rstd: what :meth:`group_norm` returned.
            num_groups: the forward's.
            epsilon: the forward's.

        Returns:
            ``(grad_x like x, grad_gamma [channels], grad_beta [channels])``.
        """
        B: Any = self
        shape, (n, c, s) = _channels(B, x)
        grouped, stat = (n, num_groups, c // num_groups * s), (n, num_groups, 1)
        rstd3 = B.reshape(rstd, stat)
        xhat = B.mul(B.sub(B.reshape(x, grouped), B.reshape(mean, stat)), rstd3)
        g3 = B.reshape(grad, (n, c, s))
        ggamma = _per_channel_sum(B, B.mul(g3, B.reshape(xhat, (n, c, s))))
        gxhat = B.reshape(B.mul(g3, B.reshape(gamma, (1, c, 1))), grouped)
        gx = _standardized_grad(B, gxhat, xhat, rstd3, 2)
        return B.reshape(gx, shape), B.reshape(ggamma, (c,)), B.reshape(_per_channel_sum(B, g3), (c,))

    def rms_norm(self, x: Any, gamma: Any, epsilon: float) -> tuple[Any, Any]:
        """RMS normalization over the last dim: ``y = x * rstd * gamma``, ``rstd = 1 / sqrt(mean(x^2) + epsilon)``.

        Args:
            x: ``[..., d]`` (rank >= 1). gamma: ``[d]``. epsilon: added to the mean square.

        Returns:
            ``(y like x, rstd [..., 1])``.
        """
        B: Any = self
        rstd = B.recip(B.sqrt(B.add(B.mean_dim(B.square(x), len(B.shape(x)) - 1), epsilon)))
        return B.mul(B.mul(x, rstd), gamma), rstd

    def rms_norm_backward(self, grad: Any, x: Any, gamma: Any, rstd: Any, epsilon: float) -> tuple[Any, Any]:
        """Gradients of :meth:`rms_norm`'s ``y`` with respect to ``(x, gamma)``.

        Returns:
            ``(grad_x like x, grad_gamma [d])``.
        """
        B: Any = self
        shape = B.shape(x)
        xhat = B.mul(x, rstd)
        gx = _standardized_grad(B, B.mul(grad, gamma), xhat, rstd, len(shape) - 1, centered=False)
        return gx, _row_sum(B, B.mul(grad, xhat), shape[-1])
