"""Shape and indexing primitives of the jax backend.

Arguments arrive normalized by the core (non-negative dims, positive-step slices, resolved
shapes). Slices are passed to the kernels as static ``(start, stop, step)`` triples.

The Burn ops that "write" (``slice_assign``, ``scatter_add``, ``select_add``, ``mask_*``) are
functional ``.at[...]`` updates (``.at[].set`` / ``.at[].add``) or ``jnp.where``: they return a
new array and never touch their input.

Index values: jax never raises for an out-of-range index (gathers fill, scatters drop the
update, negative indices count from the end). The core checks concrete index values before it
calls these primitives (:mod:`ember.tensor._index_check`, one fused min/max kernel,
``index_bounds``); a traced index (inside ``jax.jit``) is not checked and jax's behaviour applies.
``nonzero`` and ``argwhere`` have data-dependent shapes: they run eagerly on the host and cannot be traced.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from ember import BackendError

from ._kernel import is_tracer, kernel

#: the builtin ``slice`` (the class below defines a method of that name)
_Slice = slice

_Triples = tuple[tuple[int, int, int], ...]


def _triples(slices: tuple[_Slice, ...], shape: tuple[int, ...]) -> _Triples:
    """Slices as hashable ``(start, stop, step)`` triples, one per dim (missing dims are full)."""
    out = [s.indices(n) for s, n in zip(slices, shape)]
    out += [(0, n, 1) for n in shape[len(slices) :]]
    return tuple(out)


# ---------------------------------------------------------------- kernels
@kernel(1)
def _reshape(a: Any, shape: tuple[int, ...]) -> Any:
    return jnp.reshape(a, shape)


@kernel(1)
def _permute(a: Any, axes: tuple[int, ...]) -> Any:
    return jnp.transpose(a, axes)


@kernel(1)
def _expand(a: Any, shape: tuple[int, ...]) -> Any:
    return jnp.broadcast_to(a, shape)


@kernel(1)
def _flip(a: Any, axes: tuple[int, ...]) -> Any:
    return jnp.flip(a, axes)


@kernel(1)
def _slice(a: Any, t: _Triples) -> Any:
    return lax.slice(a, [s for s, _, _ in t], [max(s, e) for s, e, _ in t], [st for _, _, st in t])


@kernel(1)
def _slice_assign(a: Any, t: _Triples, value: Any) -> Any:
    return a.at[tuple(_Slice(s, e, st) for s, e, st in t)].set(jnp.asarray(value).astype(a.dtype))


@kernel(1)
def _cat(ps: list[Any], dim: int) -> Any:
    return jnp.concatenate(ps, axis=dim)


@kernel(1)
def _stack(ps: list[Any], dim: int) -> Any:
    return jnp.stack(ps, axis=dim)


@kernel(1)
def _gather(a: Any, dim: int, idx: Any) -> Any:
    return jnp.take_along_axis(a, idx, axis=dim)


def _grid(shape: tuple[int, ...], dim: int, idx: Any) -> tuple[Any, ...]:
    """Coordinates of every element of ``shape`` with ``idx`` in place of dim ``dim``."""
    return tuple(idx if d == dim else lax.broadcasted_iota(jnp.int32, shape, d) for d in range(len(shape)))


@kernel(1)
def _scatter_add(a: Any, dim: int, idx: Any, values: Any) -> Any:
    return a.at[_grid(idx.shape, dim, idx)].add(values.astype(a.dtype))


@kernel(1)
def _select(a: Any, dim: int, idx: Any) -> Any:
    return jnp.take(a, idx, axis=dim)


@kernel(1)
def _select_add(a: Any, dim: int, idx: Any, values: Any) -> Any:
    return a.at[(_Slice(None),) * dim + (idx,)].add(values.astype(a.dtype))


@kernel()
def _mask_where(a: Any, mask: Any, value: Any) -> Any:
    return jnp.where(mask, value, a).astype(a.dtype)


@kernel()
def _mask_fill(a: Any, mask: Any, value: Any) -> Any:
    return jnp.where(mask, jnp.asarray(value).astype(a.dtype), a)


@kernel(1, 2)
def _repeat_dim(a: Any, dim: int, times: int) -> Any:
    reps = [1] * a.ndim
    reps[dim] = times
    return jnp.tile(a, reps)


@kernel(1, 2, 3)
def _unfold(a: Any, dim: int, size: int, step: int) -> Any:
    count = (a.shape[dim] - size) // step + 1
    idx = (jnp.arange(count)[:, None] * step + jnp.arange(size)[None, :]).astype(jnp.int32)
    win = jnp.take(a, idx, axis=dim)  # [..., count, size, ...]
    return jnp.moveaxis(win, dim + 1, -1)


@kernel(1)
def _pad(a: Any, pads: tuple[tuple[int, int], ...], value: Any) -> Any:
    full = tuple(pads) + ((0, 0),) * (a.ndim - len(pads))
    return jnp.pad(a, full, mode="constant", constant_values=jnp.asarray(value).astype(a.dtype))


def _eager(op: str, a: Any) -> np.ndarray:
    if is_tracer(a):
        raise BackendError(
            f"jax backend: {op} has a data-dependent result shape and cannot run inside a compiled "
            "(jax.jit) function; compute it outside, or use mask_where / a Bool mask with a fixed shape."
        )
    return np.asarray(a)


class JaxShapeOps:
    reshape = staticmethod(_reshape)
    permute = staticmethod(_permute)
    expand = staticmethod(_expand)
    mask_where = staticmethod(_mask_where)
    mask_fill = staticmethod(_mask_fill)
    repeat_dim = staticmethod(_repeat_dim)
    unfold = staticmethod(_unfold)

    @staticmethod
    def flip(a: Any, axes: tuple[int, ...]) -> Any:
        return _flip(a, tuple(axes)) if axes else a

    @staticmethod
    def slice(a: Any, slices: tuple[_Slice, ...]) -> Any:
        return _slice(a, _triples(slices, a.shape))

    @staticmethod
    def slice_assign(a: Any, slices: tuple[_Slice, ...], value: Any) -> Any:
        return _slice_assign(a, _triples(slices, a.shape), value)

    @staticmethod
    def cat(ps: list[Any], dim: int) -> Any:
        return _cat(list(ps), dim)

    @staticmethod
    def stack(ps: list[Any], dim: int) -> Any:
        return _stack(list(ps), dim)

    @staticmethod
    def gather(a: Any, dim: int, indices: Any) -> Any:
        return _gather(a, dim, indices)

    @staticmethod
    def scatter_add(a: Any, dim: int, indices: Any, values: Any) -> Any:
        return _scatter_add(a, dim, indices, values)

    @staticmethod
    def select(a: Any, dim: int, indices: Any) -> Any:
        return _select(a, dim, indices)

    @staticmethod
    def select_add(a: Any, dim: int, indices: Any, values: Any) -> Any:
        return _select_add(a, dim, indices, values)

    @staticmethod
    def pad(a: Any, pads: tuple[tuple[int, int], ...], value: Any) -> Any:
        return _pad(a, tuple(tuple(p) for p in pads), value)

    def nonzero(self, a: Any) -> list[Any]:
        coords = np.nonzero(_eager("nonzero", a))
        host = [c.astype(self._idt) for c in coords]  # type: ignore[attr-defined]
        return list(jax.device_put(host, a.device))

    def argwhere(self, a: Any) -> Any:
        host = np.argwhere(_eager("argwhere", a)).astype(self._idt)  # type: ignore[attr-defined]
        return jax.device_put(host, a.device)
