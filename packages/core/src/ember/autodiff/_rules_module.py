"""Backward rules of the module ops (convolution, pooling, embedding, interpolation).

Each gradient is one call of a backward primitive of the contract
(:class:`ember.backend._ops_module.ModuleOps`) on the inner backend, which a backend may run as
a native kernel:

- ``conv{2,3}d``: the input, weight and bias gradients in one call of ``conv*d_backward`` with a mask of
  the tracked inputs (one native kernel on torch, ``aten.convolution_backward``; by default
  ``conv*_backward_input``, ``conv*_backward_weight`` and the sum of the output gradient over batch and
  space);
- ``conv_transpose{2,3}d`` (the adjoint of the convolution sharing its weight): input gradient
  ``conv*d(g, w)``, weight gradient ``conv*_backward_weight(g, x)``;
- ``max_pool2d_with_indices``: ``max_pool2d_backward`` at the saved indices (a pattern of its own,
  since the op returns ``(values, indices)``);
- ``avg_pool2d``, ``adaptive_avg_pool2d``, ``interpolate``, ``embedding``: their ``*_backward``.

The 1-D ops, ``max_pool2d``, ``unfold4d`` and the backward primitives themselves are composites
of these under ``Autodiff`` (:data:`MODULE_COMPOSITE`). Index arguments are constants.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..backend._ops_module import ModuleOps
from . import _record
from ._graph import AutodiffPrimitive as AP
from ._graph import Node
from ._table import Spec, _register, general, unary

__all__ = ["MODULE_COMPOSITE"]

#: module ops Autodiff runs as the contract's composite default (differentiable through the rules)
MODULE_COMPOSITE: frozenset[str] = frozenset({
    "conv1d", "conv_transpose1d", "unfold4d", "max_pool1d", "max_pool1d_with_indices", "max_pool2d",
    "avg_pool1d", "adaptive_avg_pool1d",
    "conv2d_backward", "conv3d_backward", "conv2d_backward_input", "conv2d_backward_weight", "conv3d_backward_input",
    "conv3d_backward_weight",
    "max_pool2d_backward", "avg_pool2d_backward", "adaptive_avg_pool2d_backward", "embedding_backward",
    "interpolate_backward",
})


def _conv_rule(backward: str) -> Callable[..., Any]:
    def bw(B: Any, g: Any, args: Any, y: Any, needs: Any) -> Any:
        x, w, _, stride, padding, dilation, groups = args
        return getattr(B, backward)(g, x, w, stride, padding, dilation, groups, (needs[0], needs[1], needs[2]))

    return bw


def _conv_transpose_rule(conv: str, back_weight: str) -> Callable[..., Any]:
    def bw(B: Any, g: Any, args: Any, y: Any, needs: Any) -> Any:
        x, w, _, stride, padding, _out_pad, dilation, groups = args
        gx = None
        if needs[0]:
            gx = getattr(B, conv)(g, w, None, stride, padding, dilation, groups)
            xs, gs = B.shape(x), B.shape(gx)
            if gs != xs:  # padding_out below the dilation: the convolution sees extra trailing outputs
                gx = B.slice(gx, tuple(slice(0, n, 1) for n in xs))
        gw = getattr(B, back_weight)(g, x, B.shape(w), stride, padding, dilation, groups) if needs[1] else None
        gb = ModuleOps._bias_grad(B, g) if needs[2] else None
        return gx, gw, gb

    return bw


general("conv2d", diff=(0, 1, 2), keep=True)(_conv_rule("conv2d_backward"))
general("conv3d", diff=(0, 1, 2), keep=True)(_conv_rule("conv3d_backward"))
general("conv_transpose2d", diff=(0, 1, 2), keep=True)(_conv_transpose_rule("conv2d", "conv2d_backward_weight"))
general("conv_transpose3d", diff=(0, 1, 2), keep=True)(_conv_transpose_rule("conv3d", "conv3d_backward_weight"))


@unary("avg_pool2d", save="s")
def _avg_pool2d(B: Any, g: Any, s: Any, y: Any, args: Any) -> Any:
    return B.avg_pool2d_backward(g, s, *args)


@unary("adaptive_avg_pool2d", save="s")
def _adaptive_avg_pool2d(B: Any, g: Any, s: Any, y: Any, args: Any) -> Any:
    return B.adaptive_avg_pool2d_backward(g, s)


@unary("interpolate", save="s")
def _interpolate(B: Any, g: Any, s: Any, y: Any, args: Any) -> Any:
    return B.interpolate_backward(g, s, *args)


@unary("embedding", save="s")
def _embedding(B: Any, g: Any, s: Any, y: Any, args: Any) -> Any:
    return B.embedding_backward(g, args[0], s)


# ---------------------------------------------------------------------------- max pooling
def _max_pool_back(B: Any, g: Any, s: Any, ps: Any) -> Any:
    shape, idx, args = s
    return (B.max_pool2d_backward(g, idx, shape, *args),)


def _with_indices(I: Any, fwd: Callable[..., Any], spec: Spec) -> Callable[..., Any]:  # noqa: E741
    """Recording op of ``max_pool2d_with_indices``: ``(values, indices)``; the node keeps the input
    shape and the indices, the gradient goes back through ``max_pool2d_backward``."""
    shape = I.shape

    def op(a: Any, *args: Any) -> Any:
        try:
            n = a.node
        except AttributeError:
            return fwd(a, *args)
        x = a.p
        v, idx = fwd(x, *args)
        if n is None:
            return AP(v, None), idx
        return AP(v, Node((n,), _max_pool_back, (shape(x), idx, args))), idx

    return op


_record._FACTORIES.setdefault("pool_indices", _with_indices)
_register(Spec("max_pool2d_with_indices", "pool_indices", None))
