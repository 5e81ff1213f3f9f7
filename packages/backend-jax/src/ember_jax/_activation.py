"""Fused activation kernels of the jax backend (``jax.nn``'s numerically stable forms, one compiled
kernel each).

float16/bfloat16 inputs are computed in float32 and rounded back once (as the numpy backend does);
results keep the input dtype. Formulas: PyTorch's documentation of the functions of the same name.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from ._kernel import acc, kernel


@kernel()
def _relu(a: Any) -> Any:
    # jnp.maximum propagates NaN, as torch.relu does
    return jnp.maximum(a, 0).astype(a.dtype)


@kernel()
def _sigmoid(a: Any) -> Any:
    return jax.nn.sigmoid(a.astype(acc(a.dtype))).astype(a.dtype)


@kernel()
def _log_sigmoid(a: Any) -> Any:
    return jax.nn.log_sigmoid(a.astype(acc(a.dtype))).astype(a.dtype)


@kernel(1)
def _gelu(a: Any, approximate: bool) -> Any:
    # exact form: x/2 * erfc(-x/sqrt(2)), no cancellation for very negative x (jax.nn.gelu)
    return jax.nn.gelu(a.astype(acc(a.dtype)), approximate=approximate).astype(a.dtype)


@kernel(1)
def _softmax(a: Any, dim: int) -> Any:
    w = a.astype(acc(a.dtype))
    e = jnp.exp(w - jnp.max(w, axis=dim, keepdims=True))
    return (e / jnp.sum(e, axis=dim, keepdims=True)).astype(a.dtype)


@kernel(1)
def _log_softmax(a: Any, dim: int) -> Any:
    w = a.astype(acc(a.dtype))
    s = w - jnp.max(w, axis=dim, keepdims=True)
    return (s - jnp.log(jnp.sum(jnp.exp(s), axis=dim, keepdims=True))).astype(a.dtype)


class JaxActivationOps:
    relu = staticmethod(_relu)
    sigmoid = staticmethod(_sigmoid)
    log_sigmoid = staticmethod(_log_sigmoid)
    softmax = staticmethod(_softmax)
    log_softmax = staticmethod(_log_softmax)

    @staticmethod
    def gelu(a: Any, approximate: bool = False) -> Any:
        return _gelu(a, bool(approximate))
