"""Collective ops over a process group (DESIGN.md §10; after Burn's ``burn-collective``).

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

A backend without collectives raises :class:`~ember.CollectiveError` from
:func:`init_process_group`, naming itself and the backends that have them.
"""

from __future__ import annotations

from .._errors import CollectiveError
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
    "CollectiveError",
    "CollectiveStats",
    "ProcessGroup",
    "all_gather",
    "all_reduce",
    "all_reduce_many",
    "barrier",
    "broadcast",
    "destroy_process_group",
    "get_process_group",
    "get_rank",
    "get_world_size",
    "init_process_group",
    "is_initialized",
]
