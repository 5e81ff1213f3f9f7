"""The jax backend's random numbers: one functional PRNG key, threaded through every random op.

jax has no hidden generator state: a sample is a pure function of a key. The backend keeps the
current key in a :class:`KeyState`; every random op runs one compiled kernel that splits the
key, samples with one half and returns the other as the next key, so each op sees a fresh
subkey. :meth:`KeyState.seed` resets the key: the sequence of random ops that follows is
reproducible (same values for the same seed and the same calls, on any jax version that keeps
its threefry stream).

Key handling lives here only. A compiled training step (``ember_jax.jit``) threads the key of
each backend of its arguments as state: the key goes in as an argument of the compiled program,
while tracing ``KeyState.key`` holds the traced key (the random ops of the step split it like a
concrete one), and after the call the step's final key is stored. The same ops therefore draw
the same numbers compiled or eager, for the same seed.

The key uses the ``threefry2x32`` implementation whatever jax's default PRNG is, so a seed gives
the same stream in every process. Seeds are taken modulo ``2**64`` (the 64 bits become the two
32-bit words of the key, as ``jax.random.key`` does with x64 enabled; without x64 jax itself
would drop the high word).
"""

from __future__ import annotations

import secrets
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ember import BackendError

from ._kernel import F32, HALF, is_tracer, kernel

__all__ = ["KeyState", "uniform", "randint", "normal", "bernoulli"]


def key_from_seed(seed: int) -> Any:
    """A threefry key holding ``seed`` modulo ``2**64``."""
    s = int(seed) % (1 << 64)
    data = np.array([s >> 32, s & 0xFFFFFFFF], dtype=np.uint32)
    # a concrete key even when first used inside a trace (it must not become a tracer)
    with jax.ensure_compile_time_eval():
        return jax.random.wrap_key_data(jnp.asarray(data), impl="threefry2x32")


class KeyState:
    """The current PRNG key of one backend instance (``None`` until first used or seeded: an
    unseeded backend draws its first key from the OS's entropy)."""

    __slots__ = ("key",)

    def __init__(self) -> None:
        self.key: Any = None

    def seed(self, seed: int) -> None:
        self.key = key_from_seed(seed)

    def state(self) -> list[int] | None:
        """The key's two 32-bit words (``None`` when no key was made yet); raises ``BackendError`` inside a trace."""
        if self.key is None:
            return None
        if is_tracer(self.key):
            raise BackendError("jax backend: the PRNG key cannot be saved inside a compiled step (it is traced).")
        data = np.asarray(jax.device_get(jax.random.key_data(self.key)), dtype=np.uint32).reshape(-1)
        return [int(w) for w in data]

    def set_state(self, words: Any) -> None:
        """Restore :meth:`state` (``None``: no key yet, the next random op draws one from the OS).

        Raises:
            TypeError, ValueError: not ``None`` or two integers in ``[0, 2**32)``.
        """
        if words is None:
            self.key = None
            return
        if (not isinstance(words, (list, tuple)) or len(words) != 2
                or not all(isinstance(w, int) and not isinstance(w, bool) and 0 <= w < 1 << 32 for w in words)):
            raise ValueError(f"expected two 32-bit words, found {words!r}")
        self.seed((int(words[0]) << 32) | int(words[1]))

    def current(self) -> Any:
        if self.key is None:
            self.key = key_from_seed(secrets.randbits(64))
        return self.key


@kernel(1, 2)
def _uniform(key: Any, shape: tuple[int, ...], dtype: np.dtype, low: Any, high: Any) -> tuple[Any, Any]:
    key, sub = jax.random.split(key)
    # half types sample in float32 (more random bits) and round once. ``u * (high - low) + low``
    # may round up to ``high`` (in float32 too, for large ranges): such values step down to the
    # next representable value, so every sample lies in [low, high)
    u = jax.random.uniform(sub, shape, F32 if dtype in HALF else dtype, low, high).astype(dtype)
    return key, jnp.where(u >= high, jnp.nextafter(u, jnp.asarray(low, dtype)), u)


@kernel(1, 2)
def _randint(key: Any, shape: tuple[int, ...], dtype: np.dtype, low: Any, high: Any) -> tuple[Any, Any]:
    key, sub = jax.random.split(key)
    return key, jax.random.randint(sub, shape, low, high, dtype)


@kernel(1, 2)
def _normal(key: Any, shape: tuple[int, ...], dtype: np.dtype, mean: Any, std: Any) -> tuple[Any, Any]:
    key, sub = jax.random.split(key)
    work = F32 if dtype in HALF else dtype
    z = jax.random.normal(sub, shape, work)
    return key, (z * std + mean).astype(dtype)


@kernel(1, 2)
def _bernoulli(key: Any, shape: tuple[int, ...], dtype: np.dtype, prob: Any) -> tuple[Any, Any]:
    key, sub = jax.random.split(key)
    # ``uniform < prob``: the contract's definition (and the reference backend's)
    return key, (jax.random.uniform(sub, shape, jnp.float32) < prob).astype(dtype)


def _draw(state: KeyState, k: Any, *args: Any) -> Any:
    """Run the sampling kernel ``k`` on the current key and advance the key.

    Raises:
        BackendError: a random op inside ``jax.jit`` while the key is concrete: the key would be
            baked into the compiled function as a constant and every call would repeat the same
            numbers.
    """
    key = state.current()
    new, out = k(key, *args)
    if is_tracer(new) and not is_tracer(key):
        raise BackendError(
            "jax backend: a random op (random, dropout, random init ...) ran inside jax.jit with the "
            "backend's concrete PRNG key: every call of the compiled function would repeat the same "
            "numbers. Compile the step with ember_jax.jit, which threads the key of the backend of every "
            "tensor among the step's arguments (pass a tensor or module of this backend in), or draw the "
            "random tensors outside and pass them in."
        )
    state.key = new
    return out


def uniform(state: KeyState, shape: tuple[int, ...], dtype: np.dtype, low: float, high: float) -> Any:
    """Floats uniform on ``[low, high)`` of ``dtype``; the key advances."""
    return _draw(state, _uniform, shape, dtype, low, high)


def randint(state: KeyState, shape: tuple[int, ...], dtype: np.dtype, low: int, high: int) -> Any:
    """Integers uniform on ``[low, high)`` of ``dtype``; the key advances."""
    return _draw(state, _randint, shape, dtype, low, high)


def normal(state: KeyState, shape: tuple[int, ...], dtype: np.dtype, mean: float, std: float) -> Any:
    """Normal samples with ``mean`` and standard deviation ``std``; the key advances."""
    return _draw(state, _normal, shape, dtype, mean, std)


def bernoulli(state: KeyState, shape: tuple[int, ...], dtype: np.dtype, prob: float) -> Any:
    """1 (true) with probability ``prob`` else 0 (false), as ``dtype``; the key advances."""
    return _draw(state, _bernoulli, shape, dtype, prob)
