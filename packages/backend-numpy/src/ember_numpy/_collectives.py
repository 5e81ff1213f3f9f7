"""Collectives for the numpy backend: gloo through ``torch.distributed`` on zero-copy views.

Why gloo through torch, and not mpi4py or a protocol of our own: gloo is a maintained collective
engine (ring all-reduce, tuned for CPU) that ships inside every torch wheel; it needs no ``mpirun``
and no MPI library on the machine; and its rendezvous is torchrun's (``MASTER_ADDR``,
``MASTER_PORT``, ``RANK``, ``WORLD_SIZE``), so numpy, torch and jax runs start the same way.
``torch.from_numpy`` and ``Tensor.numpy()`` share memory, so values are not copied on the way in or
out; an input is copied only where the contract needs a fresh buffer (``all_reduce`` and
``broadcast`` write their result in place; the input is never written).

The engine code lives once, in ember-backend-torch (:mod:`ember_torch._collectives`); this module
subclasses it with the numpy conversions. It is imported lazily by
:meth:`ember_numpy.NumpyBackend.collectives`, so ember-backend-numpy does not depend on torch:
install ``ember-backend-numpy[collectives]`` (which adds ember-backend-torch, and so torch) to get them.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from ember_torch._collectives import TorchDistributedCollectives

__all__ = ["NumpyGlooCollectives"]


class NumpyGlooCollectives(TorchDistributedCollectives):
    """:class:`ember_torch._collectives.TorchDistributedCollectives` on numpy primitives (always gloo:
    the numpy backend's one device is the CPU)."""

    def _torch(self, p: Any, copy: bool) -> torch.Tensor:
        a = np.asarray(p)  # a rank-0 result may be a numpy scalar
        if copy or not a.flags.c_contiguous or not a.flags.writeable:
            # torch.from_numpy warns on read-only arrays (records' zero-copy data): hand it a copy
            a = np.array(a, copy=True, order="C")
        return torch.from_numpy(a)

    def _back(self, t: torch.Tensor) -> Any:
        return t.numpy()
