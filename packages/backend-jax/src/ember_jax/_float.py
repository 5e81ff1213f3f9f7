"""Float primitives of the jax backend: ``jax.numpy`` / ``jax.lax`` element-wise functions, one
compiled kernel each.

Results follow IEEE 754 as torch does (``log(0) = -inf``, ``sqrt(-1) = NaN``) and jax emits no
warnings. ``erf`` is XLA's (``lax.erf``); ``round`` is half to even (``jnp.round``). Statistics
(``var_mean``, ``cov``) compute in float32 for float16/bfloat16 inputs and round once.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from jax import lax

from ._kernel import acc, kernel


def _unary(f: Any) -> Any:
    return staticmethod(jax.jit(f))


@kernel()
def _atan2(a: Any, b: Any) -> Any:
    return jnp.arctan2(a, b).astype(a.dtype)


@kernel()
def _recip(a: Any) -> Any:
    return (1 / a).astype(a.dtype)


@kernel()
def _contains_nan(a: Any) -> Any:
    return jnp.any(jnp.isnan(a)).reshape(1)


@kernel()
def _is_close(a: Any, b: Any, rtol: Any, atol: Any) -> Any:
    diff = jnp.abs(a - b)
    close = diff <= atol + rtol * jnp.abs(b)
    finite = jnp.isfinite(a) & jnp.isfinite(b)
    same_inf = jnp.isinf(a) & (a == b)
    return (close & finite) | same_inf


@kernel(1, 2)
def _var_mean(a: Any, dim: int, correction: int) -> tuple[Any, Any]:
    dt = a.dtype
    w = a.astype(acc(dt))
    n = a.shape[dim]
    s0 = jnp.sum(w, axis=dim, keepdims=True)
    mean = s0 / n if n else s0 * jnp.nan
    d = w - mean
    s = jnp.sum(d * d, axis=dim, keepdims=True)
    var = s / (n - correction) if n > correction else s * jnp.nan
    return var.astype(dt), mean.astype(dt)


@kernel(1, 2)
def _cov(a: Any, dim: int, correction: int) -> Any:
    w = a.astype(acc(a.dtype))
    n = a.shape[dim]
    c = w - jnp.mean(w, axis=dim, keepdims=True)
    if dim == 0:
        c = c.T
    m = c @ c.T
    return (m / (n - correction) if n > correction else m * jnp.nan).astype(a.dtype)


@kernel(2)
def _cross(a: Any, b: Any, dim: int) -> Any:
    return jnp.cross(a, b, axis=dim).astype(a.dtype)


class JaxFloatOps:
    exp = _unary(jnp.exp)
    log = _unary(jnp.log)
    log1p = _unary(jnp.log1p)
    sqrt = _unary(jnp.sqrt)
    square = _unary(jnp.square)
    recip = staticmethod(_recip)
    sin = _unary(jnp.sin)
    cos = _unary(jnp.cos)
    tan = _unary(jnp.tan)
    sinh = _unary(jnp.sinh)
    cosh = _unary(jnp.cosh)
    tanh = _unary(jnp.tanh)
    asin = _unary(jnp.arcsin)
    acos = _unary(jnp.arccos)
    atan = _unary(jnp.arctan)
    asinh = _unary(jnp.arcsinh)
    acosh = _unary(jnp.arccosh)
    atanh = _unary(jnp.arctanh)
    erf = _unary(lax.erf)
    floor = _unary(jnp.floor)
    ceil = _unary(jnp.ceil)
    round = _unary(jnp.round)
    trunc = _unary(jnp.trunc)
    is_nan = _unary(jnp.isnan)
    is_inf = _unary(jnp.isinf)
    is_finite = _unary(jnp.isfinite)
    atan2 = staticmethod(_atan2)
    contains_nan = staticmethod(_contains_nan)
    is_close = staticmethod(_is_close)
    cross = staticmethod(_cross)
    cov = staticmethod(_cov)

    def var(self, a: Any, dim: int, correction: int) -> Any:
        return _var_mean(a, dim, correction)[0]

    @staticmethod
    def var_mean(a: Any, dim: int, correction: int) -> tuple[Any, Any]:
        return _var_mean(a, dim, correction)  # type: ignore[no-any-return]
