"""Shared machinery of the jax backend: compiled kernels, element types, the x64 switch, tracers.

**Kernels.** Every primitive is one call of a ``jax.jit``-compiled function (:func:`kernel`):
a jitted call goes through jax's C++ dispatch fast path, which costs less than the eager
``jax.numpy`` call it replaces (about 5 µs against 6-10 µs for a 4x4 add here; a multi-step op such
as ``argsort`` descending or ``median`` becomes one dispatch instead of several). Non-array
arguments (dims, shapes, dtypes) are static, so a kernel compiles once per shape, dtype and
static-argument combination, which is what eager jax does per primitive anyway. Python scalar
operands are passed as weakly-typed values: the result keeps the tensor's dtype, and a new
scalar value never recompiles. Kernels nest inside an outer ``jax.jit`` (they are inlined), so
an Ember function of tensors can be traced as a whole.

**x64.** jax holds 64-bit values only when ``jax_enable_x64`` is on, a process-wide switch.
The backend turns it on (:func:`require`) the first time a 64-bit element type is asked for:
``ember.backend("jax", float_dtype="float64")``, ``int_dtype="int64"``, or a cast / creation in
float64 or int64. Backends already created keep their own dtypes (every kernel names its
dtype explicitly), but the user's own jax code then sees jax's 64-bit defaults
(``jnp.array(1.0)`` becomes float64). Enable it yourself at start-up
(``jax.config.update("jax_enable_x64", True)``) to make that explicit.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ember import DType

__all__ = ["JNP", "FROM_JNP", "HALF", "F32", "kernel", "require", "x64", "is_tracer", "acc"]

#: Ember element type -> numpy dtype jax uses (bfloat16 is ml_dtypes' type, as in jax)
JNP: dict[DType, np.dtype] = {
    DType.FLOAT64: np.dtype(np.float64),
    DType.FLOAT32: np.dtype(np.float32),
    DType.FLOAT16: np.dtype(np.float16),
    DType.BFLOAT16: np.dtype(jnp.bfloat16),
    DType.INT64: np.dtype(np.int64),
    DType.INT32: np.dtype(np.int32),
    DType.INT16: np.dtype(np.int16),
    DType.INT8: np.dtype(np.int8),
    DType.UINT8: np.dtype(np.uint8),
    DType.UINT16: np.dtype(np.uint16),
    DType.UINT32: np.dtype(np.uint32),
    DType.UINT64: np.dtype(np.uint64),
    DType.BOOL: np.dtype(np.bool_),
}
FROM_JNP: dict[np.dtype, DType] = {v: k for k, v in JNP.items()}
F32 = JNP[DType.FLOAT32]
F16 = JNP[DType.FLOAT16]
BF16 = JNP[DType.BFLOAT16]
#: float types whose reductions, scans and matmuls accumulate in float32
HALF = frozenset({F16, BF16})
_WIDE64 = frozenset({DType.FLOAT64, DType.INT64, DType.UINT64})

_Tracer = jax.core.Tracer


def x64() -> bool:
    """Whether jax currently holds 64-bit values (``jax_enable_x64``)."""
    return bool(jax.config.read("jax_enable_x64"))


def require(dtype: DType) -> None:
    """Turn ``jax_enable_x64`` on if ``dtype`` is 64-bit (see the module docstring)."""
    if dtype in _WIDE64 and not jax.config.read("jax_enable_x64"):
        jax.config.update("jax_enable_x64", True)


def is_tracer(p: Any) -> bool:
    """Whether ``p`` is an abstract value being traced (inside ``jax.jit``, ``jax.grad`` ...)."""
    return isinstance(p, _Tracer)


def acc(dt: np.dtype) -> np.dtype:
    """Accumulator of sums, products, scans and matmuls: float32 for float16/bfloat16."""
    return F32 if dt in HALF else dt


def kernel(*static: int) -> Callable[[Callable[..., Any]], Any]:
    """Decorator: ``jax.jit`` the function with the positional arguments ``static`` static."""

    def deco(f: Callable[..., Any]) -> Any:
        return jax.jit(f, static_argnums=static)

    return deco
