"""Collectives for the jax backend: ``jax.distributed`` across processes, jax's own collectives inside.

:meth:`JaxCollectives.init` joins the run with ``jax.distributed.initialize(coordinator_address=
"MASTER_ADDR:MASTER_PORT", num_processes=world_size, process_id=rank)`` (world size 1 needs no
coordinator and skips it); on the CPU, cross-process collectives go through gloo
(``jax_cpu_collectives_implementation``, already jax 0.10's default, set to ``"gloo"`` when it is
``"none"``). jax must join before it touches any device: call ``init_process_group("jax")`` before
creating jax tensors or devices (jax raises otherwise, and so does this engine, saying so).

Each collective is one compiled XLA program over a 1-D ``Mesh`` of one device per process (the group's
device here, the device at the same local index in the other processes: :func:`ember_jax.process_mesh`, the
mesh a ``DistributedDataParallel`` step compiled as one program runs on too): this process's value becomes
its shard of a global ``[world_size, ...]`` array (``jax.make_array_from_single_device_arrays``,
no copy), and a jitted sum over dim 0 (``all_reduce``), selection of row ``src`` (``broadcast``) or
identity (``all_gather``) with a replicated output sharding lets GSPMD insert the all-reduce /
all-gather; each process reads its own replica. ``jax.jit`` caches the programs by shape and dtype.
The engine has no per-collective timeout of its own: ``timeout`` bounds the rendezvous
(``initialization_timeout``).
"""

from __future__ import annotations

import math
import os
from typing import Any

import jax
import jax.numpy as jnp
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from ember import BackendError, CollectiveError
from ember.backend import Backend, Collectives, Device

from ._sharding import BATCH_AXIS, process_mesh

__all__ = ["JaxCollectives", "auto_join"]

#: set while :meth:`JaxCollectives.init` runs: the device it makes must not start another join
_JOINING = False


def auto_join(backend: Backend) -> None:
    """Join the launcher's run before the jax backend makes its first device (``JaxBackend`` calls it).

    Under ``python -m ember_train.launch`` or ``torchrun`` (``WORLD_SIZE > 1`` in the environment), jax has to
    join with ``jax.distributed.initialize`` before it uses any device, which a training script should not have
    to know: the first device the backend makes calls ``ember.distributed.init_process_group(backend)`` (with
    ``RANK``, ``WORLD_SIZE``, ``MASTER_ADDR``, ``MASTER_PORT`` from the environment; timeout
    ``EMBER_DIST_TIMEOUT`` seconds, default 60) unless a group is initialized already. An explicit
    ``init_process_group("jax")`` before any device still works (the backend then finds the group and does
    nothing); ``EMBER_JAX_AUTO_JOIN=0`` turns the automatic join off, and so does ``EMBER_BACKEND`` naming another
    backend (a torch run whose script also makes a jax device: its rendezvous port is torch's).

    Raises:
        CollectiveError: the join failed (as :func:`ember.distributed.init_process_group`).
    """

    if _JOINING or os.environ.get("EMBER_JAX_AUTO_JOIN", "1") == "0":
        return
    if os.environ.get("EMBER_BACKEND", "jax") != "jax":  # the run is another backend's (e.g. torch's on its port)
        return
    try:
        world = int(os.environ.get("WORLD_SIZE", "1"))
    except ValueError:
        return
    if world <= 1 or jax.distributed.is_initialized():
        return
    from ember import distributed as dist

    if dist.is_initialized():
        return
    dist.init_process_group(backend, timeout=float(os.environ.get("EMBER_DIST_TIMEOUT", "60")))


def _sum0(a: Any) -> Any:
    return jnp.sum(a, axis=0, dtype=a.dtype)


