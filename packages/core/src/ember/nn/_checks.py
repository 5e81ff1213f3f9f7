"""Shared input checks of the ``ember.nn`` layers: every error names the layer, the expected
layout and what was received."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._errors import ConfigError, KindError, ShapeError
from .._kind import Float, Int
from ..tensor import Tensor

__all__ = ["check_float", "check_int", "check_rank", "check_dim", "config_error", "ints"]


def _tensor(layer: str, name: str, x: Any) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{layer}: {name} must be an ember.Tensor, got {type(x).__name__}.")
    return x


def check_float(layer: str, x: Any, name: str = "input") -> Tensor:
    """``x`` as a Float tensor, else KindError naming the layer."""
    t = _tensor(layer, name, x)
    if t.kind is not Float:
        raise KindError(f"{layer}: {name} must be a Float tensor, got {t.kind}; convert with .float().")
    return t


def check_int(layer: str, x: Any, name: str = "indices") -> Tensor:
    """``x`` as an Int tensor, else KindError naming the layer."""
    t = _tensor(layer, name, x)
    if t.kind is not Int:
        raise KindError(f"{layer}: {name} must be an Int tensor, got {t.kind}; convert with .int().")
    return t


def check_rank(layer: str, x: Tensor, rank: int | Sequence[int], layout: str, name: str = "input") -> None:
    """ShapeError unless ``x.rank`` is ``rank`` (or one of them), naming ``layout``."""
    ok = x.rank == rank if isinstance(rank, int) else x.rank in rank
    if not ok:
        want = rank if isinstance(rank, int) else " or ".join(map(str, rank))
        raise ShapeError(
            f"{layer}: expected {name} of shape {layout} (rank {want}), got shape {list(x.shape)} (rank {x.rank})."
        )


def check_dim(layer: str, x: Tensor, dim: int, size: int, layout: str, what: str, name: str = "input") -> None:
    """ShapeError unless ``x.shape[dim] == size`` (``what`` names the dim, e.g. ``channels``)."""
    if x.shape[dim] != size:
        raise ShapeError(
            f"{layer}: expected {name} of shape {layout} with {what} = {size}, got shape {list(x.shape)} "
            f"({what} = {x.shape[dim]})."
        )


def config_error(config: str, reason: str) -> ConfigError:
    """A ConfigError for an impossible configuration, raised by ``init``."""
    return ConfigError(f"{config}.init: {reason}")


def ints(value: Any, n: int) -> tuple[int, ...]:
    """An int or sequence of ints as a tuple of ``n`` ints."""
    if isinstance(value, int):
        return (value,) * n
    return tuple(int(v) for v in value)
