"""What every collective op shares: the tensor <-> engine-primitive plumbing and the argument checks.

:mod:`._ops` (one collective at a time) and :mod:`._bucket` (many gradients in buckets) both take the inner
primitive of a tensor (:func:`_unwrap`), call the group's engine with its failures mapped to
:class:`~ember.CollectiveError` (:func:`_run`) and wrap the result on the tensor's device (:func:`_wrap`).
"""

from __future__ import annotations

from typing import Any

from .._errors import CollectiveError, KindError
from .._kind import Float
from ..tensor import Tensor
from ._group import ProcessGroup

DEFAULT_BUCKET_BYTES = 25 * 2**20
"""The default bucket size of :func:`all_reduce_many` in bytes: 25 MiB, PyTorch DDP's ``bucket_cap_mb`` default."""
_OPS = ("sum", "mean")


def _unwrap(t: Any, g: ProcessGroup, op: str) -> tuple[Any, Any]:
    """``(inner primitive, inner backend)`` of ``t``, checked against the group."""
    if not isinstance(t, Tensor):
        raise CollectiveError(f"{op}: expected an ember.Tensor, got {type(t).__name__}.")
    dev = t.device
    inner = dev.inner
    if inner.backend.name != g.backend:
        raise CollectiveError(
            f"{op}: the tensor lives on {dev} (backend {inner.backend.name!r}) but the process group runs on "
            f"backend {g.backend!r}; move it with tensor.to_device(...) or initialize the group on its backend."
        )
    p = t.primitive
    if dev.backend.is_autodiff and t.kind is Float:
        p = dev.backend.inner(p)
    return p, inner.backend


def _wrap(p: Any, like: Tensor) -> Tensor:
    dev = like.device
    if dev.backend.is_autodiff and like.kind is Float:
        p = dev.backend.from_inner(p)
    return Tensor(p, dev, like.kind)


def _nbytes(ib: Any, p: Any) -> int:
    n = 1
    for s in ib.shape(p):
        n *= s
    return n * int(ib.dtype(p).itemsize)


def _run(g: ProcessGroup, op: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
    """Call the engine, turning its failures (a peer gone, a timeout, mismatched shapes) into CollectiveError.

    An engine failure is raised ``from`` the engine's exception (``__cause__`` set), which tells it apart from
    an argument refused before the call (raised without a cause): ember-train blames the peers for the first
    kind only."""
    try:
        return fn(*args, **kwargs)
    except CollectiveError:
        raise
    except Exception as exc:
        raise CollectiveError(
            f"{op} failed in the {g.engine} engine (rank {g.rank} of {g.world_size}, timeout {g.timeout} s): "
            f"{type(exc).__name__}: {exc}. Every rank must call the same collectives in the same order, with "
            "tensors of the same shape and dtype; a rank that died or timed out breaks the group."
        ) from exc


def _check_op(op: str, where: str) -> None:
    if op not in _OPS:
        raise CollectiveError(f"{where}: op must be one of {', '.join(map(repr, _OPS))}; got {op!r}.")


def _check_mean(t: Tensor, op: str, where: str) -> None:
    if op == "mean" and t.kind is not Float:
        raise KindError(
            f"{where}: op='mean' needs a Float tensor, got a {t.kind} tensor ({t.dtype}); use op='sum', or "
            "convert it with .float() first."
        )


def _numel(shape: tuple[int, ...]) -> int:
    n = 1
    for s in shape:
        n *= s
    return n
