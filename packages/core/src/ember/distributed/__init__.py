"""Collective ops over a process group (ARCHITECTURE.md, "Distributed training"; after Burn's ``burn-collective``).

>>> import ember.distributed as dist
>>> group = dist.init_process_group("torch")          # doctest: +SKIP
>>> grads = dist.all_reduce_many(grads, op="mean")    # doctest: +SKIP

Every process of a data-parallel run calls :func:`init_process_group` (its defaults read torchrun's
``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR``, ``MASTER_PORT``), then the same
collectives in the same order. The ops are functional: they return new tensors and never write
their inputs. The engines are the backends' (:class:`ember.backend.Collectives`):

============  =====================================================================================
backend       engine
============  =====================================================================================
``torch``     ``torch.distributed``: gloo on CPU devices, nccl on CUDA devices
``numpy``     gloo through ``torch.distributed`` on zero-copy ``torch.from_numpy`` views (needs
              ember-backend-torch, which brings torch; else :class:`~ember.CollectiveError`)
``jax``       ``jax.distributed.initialize`` and jax's collectives in compiled programs (gloo for
              cross-process CPU collectives)
============  =====================================================================================

Overlap: :class:`Bucketer` (and :func:`all_reduce_many_async`) launch each bucket's all-reduce as
soon as its tensors are given, e.g. from ``ember.autodiff.grad_ready_hook`` during ``backward()``;
torch and numpy (``torch.distributed`` with ``async_op=True``) reduce it in the background while
the backward pass goes on; jax runs the buckets at ``wait()`` (its multi-process collectives are
compiled, blocking programs), with the same results.

A backend without collectives raises :class:`~ember.CollectiveError` from
:func:`init_process_group`, naming itself and the backends that have them.
"""

from __future__ import annotations

from .._errors import CollectiveError
from ._bucket import Bucketer, all_reduce_many_async
from ._group import (
    CollectiveStats,
    ProcessGroup,
    destroy_process_group,
    get_process_group,
    get_rank,
    get_world_size,
    init_process_group,
    is_initialized,
)
from ._ops import DEFAULT_BUCKET_BYTES, all_gather, all_reduce, all_reduce_many, barrier, broadcast

__all__ = [
    "DEFAULT_BUCKET_BYTES",
    "Bucketer",
    "CollectiveError",
    "CollectiveStats",
    "ProcessGroup",
    "all_gather",
    "all_reduce",
    "all_reduce_many",
    "all_reduce_many_async",
    "barrier",
    "broadcast",
    "destroy_process_group",
    "get_process_group",
    "get_rank",
    "get_world_size",
    "init_process_group",
    "is_initialized",
]
