"""Int bitwise and Bool logical primitives of the jax backend (``jax.numpy`` functions, one
compiled kernel each; a Python int or bool second operand is weakly typed and keeps the array's
dtype). Right shifts of signed ints are arithmetic (sign-extending), as XLA's
``shift_right_arithmetic``."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp


def _binary(f: Any) -> Any:
    def k(a: Any, b: Any) -> Any:
        return f(a, b).astype(a.dtype)

    k.__name__ = f.__name__
    return staticmethod(jax.jit(k))


class JaxIntBoolOps:
    bitwise_and = _binary(jnp.bitwise_and)
    bitwise_or = _binary(jnp.bitwise_or)
    bitwise_xor = _binary(jnp.bitwise_xor)
    bitwise_not = staticmethod(jax.jit(jnp.invert))
    bitwise_left_shift = _binary(jnp.left_shift)
    bitwise_right_shift = _binary(jnp.right_shift)
    logical_and = _binary(jnp.logical_and)
    logical_or = _binary(jnp.logical_or)
    logical_xor = _binary(jnp.logical_xor)
    logical_not = staticmethod(jax.jit(jnp.logical_not))