class JaxCollectives(Collectives):
    """The jax engine of :mod:`ember.distributed` (see the module docstring)."""

    engine = "jax"

    def __init__(self) -> None:
        self._joined = False
        self._mesh: Mesh | None = None
        self._mine: Any = None
        self._world = 1
        self._jits: dict[Any, Any] = {}

    # ---- group
    def init(self, *, rank: int, world_size: int, local_rank: int, master_addr: str, master_port: int,
             timeout: float, backend: Backend, device: Device | None) -> Device:
        global _JOINING
        _JOINING = True
        try:
            return self._init(rank, world_size, master_addr, master_port, timeout, backend, device)
        finally:
            _JOINING = False

    def _init(self, rank: int, world_size: int, master_addr: str, master_port: int, timeout: float,
              backend: Backend, device: Device | None) -> Device:
        if world_size > 1:
            if jax.config.values.get("jax_cpu_collectives_implementation") in (None, "", "none"):
                jax.config.update("jax_cpu_collectives_implementation", "gloo")
            host = f"[{master_addr}]" if ":" in master_addr else master_addr
            try:
                jax.distributed.initialize(coordinator_address=f"{host}:{master_port}", num_processes=world_size,
                                           process_id=rank, initialization_timeout=max(1, math.ceil(timeout)))
            except RuntimeError as exc:
                raise CollectiveError(
                    f"jax.distributed.initialize failed (rank {rank} of {world_size} at {host}:{master_port}): "
                    f"{str(exc).rstrip('.')}. "
                    "jax must join a multi-process run before it uses any device: call "
                    "ember.distributed.init_process_group('jax') first in the program, before creating jax devices "
                    "or tensors; and check that every rank runs with the same address and port."
                ) from exc
            self._joined = True
        try:
            dev = device if device is not None else backend.device()
            mine = dev.handle
            try:
                self._mesh = process_mesh(mine)
            except BackendError as exc:
                raise CollectiveError(str(exc)) from None
            if self._mesh.size != world_size:
                raise CollectiveError(
                    f"jax sees {self._mesh.size} process(es) with {mine.platform} devices, expected {world_size}; "
                    "every rank must call init_process_group('jax') with the same world size."
                )
        except BaseException:
            # no group is formed: leave jax.distributed too, so that a corrected init_process_group can join again
            self._mesh = None
            if self._joined:
                self._joined = False
                try:
                    jax.distributed.shutdown()
                except Exception:  # noqa: BLE001, S110 - the join's own error is the one to report
                    pass
            raise
        self._mine = mine
        self._world = world_size
        return dev

    def destroy(self) -> None:
        self._jits.clear()
        self._mesh = None
        if self._joined:
            self._joined = False
            jax.distributed.shutdown()

    # ---- the programs
    def _program(self, key: Any, fn: Any, n_out: int) -> Any:
        jitted = self._jits.get(key)
        if jitted is None:
            replicated = NamedSharding(self._mesh, P())  # type: ignore[arg-type]
            out = replicated if n_out == 1 else (replicated,) * n_out
            jitted = self._jits[key] = jax.jit(fn, out_shardings=out)
        return jitted

    def _global(self, p: Any) -> Any:
        """The ``[world_size, *p.shape]`` array whose row ``rank`` is ``p`` (this process's shard)."""
        x = jnp.expand_dims(jax.device_put(p, self._mine), 0)
        sharding = NamedSharding(self._mesh, P(BATCH_AXIS))  # type: ignore[arg-type]
        return jax.make_array_from_single_device_arrays((self._world, *p.shape), sharding, [x])

    # ---- collectives
    def all_reduce(self, p: Any, *, owned: bool = False) -> Any:
        return self._program("sum", _sum0, 1)(self._global(p)).addressable_data(0)

    def broadcast(self, p: Any, src: int) -> Any:
        return self._program(("row", src), lambda a: a[src], 1)(self._global(p)).addressable_data(0)

    def all_gather(self, p: Any) -> list[Any]:
        w = self._world
        rows = self._program("rows", lambda a: tuple(a[i] for i in range(w)), w)(self._global(p))
        return [r.addressable_data(0) for r in rows]

    def barrier(self) -> None:
        self.all_reduce(jnp.zeros((), jnp.int32)).block_until_ready()
