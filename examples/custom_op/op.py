"""``matmul_add_relu(lhs, rhs, bias) = relu(lhs @ rhs + bias)`` as an Ember custom op (the Burn Book's "Backend
Extension" / "Custom Kernel" example).

- the default, written with Ember tensor ops: every backend runs it (numpy uses it);
- a torch kernel (``addmm`` + ``relu``; a Triton kernel instead on CUDA tensors when Triton is installed,
  ``triton_kernel.py``) and a jax kernel (one ``jax.jit`` program);
- a backward rule in Ember tensor ops (any backend) and fused backward kernels for torch and jax.

``lhs`` is ``[m, k]``, ``rhs`` ``[k, n]``, ``bias`` ``[1, n]`` (broadcast over the rows, as in ``Linear``).
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np

from ember import Float, Tensor
from ember.extension import BackwardContext, custom_op
from ember.tensor.activation import relu


@custom_op("matmul_add_relu", inputs=(Float, Float, Float))
def matmul_add_relu(lhs: Tensor, rhs: Tensor, bias: Tensor) -> Tensor:
    """``relu(lhs @ rhs + bias)``: the default, composed of Ember tensor ops."""
    return relu(lhs.matmul(rhs).add(bias))


# ------------------------------------------------------------------ backward (any backend)
@matmul_add_relu.register_backward
def _backward(ctx: BackwardContext, grad: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    lhs, rhs, _ = ctx.inputs
    g = grad.mul(ctx.output.greater_elem(0.0).float())  # relu' from the saved output
    return g.matmul(rhs.transpose()), lhs.transpose().matmul(g), g.sum_dim(0)


# ------------------------------------------------------------------ torch
@matmul_add_relu.register_kernel("torch")
def _torch_forward(lhs: Any, rhs: Any, bias: Any) -> Any:
    if lhs.is_cuda:
        from .triton_kernel import TRITON, triton_matmul_add_relu

        if TRITON:
            return triton_matmul_add_relu(lhs, rhs, bias)
    return bias.addmm(lhs, rhs).relu_()  # torch.addmm(bias, lhs, rhs): one GEMM with the bias, ReLU in place


@matmul_add_relu.register_backward_kernel("torch")
def _torch_backward(inputs: tuple[Any, ...], out: Any, grad: Any) -> tuple[Any, Any, Any]:
    lhs, rhs, _ = inputs
    g = grad.mul(out > 0)  # relu' from the saved output
    return g.mm(rhs.T), lhs.T.mm(g), g.sum(0, keepdim=True)


# ------------------------------------------------------------------ jax
@cache
def _jax_programs() -> tuple[Any, Any]:
    import jax
    import jax.numpy as jnp

    @jax.jit
    def forward(lhs: Any, rhs: Any, bias: Any) -> Any:
        return jax.nn.relu(lhs @ rhs + bias)

    @jax.jit
    def backward(lhs: Any, rhs: Any, out: Any, grad: Any) -> tuple[Any, Any, Any]:
        g = jnp.where(out > 0, grad, 0)
        return g @ rhs.T, lhs.T @ g, g.sum(0, keepdims=True)

    return forward, backward


@matmul_add_relu.register_kernel("jax")
def _jax_forward(lhs: Any, rhs: Any, bias: Any) -> Any:
    return _jax_programs()[0](lhs, rhs, bias)  # traceable: inside ember_jax.jit it inlines into the step


@matmul_add_relu.register_backward_kernel("jax")
def _jax_backward(inputs: tuple[Any, ...], out: Any, grad: Any) -> Any:
    lhs, rhs, _ = inputs
    return _jax_programs()[1](lhs, rhs, out, grad)


# ------------------------------------------------------------------ reference
def reference(lhs: np.ndarray, rhs: np.ndarray, bias: np.ndarray, grad: np.ndarray) -> tuple[np.ndarray, ...]:
    """numpy float64: ``(out, d lhs, d rhs, d bias)`` of ``sum(matmul_add_relu(lhs, rhs, bias) * grad)``."""
    lhs, rhs, bias, grad = (np.asarray(a, dtype=np.float64) for a in (lhs, rhs, bias, grad))
    z = lhs @ rhs + bias
    g = grad * (z > 0)
    return np.maximum(z, 0.0), g @ rhs.T, lhs.T @ g, g.sum(0, keepdims=True)
