"""The argument checks of the functional module ops (:mod:`ember.tensor.functional` and
:mod:`._functional_pool`): kinds, ranks and layouts, int tuples, groups, devices, windows that fit the padded
input, and the backend call with its failure mapped to an ``ember`` error.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._errors import DeviceError, EmberError, IndexError_, KindError, ShapeError
from .._kind import Float
from . import _core
from ._util import check_same

IntOrSeq = int | Sequence[int]
Ints = tuple[int, ...]

_LAYOUT = {
    1: "[batch, channels, length]",
    2: "[batch, channels, height, width]",
    3: "[batch, channels, depth, height, width]",
}
_DIMS = {1: ("length",), 2: ("height", "width"), 3: ("depth", "height", "width")}


def _tensor(op: str, name: str, t: Any, kind: Any = Float) -> None:
    if type(t) is not _core.Tensor:
        raise TypeError(f"{op}: {name} must be an ember.Tensor, got {type(t).__name__}.")
    if t.kind is not kind:
        raise KindError(f"{op}: {name} must be {'a Float' if kind is Float else 'an Int'} tensor, got {t.kind}; "
                        f"convert it with {'.float()' if kind is Float else '.int()'} first.")


def _rank(op: str, name: str, t: Any, rank: int, layout: str) -> None:
    if t.rank != rank:
        raise ShapeError(f"{op}: expected {name} of shape {layout} (rank {rank}), got shape {list(t.shape)} "
                         f"(rank {t.rank}).")


def _ints(op: str, name: str, v: Any, n: int, minimum: int) -> Ints:
    if isinstance(v, bool):
        raise TypeError(f"{op}: {name} must be an int or {n} ints, got {v!r}.")
    if isinstance(v, int):
        out: Ints = (v,) * n
    else:
        try:
            out = tuple(v)
        except TypeError:
            raise TypeError(f"{op}: {name} must be an int or {n} ints, got {v!r}.") from None
        if len(out) != n or not all(isinstance(i, int) and not isinstance(i, bool) for i in out):
            raise ValueError(f"{op}: {name} must be an int or a sequence of {n} ints (one per spatial dim), "
                             f"got {v!r}.")
    if any(i < minimum for i in out):
        raise ValueError(f"{op}: {name} must be >= {minimum}, got {v!r}.")
    return out


def _groups(op: str, groups: Any) -> int:
    if isinstance(groups, bool) or not isinstance(groups, int) or groups < 1:
        raise ValueError(f"{op}: groups must be a positive int, got {groups!r}.")
    return groups


def _same(op: str, x: Any, *others: Any) -> None:
    for t in others:
        if t is not None and t.device is not x.device:
            check_same(op, x, t)


def _fits(op: str, x: Any, kernel: Ints, padding: Ints, dilation: Ints, what: str = "kernel") -> None:
    sizes = x.shape[2:]
    for i, (s, k, p, d) in enumerate(zip(sizes, kernel, padding, dilation)):
        eff = d * (k - 1) + 1
        if eff > s + 2 * p:
            nd = len(sizes)
            raise ShapeError(
                f"{op}: the {what} ({list(kernel)}, dilation {list(dilation)}: {eff} along {_DIMS[nd][i]}) is "
                f"larger than the padded input ({s} + 2 * {p} = {s + 2 * p}) of input shape {list(x.shape)}; "
                "use a smaller kernel or more padding."
            )


def _device_error(op: str, a: Any, b: Any) -> Exception:
    try:
        check_same(op, a, b)
    except Exception as exc:  # the device error of the core
        return exc
    return DeviceError(f"{op}: tensors on different devices {a.device} and {b.device}; move one with "
                       ".to_device(other.device).")  # pragma: no cover


def _call(op: str, fn: Any, *tensors: Any) -> Any:
    try:
        return fn()
    except IndexError as exc:
        raise IndexError_(f"{op}: index out of range: {exc}") from exc
    except EmberError:
        raise
    except Exception as exc:  # a backend failure: name the op and the operands (no broadcasting story)
        desc = ", ".join(f"{t.kind} {list(t.shape)} {t.dtype}" for t in tensors)
        raise EmberError(f"{op} failed in the {tensors[0].device.backend.name} backend on ({desc}): "
                         f"{type(exc).__name__}: {exc}") from exc


