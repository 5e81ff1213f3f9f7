"""Gradient buckets: :class:`Bucketer` and :func:`all_reduce_many_async` (PyTorch DDP's reducer).

A :class:`Bucketer` plans the buckets from the tensors' shapes and dtypes before their values
exist, takes the values one by one as they become ready (:meth:`Bucketer.ready`, e.g. from
``ember.autodiff.grad_ready_hook`` during ``backward()``), launches a bucket's all-reduce on the
engine as soon as the bucket is full, and :meth:`Bucketer.wait` gives the reduced tensors.
:func:`~ember.distributed.all_reduce_many` is a bucketer given every tensor at once, then waited
on: the same buckets give the same sums, bit for bit, whichever way they were launched.

Buckets are launched in bucket order on every rank (a full bucket waits for the ones before it,
as in PyTorch's reducer), so the ranks' collectives match even when tensors become ready in
another order. On an engine with asynchronous collectives (``Collectives.supports_async``:
torch.distributed on gloo or nccl, so the torch and numpy backends) a launched bucket is reduced
while the caller goes on; elsewhere (jax's multi-process engine, whose collectives are compiled
programs) launching is deferred to :meth:`Bucketer.wait`, where the buckets run one after the
other, synchronously: the results are the same, nothing overlaps.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._errors import CollectiveError, DTypeError, ShapeError
from .._kind import Bool
from ..tensor import Tensor
from ._engine_calls import DEFAULT_BUCKET_BYTES, _check_mean, _check_op, _nbytes, _numel, _run, _unwrap, _wrap
from ._group import ProcessGroup, current_group

__all__ = ["Bucketer", "all_reduce_many_async"]


class Bucketer:
    """Buckets of tensors all-reduced over the ranks, each launched as soon as it is full.

    The plan: tensors of the same device and dtype are packed, in the order of ``tensors``, into
    buckets of at most ``bucket_bytes`` (the first bucket of each device and dtype at most
    ``first_bucket_bytes``; a larger tensor gets a bucket of its own); a Bool tensor (reduced as a
    logical or) is a bucket of its own. Each bucket is flattened into one buffer and reduced with
    ONE engine call: ``group.stats.calls`` grows by one and ``group.stats.bytes`` by its size when
    it is launched. Every rank must build the same plan (same shapes and dtypes, same order).

    Args:
        tensors: the tensors to reduce, or tensors of the same shapes, dtypes, kinds and devices
            (e.g. the parameters whose gradients will be given; Autodiff tensors by value).
        op: ``"sum"`` or ``"mean"`` (the sum divided by ``world_size``, Float only).
        group: the process group (default: the initialized one).
        bucket_bytes: the bucket size in bytes (default 25 MiB, PyTorch DDP's ``bucket_cap_mb``).
        first_bucket_bytes: the size of the first bucket (default ``bucket_bytes``; PyTorch DDP
            uses 1 MiB so that the first reduction starts early in the backward pass).
        where: the op named in error messages.

    Raises:
        CollectiveError: no group, an unknown ``op``, a bucket size that is not a positive int, a
            tensor of another backend than the group's.
        KindError: ``op="mean"`` with an Int or Bool tensor.
    """

    def __init__(self, tensors: Sequence[Tensor], op: str = "sum", group: ProcessGroup | None = None, *,
                 bucket_bytes: int = DEFAULT_BUCKET_BYTES, first_bucket_bytes: int | None = None,
                 where: str = "Bucketer") -> None:
        g = self.group = current_group(group, where)
        _check_op(op, where)
        for name, v in (("bucket_bytes", bucket_bytes), ("first_bucket_bytes", first_bucket_bytes)):
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v <= 0):
                raise CollectiveError(f"{where}: {name} must be a positive int, got {v!r}.")
        first = bucket_bytes if first_bucket_bytes is None else first_bucket_bytes
        self.op = op
        self._likes = list(tensors)
        #: per tensor: (kind, inner backend, shape)
        self._meta: list[tuple[Any, Any, tuple[int, ...]]] = []
        self._dtypes: list[Any] = []  # per tensor: the inner dtype
        self._bucket_of: list[int] = []
        self.buckets: list[list[int]] = []
        """The plan: the tensors' indices in each bucket, in launch order."""
        open_buckets: dict[tuple[Any, Any], int] = {}
        open_bytes: dict[tuple[Any, Any], int] = {}
        seen: set[tuple[Any, Any]] = set()
        for i, t in enumerate(self._likes):
            _check_mean(t, op, where)
            p, ib = _unwrap(t, g, where)
            self._meta.append((t.kind, ib, tuple(ib.shape(p))))
            self._dtypes.append(ib.dtype(p))
            if t.kind is Bool:
                self._bucket_of.append(len(self.buckets))
                self.buckets.append([i])
                continue
            key = (t.device.inner, ib.dtype(p))
            nb = _nbytes(ib, p)
            b = open_buckets.get(key)
            cap = bucket_bytes if key in seen else first
            if b is None or open_bytes[key] + nb > cap:
                if b is not None:
                    seen.add(key)
                b = open_buckets[key] = len(self.buckets)
                open_bytes[key] = 0
                self.buckets.append([])
            self.buckets[b].append(i)
            self._bucket_of.append(b)
            open_bytes[key] += nb
        self._values: list[Any] = [None] * len(self._likes)
        self._missing = [len(b) for b in self.buckets]
        self._works: list[Any] = []
        self._next = 0  # the next bucket to launch
        self._waited = False

    @property
    def launched(self) -> int:
        """How many buckets have been launched so far."""
        return self._next

    def ready(self, index: int, tensor: Tensor) -> None:
        """Give the value of tensor ``index`` (same shape, dtype and kind as planned); launch every
        bucket that is now full and whose predecessors are launched.

        The value is checked against the plan before anything changes: a refused value leaves the
        bucketer as it was (the right value can still be given).

        Raises:
            ShapeError: ``tensor``'s shape is not the planned one (both are named).
            DTypeError: ``tensor`` of another kind or dtype than planned (both are named).
            CollectiveError: ``index`` out of range or given twice, ``wait()`` already called, ``tensor`` of
                another backend than the group's, or the engine failed to launch.
        """
        if self._waited:
            raise CollectiveError(f"Bucketer.ready: wait() was already called; a Bucketer reduces its tensors "
                                  f"once, make a new one for tensor {index}'s next value.")
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(self._likes):
            raise CollectiveError(f"Bucketer.ready: index {index!r} is out of range [0, {len(self._likes)}).")
        if self._values[index] is not None:
            raise CollectiveError(f"Bucketer.ready: tensor {index} was given twice.")
        p, ib = _unwrap(tensor, self.group, "Bucketer.ready")
        kind, _, shape = self._meta[index]
        found = tuple(ib.shape(p))
        if found != shape:
            raise ShapeError(
                f"Bucketer.ready: tensor {index} was planned with shape {list(shape)}, got {list(found)}; give "
                "the value whose shape the Bucketer was built with (every rank must reduce the same shapes)."
            )
        if tensor.kind is not kind or ib.dtype(p) != self._dtypes[index]:
            raise DTypeError(
                f"Bucketer.ready: tensor {index} was planned as {kind} {self._dtypes[index]}, got {tensor.kind} "
                f"{ib.dtype(p)}; convert it (e.g. .float() or the backend's float dtype) before giving it."
            )
        self._values[index] = p
        self._missing[self._bucket_of[index]] -= 1
        while self._next < len(self.buckets) and self._missing[self._next] == 0:
            self._launch(self._next)
            self._next += 1

    def _launch(self, b: int) -> None:
        g, idx = self.group, self.buckets[b]
        kind, ib, _ = self._meta[idx[0]]
        eng = g._collectives
        g.stats.calls += 1
        if len(idx) == 1:
            p = self._values[idx[0]]
            g.stats.bytes += _nbytes(ib, p)
            if kind is Bool:
                work = _run(g, "all_reduce_many", eng.all_reduce_async, ib.bool_into_int(p), owned=True)
            else:
                work = _run(g, "all_reduce_many", eng.all_reduce_async, p, owned=False)
        else:
            flat = ib.cat([ib.reshape(self._values[i], (_numel(self._meta[i][2]),)) for i in idx], 0)
            g.stats.bytes += _nbytes(ib, flat)
            work = _run(g, "all_reduce_many", eng.all_reduce_async, flat, owned=True)
        self._works.append(work)

    def wait(self) -> list[Tensor]:
        """The reduced tensors, in order, each of its planned shape, dtype, kind and device.

        Launches the buckets not launched yet (all tensors must have been given), then waits for
        every bucket in launch order. A Bucketer is waited on once: its buffers are the engine's
        until then, and its results are handed over.

        Raises:
            CollectiveError: a tensor was never given, ``wait()`` was already called, or the engine
                failed (a peer gone, the timeout).
        """
        if self._waited:
            raise CollectiveError("Bucketer.wait: already waited; the reduced tensors were returned by the first "
                                  "wait() (a Bucketer reduces once: make a new one for new values).")
        missing = [i for i, v in enumerate(self._values) if v is None]
        if missing:
            raise CollectiveError(
                f"Bucketer.wait: tensors {missing[:8]}{' ...' if len(missing) > 8 else ''} were never given with "
                "ready(index, tensor); every planned tensor must be given before wait()."
            )
        g, ws = self.group, self.group.world_size
        self._waited = True
        out: list[Any] = [None] * len(self._likes)
        for b, work in enumerate(self._works):
            idx = self.buckets[b]
            kind, ib, shape = self._meta[idx[0]]
            r = _run(g, "all_reduce_many", work.wait)
            if kind is Bool:
                out[idx[0]] = ib.greater(r, 0)
                continue
            if self.op == "mean" and ws > 1:
                r = ib.div(r, float(ws))
            if len(idx) == 1:
                out[idx[0]] = r
                continue
            o = 0
            for i in idx:
                s = self._meta[i][2]
                n = _numel(s)
                out[i] = ib.reshape(ib.slice(r, (slice(o, o + n, 1),)), s)
                o += n
        self._works = []
        return [_wrap(p, t) for p, t in zip(out, self._likes)]


def all_reduce_many_async(tensors: Sequence[Tensor], op: str = "sum", group: ProcessGroup | None = None, *,
                          bucket_bytes: int = DEFAULT_BUCKET_BYTES, where: str = "all_reduce_many_async") -> Bucketer:
    """:func:`~ember.distributed.all_reduce_many` launched now, waited for later: every bucket is
    launched before it returns; ``.wait()`` on the result gives the reduced tensors (bit for bit
    those of ``all_reduce_many``). On engines without asynchronous collectives (jax) the buckets
    run at ``wait()``. ``where`` is the op named in error messages.

    Raises:
        CollectiveError, KindError: as :func:`~ember.distributed.all_reduce_many`.
    """
    tensors = list(tensors)
    b = Bucketer(tensors, op, group, bucket_bytes=bucket_bytes, where=where)
    for i, t in enumerate(tensors):
        b.ready(i, t)
    return b
