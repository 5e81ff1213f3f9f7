"""Normalization primitives (issue 22): batch normalization in training mode and layer normalization, forward
and backward, so that a backend can run each as one native kernel (torch: ``torch.native_batch_norm``,
``torch.native_layer_norm`` and their backwards) and ``Autodiff`` records one node instead of a dozen.

The defaults are composites of the element-wise and reduction primitives. Formulas (Ioffe & Szegedy 2015; Ba et
al. 2016; the backward as PyTorch's ``native_*_backward``), with ``xhat = (x - mean) * invstd`` and ``M`` the
number of elements each statistic is taken over::

    forward:   y = xhat * gamma + beta,  invstd = 1 / sqrt(var + epsilon)  (biased variance)
    backward:  grad_beta = sum(g),  grad_gamma = sum(g * xhat)
               grad_x = invstd * (g gamma - mean(g gamma) - xhat * mean(g gamma xhat))

the sums and means over the normalized elements: every dim but 1 for batch norm (per channel), the last dim for
layer norm (per row; ``grad_gamma``/``grad_beta`` then sum over the leading dims).
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

    def layer_norm(self, x: Any, gamma: Any, beta: Any, epsilon: float) -> tuple[Any, Any, Any]:
        """Layer normalization over the last dim.

        Args:
            x: ``[..., d]`` (rank >= 1). gamma, beta: ``[d]``. epsilon: added to the biased variance.

        Returns:
            ``(y, mean, rstd)``: ``y`` like ``x``; ``mean`` and ``rstd = 1 / sqrt(var + epsilon)`` ``[..., 1]``.
        """
        B: Any = self
        last = len(B.shape(x)) - 1
        mean = B.mean_dim(x, last)
        centered = B.sub(x, mean)
        rstd = B.recip(B.sqrt(B.add(B.mean_dim(B.square(centered), last), epsilon)))
        return B.add(B.mul(B.mul(centered, rstd), gamma), beta), mean, rstd

    def layer_norm_backward(self, grad: Any, x: Any, gamma: Any, mean: Any, rstd: Any,
                            epsilon: float) -> tuple[Any, Any, Any]:
        """Gradients of :meth:`layer_norm`'s ``y`` with respect to ``(x, gamma, beta)``.

        Returns:
            ``(grad_x like x, grad_gamma [d], grad_beta [d])``.
        """
        B: Any = self
        shape = B.shape(x)
        last, d = len(shape) - 1, shape[-1]
        xhat = B.mul(B.sub(x, mean), rstd)
        rows = math.prod(shape[:-1])
        gbeta = B.reshape(B.sum_dim(B.reshape(grad, (rows, d)), 0), (d,))
        ggamma = B.reshape(B.sum_dim(B.reshape(B.mul(grad, xhat), (rows, d)), 0), (d,))
        gxhat = B.mul(grad, gamma)
        inner = B.sub(B.sub(gxhat, B.mean_dim(gxhat, last)), B.mul(xhat, B.mean_dim(B.mul(gxhat, xhat), last)))
        return B.mul(inner, rstd), ggamma, gbeta
