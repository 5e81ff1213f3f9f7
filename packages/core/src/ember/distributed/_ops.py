"""The collective ops on tensors: ``all_reduce``, ``all_reduce_many``, ``broadcast``, ``all_gather``,
``barrier``.

Each op checks its arguments, takes the inner primitive of the tensor (an Autodiff tensor's values;
the result is an untracked constant, as gradients are reduced after ``backward``), calls the
group's engine (:class:`~ember.backend.Collectives`) and wraps the result on the tensor's device
with its kind. Inputs are never written.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._errors import CollectiveError
from .._kind import Bool
from ..tensor import Tensor
from ._bucket import all_reduce_many_async
from ._engine_calls import DEFAULT_BUCKET_BYTES, _check_mean, _check_op, _nbytes, _run, _unwrap, _wrap
from ._group import ProcessGroup, current_group

__all__ = ["all_reduce", "all_reduce_many", "broadcast", "all_gather", "barrier", "DEFAULT_BUCKET_BYTES"]

def _reduce(g: ProcessGroup, ib: Any, p: Any, kind: Any, op: str, *, owned: bool, where: str) -> Any:
    """Sum (or mean) of primitive ``p`` over the ranks; Bool is reduced as a logical or."""
    eng = g._collectives
    if kind is Bool:
        r = _run(g, where, eng.all_reduce, ib.bool_into_int(p), owned=True)
        return ib.greater(r, 0)
    r = _run(g, where, eng.all_reduce, p, owned=owned)
    if op == "mean" and g.world_size > 1:
        r = ib.div(r, float(g.world_size))
    return r


def all_reduce(tensor: Tensor, op: str = "sum", group: ProcessGroup | None = None) -> Tensor:
    """The element-wise ``op`` of ``tensor`` over every rank of the group (Burn's ``all_reduce``).

    Every rank calls it with a tensor of the same shape and dtype and gets the same result: a new
    tensor on ``tensor``'s device, of its kind and dtype; ``tensor`` is not written. Float, Int and
    Bool tensors (any shape, rank 0 too); a Bool ``"sum"`` is the logical or over the ranks. An
    Autodiff tensor is reduced by value: the result is an untracked constant (reduce gradients
    after ``backward``).

    Args:
        tensor: this rank's values, any shape ``[...]``.
        op: ``"sum"`` or ``"mean"`` (the sum divided by ``world_size`` in the tensor's float dtype;
            Float tensors only).
        group: the process group (default: the initialized one).

    Returns:
        A tensor of ``tensor``'s shape, dtype, kind and device.

    Raises:
        CollectiveError: no group initialized, an unknown ``op``, a tensor of another backend than
            the group's, or the engine failed (mismatched shapes, a peer gone, the timeout).
        KindError: ``op="mean"`` on an Int or Bool tensor.
    """
    g = current_group(group, "all_reduce")
    _check_op(op, "all_reduce")
    _check_mean(tensor, op, "all_reduce")
    p, ib = _unwrap(tensor, g, "all_reduce")
    g.stats.calls += 1
    g.stats.bytes += _nbytes(ib, p)
    return _wrap(_reduce(g, ib, p, tensor.kind, op, owned=False, where="all_reduce"), tensor)


def all_reduce_many(tensors: Sequence[Tensor], op: str = "sum", group: ProcessGroup | None = None, *,
                    bucket_bytes: int = DEFAULT_BUCKET_BYTES) -> list[Tensor]:
    """:func:`all_reduce` of each tensor, in as few collective calls as ``bucket_bytes`` allows.

    The gradient-averaging primitive of data-parallel training (PyTorch DDP's gradient buckets):
    tensors of the same dtype and device are flattened, in order, into buckets of at most
    ``bucket_bytes`` (a larger tensor gets a bucket of its own), each bucket is reduced with ONE
    engine call, and the results are split back into the tensors' shapes. The bytes sent equal the
    sum of the tensors' sizes; ``group.stats.calls`` grows by the number of buckets. Bool tensors
    (logical or) are reduced one by one. Every rank passes the same list of shapes and dtypes.
    It is :func:`all_reduce_many_async` waited on at once (one :class:`Bucketer`), so the
    overlapped form gives the same sums bit for bit.

    Args:
        tensors: this rank's tensors (Float, Int or Bool; Autodiff tensors by value).
        op: ``"sum"`` or ``"mean"`` (Float tensors only).
        group: the process group (default: the initialized one).
        bucket_bytes: the bucket size in bytes (default 25 MiB, as DDP's ``bucket_cap_mb=25``).

    Returns:
        The reduced tensors, in order, each of its input's shape, dtype, kind and device.

    Raises:
        CollectiveError, KindError: as :func:`all_reduce`; ``bucket_bytes`` not a positive int.
    """
    if isinstance(bucket_bytes, bool) or not isinstance(bucket_bytes, int) or bucket_bytes <= 0:
        raise CollectiveError(f"all_reduce_many: bucket_bytes must be a positive int, got {bucket_bytes!r}.")
    return all_reduce_many_async(tensors, op, group, bucket_bytes=bucket_bytes, where="all_reduce_many").wait()


def broadcast(tensor: Tensor, src: int = 0, group: ProcessGroup | None = None) -> Tensor:
    """Rank ``src``'s ``tensor`` on every rank (Burn's ``broadcast``).

    Every rank passes a tensor of the same shape and dtype (the others' values are ignored) and
    gets a new tensor with ``src``'s values, on its own tensor's device, kind and dtype. Float, Int
    and Bool; an Autodiff tensor gives an untracked constant.

    Args:
        tensor: the values to send (on ``src``) or a tensor of their shape and dtype (elsewhere).
        src: the sending rank, ``0 <= src < world_size``.
        group: the process group (default: the initialized one).

    Raises:
        CollectiveError: no group initialized, ``src`` out of range, a tensor of another backend,
            or the engine failed.
    """
    g = current_group(group, "broadcast")
    if isinstance(src, bool) or not isinstance(src, int) or not 0 <= src < g.world_size:
        raise CollectiveError(
            f"broadcast: src must be a rank in [0, {g.world_size}) (world_size {g.world_size}); got {src!r}."
        )
    p, ib = _unwrap(tensor, g, "broadcast")
    g.stats.calls += 1
    g.stats.bytes += _nbytes(ib, p)
    return _wrap(_run(g, "broadcast", g._collectives.broadcast, p, src), tensor)


def all_gather(tensor: Tensor, group: ProcessGroup | None = None) -> list[Tensor]:
    """Every rank's ``tensor``, in rank order (Burn's ``all_gather``).

    Every rank passes a tensor of the same shape and dtype and gets ``world_size`` new tensors of
    that shape, on its own tensor's device, kind and dtype (stack them with ``Tensor.stack`` or
    ``Tensor.cat``). Float, Int and Bool; Autodiff tensors give untracked constants.

    Returns:
        ``[rank 0's tensor, rank 1's, ...]``.

    Raises:
        CollectiveError: no group initialized, a tensor of another backend, or the engine failed.
    """
    g = current_group(group, "all_gather")
    p, ib = _unwrap(tensor, g, "all_gather")
    g.stats.calls += 1
    g.stats.bytes += _nbytes(ib, p)
    return [_wrap(q, tensor) for q in _run(g, "all_gather", g._collectives.all_gather, p)]


def barrier(group: ProcessGroup | None = None) -> None:
    """Wait until every rank of the group has called ``barrier``.

    Raises:
        CollectiveError: no group initialized, or the engine failed (a peer gone, the timeout).
    """
    g = current_group(group, "barrier")
    g.stats.calls += 1
    _run(g, "barrier", g._collectives.barrier)
