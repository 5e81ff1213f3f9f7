"""``DeviceMesh``: the devices (or processes) one compiled program runs over, for data parallelism in one program.

A backend whose ``capabilities.spmd_devices`` is true returns one from :meth:`~ember.backend.Backend.device_mesh`
(several devices of this process), and with ``spmd_processes`` from :meth:`~ember.backend.Backend.process_mesh`
(one device per process of a multi-process run). The caller replicates the model and the optimizer over the mesh,
splits each batch along dim 0 with :meth:`DeviceMesh.shard`, and calls the step compiled by ``Backend.compile``: the
backend partitions the program over the mesh and all-reduces the gradients inside it (jax: GSPMD). ``ember_train``'s
``MultiDevice`` strategy, and ``DistributedDataParallel`` on such a backend, use nothing else of the backend.
"""

from __future__ import annotations

from typing import Any

__all__ = ["DeviceMesh"]


class DeviceMesh:
    """Several devices, or the processes of a run, that one compiled program spans (a 1-D mesh, axis ``"batch"``).

    ``obj`` below is a ``Tensor``, a ``Module``, an ``Optimizer`` (its state), ``GradientsParams``, or dataclasses,
    tuples, namedtuples, lists and dicts of them; each method returns a new object of the same structure (parameter
    ids, tracking and the tensors' Ember device kept) and leaves other values (Python numbers) as they are.

    Attributes:
        local_parts: the number of parts :meth:`shard` splits a tensor of this process into along dim 0 (the mesh's
            devices in this process: all of them for a device mesh, one for a process mesh, where each process's
            tensor is its block of the global one).
        multi_process: the mesh spans several processes (:meth:`local` then gives each its part back).
    """

    local_parts: int = 1
    multi_process: bool = False

    def replicate(self, obj: Any) -> Any:
        """``obj`` with every tensor copied onto every device of the mesh (across processes every process passes
        its copy, which must be equal on all: e.g. after a broadcast from rank 0).

        Raises:
            BackendError: a tensor of another backend.
        """
        raise NotImplementedError

    def shard(self, obj: Any) -> Any:
        """``obj`` with every tensor split along dim 0 over the mesh: device ``i`` holds rows ``[i * n / k, (i + 1) *
        n / k)`` of ``[n, ...]`` (``k = local_parts``). Across processes each process's ``[n, ...]`` is its block of
        the global ``[n * processes, ...]``; no data moves.

        Raises:
            ShapeError: a tensor of rank 0, or whose dim 0 is not a multiple of :attr:`local_parts`.
        """
        raise NotImplementedError

    def local(self, obj: Any, rows: int | None = None) -> Any:
        """``obj`` with each tensor spread over several processes replaced by this process's part: the value of a
        replicated one, this process's rows of a split one. ``rows``: the global batch's rows, so that a replicated
        per-sample result of ``rows`` rows also gives this process's block. Within one process: ``obj`` unchanged."""
        return obj

    def release(self) -> None:
        """After the last step over the mesh: the backend's own state that the compiled steps carried over the mesh
        (jax: the PRNG key, replicated over the processes) back to this process alone, so that random ops after it
        run here only. The default does nothing."""
