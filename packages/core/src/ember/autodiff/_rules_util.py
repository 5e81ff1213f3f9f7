"""Helpers shared by the backward rules, written with inner-backend primitives only."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

__all__ = ["unbroadcast", "zeros_like", "zeros", "expand_to", "along", "numel", "as_float"]


def unbroadcast(B: Any, g: Any, shape: tuple[int, ...]) -> Any:
    """``g`` summed back to ``shape`` after numpy broadcasting: leading dims that broadcasting
    added and dims of size 1 in ``shape`` are summed, then the result is reshaped to ``shape``."""
    gs = B.shape(g)
    if gs == shape:
        return g
    lead = len(gs) - len(shape)
    if lead == 1 and gs[1:] == shape:  # a bias: one leading dim added (the loop below, unrolled)
        return B.reshape(B.sum_dim(g, 0), shape)
    for i in range(len(gs)):
        if i < lead or (shape[i - lead] == 1 and gs[i] != 1):
            g = B.sum_dim(g, i)
    return g if B.shape(g) == shape else B.reshape(g, shape)


def zeros(B: Any, shape: tuple[int, ...], like: Any) -> Any:
    """Zeros of ``shape`` with ``like``'s dtype and device."""
    return B.zeros(shape, B.dtype(like), B.device_handle(like))


def zeros_like(B: Any, like: Any) -> Any:
    return B.zeros(B.shape(like), B.dtype(like), B.device_handle(like))


def expand_to(B: Any, g: Any, shape: tuple[int, ...]) -> Any:
    """A reduced gradient (kept dims of size 1, or shape ``(1,)`` for whole reductions) broadcast
    back to the input's ``shape``."""
    rank = len(shape)
    if B.shape(g) != (1,) * rank:
        g = B.reshape(g, (1,) * rank)
    return B.expand(g, shape) if shape != (1,) * rank else g


def along(shape: tuple[int, ...], dim: int, start: int, stop: int, step: int = 1) -> tuple[slice, ...]:
    """One normalized slice per dim: ``start:stop:step`` at ``dim``, the whole dim elsewhere."""
    return tuple(slice(start, stop, step) if i == dim else slice(0, s, 1) for i, s in enumerate(shape))


#: the number of elements of ``shape`` (1 for ``()``): ``math.prod``, in C
numel: Callable[[tuple[int, ...]], int] = math.prod


def as_float(B: Any, p: Any, like: Any) -> Any:
    """An Int primitive (or Python number) as a float primitive of ``like``'s dtype."""
    if isinstance(p, (int, float)):
        return float(p)
    return B.cast(p, B.dtype(like))
