"""Argument checking shared by every tensor op: dims, shapes, kinds, devices.

These run in the core, before the backend is called, so every backend reports the same
``EmberError`` for the same mistake.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._errors import DeviceError, IndexError_, KindError, ShapeError
from .._kind import Bool, Float, Int, Kind
from ._base import TensorBase


def norm_dim(op: str, dim: int, rank: int) -> int:
    """``dim`` in ``[-rank, rank)`` as a non-negative int.

    Raises:
        IndexError_: out of range, naming the op, the dim and the rank.
    """
    if not isinstance(dim, int):
        raise TypeError(f"{op}: dim must be an int, got {type(dim).__name__}")
    if -rank <= dim < rank:
        return dim + rank if dim < 0 else dim
    raise IndexError_(
        f"{op}: dim {dim} is out of range for a tensor of rank {rank}; expected a dim in "
        f"[{-rank}, {rank - 1}]."
        if rank
        else f"{op}: dim {dim} given for a rank-0 tensor, which has no dims; reshape it first."
    )


def norm_dims(op: str, dims: Sequence[int], rank: int) -> tuple[int, ...]:
    out = tuple(norm_dim(op, d, rank) for d in dims)
    if len(set(out)) != len(out):
        raise IndexError_(f"{op}: dims {list(dims)} repeat a dim (rank {rank}); give each dim once.")
    return out


def broadcast_shapes(op: str, a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    """numpy broadcasting of two shapes.

    Raises:
        ShapeError: naming the op, both shapes and the first incompatible dim.
    """
    n = max(len(a), len(b))
    pa, pb = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
    out = []
    for i, (x, y) in enumerate(zip(pa, pb)):
        if x == y or y == 1:
            out.append(x)
        elif x == 1:
            out.append(y)
        else:
            raise ShapeError(
                f"{op}: shapes {list(a)} and {list(b)} cannot be broadcast: dim {i - n} has sizes "
                f"{x} and {y}. Sizes must be equal or 1; reshape or unsqueeze one operand."
            )
    return tuple(out)


def check_same(op: str, a: TensorBase, b: TensorBase) -> None:
    """Raise the error for two tensors that do not share device or kind."""
    if a.device is not b.device:
        if a.device.backend is not b.device.backend:
            raise DeviceError(
                f"{op}: tensors live on different backends ({a.device} and {b.device}); move one "
                f"with .to_device(other.device)."
            )
        raise DeviceError(
            f"{op}: tensors live on different devices ({a.device} and {b.device}); move one with "
            ".to_device(other.device)."
        )
    if a.kind is not b.kind:
        raise KindError(
            f"{op}: {a.kind} and {b.kind} tensors cannot be mixed; convert one with "
            f".float(), .int() or .bool() first."
        )


def require_kind(op: str, t: TensorBase, *kinds: Kind) -> None:
    if t.kind not in kinds:
        names = " or ".join(k.name for k in kinds)
        hint = {Float: ".float()", Int: ".int()", Bool: ".bool()"}[kinds[0]]
        raise KindError(f"{op} needs a {names} tensor, got {t.kind}; convert with {hint} first.")


def require_device(op: str, t: TensorBase, other: TensorBase, what: str = "argument") -> None:
    if other.device is not t.device and other.device.inner is not t.device.inner:
        raise DeviceError(
            f"{op}: the {what} lives on {other.device} but the tensor on {t.device}; move it with "
            ".to_device(tensor.device)."
        )


def as_shape(op: str, shape: Any) -> tuple[int, ...]:
    if isinstance(shape, int):
        shape = (shape,)
    try:
        out = tuple(int(s) for s in shape)
    except TypeError:
        raise TypeError(f"{op}: shape must be a sequence of ints, got {shape!r}") from None
    if any(s < 0 for s in out):
        raise ShapeError(f"{op}: shape {list(out)} has a negative size; sizes must be >= 0.")
    return out


def numel(shape: Sequence[int]) -> int:
    n = 1
    for s in shape:
        n *= s
    return n
