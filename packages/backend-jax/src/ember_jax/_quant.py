"""The quantization primitives as compiled jax kernels (formulas: :class:`ember.backend.contract.QuantOps`).

``int_matmul`` is XLA's integer dot with an int32 result (``jnp.matmul(..., preferred_element_type=int32)``,
``lax.dot_general`` underneath), exact. ``quantize`` / ``dequantize`` are one fused kernel each (``jnp.round``
rounds half to even); inside ``ember_jax.jit`` they fuse with their neighbours.
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp

from ember import DType
from ember.backend.contract import QuantOps

from ._kernel import JNP, kernel

__all__ = ["JaxQuantOps"]


def _ct(dt: Any) -> Any:
    return jnp.float64 if dt == jnp.float64 else jnp.float32


@kernel(3, 4, 5)
def _quantize(x: Any, scale: Any, zero_point: Any, qmin: int, qmax: int, dtype: Any) -> Any:
    ct = _ct(x.dtype)
    v = jnp.round(x.astype(ct) / scale.astype(ct))
    if zero_point is not None:
        v = v + zero_point.astype(ct)
    return jnp.clip(v, qmin, qmax).astype(dtype)


@kernel(3)
def _dequantize(q: Any, scale: Any, zero_point: Any, dtype: Any) -> Any:
    ct = _ct(dtype)
    v = q.astype(ct)
    if zero_point is not None:
        v = v - zero_point.astype(ct)
    return (v * scale.astype(ct)).astype(dtype)


@kernel()
def _int_matmul(a: Any, b: Any) -> Any:
    return jnp.matmul(a.astype(jnp.int8), b.astype(jnp.int8), preferred_element_type=jnp.int32)


class JaxQuantOps(QuantOps):
    @staticmethod
    def quantize(x: Any, scale: Any, zero_point: Any, qmin: int, qmax: int, dtype: DType) -> Any:
        return _quantize(x, scale, zero_point, qmin, qmax, JNP[dtype])

    @staticmethod
    def dequantize(q: Any, scale: Any, zero_point: Any, dtype: DType) -> Any:
        return _dequantize(q, scale, zero_point, JNP[dtype])

    @staticmethod
    def int_matmul(a: Any, b: Any) -> Any:
        return _int_matmul(a, b)
