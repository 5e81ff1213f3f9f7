"""Module ops of the jax backend (Burn's ``ModuleOps``, see ``ember.backend._ops_module``).

- Convolutions are ``lax.conv_general_dilated`` in the NCHW / OIHW layouts (NCDHW / OIDHW in 3-D);
  their input and weight gradients are ``jax.vjp`` of the same call (the convolution is linear in
  each argument, so XLA keeps only the transposed convolution). float16/bfloat16 accumulate in
  float32.
- Pooling, adaptive pooling and interpolation compile the contract's own default (a loop over
  kernel taps, or two matrix products with constant matrices) into one kernel: the same
  semantics as every other backend (padding as ``-inf``, NaN wins, first maximum on ties,
  PyTorch's divisors), one dispatch per call.
- ``embedding`` is ``jnp.take`` on dim 0 (indices checked when concrete, as ``select``);
  its gradient a ``.at[].add``.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from jax import lax

from ember.backend.contract import ModuleOps

from ._kernel import HALF, kernel

__all__ = ["JaxModuleOps"]

Ints = tuple[int, ...]

_DIMS = {4: ("NCHW", "OIHW", "NCHW"), 5: ("NCDHW", "OIDHW", "NCDHW")}


def _conv(x: Any, w: Any, stride: Ints, padding: Ints, dilation: Ints, groups: int) -> Any:
    dt = x.dtype
    y = lax.conv_general_dilated(
        x, w, window_strides=stride, padding=[(p, p) for p in padding], rhs_dilation=dilation,
        dimension_numbers=_DIMS[x.ndim], feature_group_count=groups,
        preferred_element_type=jnp.float32 if dt in HALF else None,
    )
    return y.astype(dt)


@kernel(3, 4, 5, 6)
def _conv_forward(x: Any, w: Any, bias: Any, stride: Ints, padding: Ints, dilation: Ints, groups: int) -> Any:
    y = _conv(x, w, stride, padding, dilation, groups)
    if bias is not None:
        y = y + bias.reshape((1, -1) + (1,) * (y.ndim - 2)).astype(y.dtype)
    return y


def _fit(grad: Any, shape: Ints) -> Any:
    """``grad`` zero-padded (or cropped) at the end of each spatial dim to the convolution's output
    ``shape``. They differ when a transposed convolution's ``output_padding`` adds positions that
    the matching forward convolution of that size would see as extra outputs (``output_padding >=
    stride`` with a dilation): those outputs carry no gradient (the contract's default does the
    same by placing only the taps of ``grad``'s positions)."""
    if tuple(grad.shape) == tuple(shape):
        return grad
    cfg = [(0, 0, 0), (0, 0, 0)] + [(0, o - g, 0) for g, o in zip(grad.shape[2:], shape[2:])]
    return lax.pad(grad, jnp.zeros((), grad.dtype), cfg)


@kernel(2, 3, 4, 5, 6)
def _conv_backward_input(grad: Any, w: Any, x_shape: Ints, stride: Ints, padding: Ints, dilation: Ints,
                         groups: int) -> Any:
    x0 = jnp.zeros(x_shape, grad.dtype)
    y, vjp = jax.vjp(lambda x: _conv(x, w, stride, padding, dilation, groups), x0)
    return vjp(_fit(grad, y.shape))[0]


@kernel(2, 3, 4, 5, 6)
def _conv_backward_weight(x: Any, grad: Any, w_shape: Ints, stride: Ints, padding: Ints, dilation: Ints,
                          groups: int) -> Any:
    w0 = jnp.zeros(w_shape, grad.dtype)
    y, vjp = jax.vjp(lambda w: _conv(x, w, stride, padding, dilation, groups), w0)
    return vjp(_fit(grad, y.shape))[0]


@kernel()
def _embedding(weights: Any, indices: Any) -> Any:
    return jnp.take(weights, indices, axis=0)


@kernel(2)
def _embedding_backward(grad: Any, indices: Any, w_shape: Ints) -> Any:
    flat = indices.reshape(-1)
    g = grad.reshape((flat.shape[0], w_shape[1]))
    return jnp.zeros(w_shape, grad.dtype).at[flat].add(g)


def _compiled(name: str, static: tuple[int, ...]) -> Any:
    """The contract's default ``ModuleOps.<name>`` compiled as one kernel. Argument 0 (the backend
    instance) and the positions ``static`` (counted without it) are static."""
    default = getattr(ModuleOps, name)
    f = jax.jit(default, static_argnums=(0,) + tuple(i + 1 for i in static))

    def op(self: Any, *args: Any) -> Any:
        return f(self, *args)

    op.__name__ = name
    op.__doc__ = f"``{name}``: the contract's default compiled into one jax kernel."
    return op


class JaxModuleOps:
    # ---- convolution: lax.conv_general_dilated and its vjp
    @staticmethod
    def conv2d(x: Any, weight: Any, bias: Any, stride: Ints, padding: Ints, dilation: Ints, groups: int) -> Any:
        return _conv_forward(x, weight, bias, stride, padding, dilation, groups)

    @staticmethod
    def conv3d(x: Any, weight: Any, bias: Any, stride: Ints, padding: Ints, dilation: Ints, groups: int) -> Any:
        return _conv_forward(x, weight, bias, stride, padding, dilation, groups)

    @staticmethod
    def conv2d_backward_input(grad: Any, weight: Any, x_shape: Ints, stride: Ints, padding: Ints, dilation: Ints,
                              groups: int) -> Any:
        return _conv_backward_input(grad, weight, tuple(x_shape), stride, padding, dilation, groups)

    @staticmethod
    def conv3d_backward_input(grad: Any, weight: Any, x_shape: Ints, stride: Ints, padding: Ints, dilation: Ints,
                              groups: int) -> Any:
        return _conv_backward_input(grad, weight, tuple(x_shape), stride, padding, dilation, groups)

    @staticmethod
    def conv2d_backward_weight(x: Any, grad: Any, weight_shape: Ints, stride: Ints, padding: Ints, dilation: Ints,
                               groups: int) -> Any:
        return _conv_backward_weight(x, grad, tuple(weight_shape), stride, padding, dilation, groups)

    @staticmethod
    def conv3d_backward_weight(x: Any, grad: Any, weight_shape: Ints, stride: Ints, padding: Ints, dilation: Ints,
                               groups: int) -> Any:
        return _conv_backward_weight(x, grad, tuple(weight_shape), stride, padding, dilation, groups)

    # ---- pooling and resizing: the contract's defaults, compiled
    max_pool2d = _compiled("max_pool2d", (1, 2, 3, 4, 5))
    max_pool2d_with_indices = _compiled("max_pool2d_with_indices", (1, 2, 3, 4, 5))
    max_pool2d_backward = _compiled("max_pool2d_backward", (2,))
    avg_pool2d = _compiled("avg_pool2d", (1, 2, 3, 4, 5))
    avg_pool2d_backward = _compiled("avg_pool2d_backward", (1, 2, 3, 4, 5, 6))
    adaptive_avg_pool2d = _compiled("adaptive_avg_pool2d", (1,))
    adaptive_avg_pool2d_backward = _compiled("adaptive_avg_pool2d_backward", (1,))
    interpolate = _compiled("interpolate", (1, 2, 3))
    interpolate_backward = _compiled("interpolate_backward", (1, 2, 3, 4))

    # ---- embedding
    @staticmethod
    def embedding(weights: Any, indices: Any) -> Any:
        return _embedding(weights, indices)

    @staticmethod
    def embedding_backward(grad: Any, indices: Any, weights_shape: Ints) -> Any:
        return _embedding_backward(grad, indices, tuple(weights_shape))

