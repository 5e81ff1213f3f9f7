"""``JaxMesh``: the jax backend's :class:`ember.backend.DeviceMesh` (``JaxBackend.device_mesh`` / ``process_mesh``).

The contract's face of :mod:`ember_jax._sharding`: a caller that knows only ``ember.backend`` (``ember_train``'s
``MultiDevice`` and ``DistributedDataParallel`` strategies) replicates, shards and takes back its part through it,
never importing ``ember_jax``.
"""

from __future__ import annotations

from typing import Any

import jax
from jax.sharding import Mesh

from ember.backend.contract import DeviceMesh

from ._sharding import replicate, shard_batch, to_local

__all__ = ["JaxMesh"]


class JaxMesh(DeviceMesh):
    """A 1-D ``jax.sharding.Mesh`` (axis ``"batch"``) as a :class:`~ember.backend.DeviceMesh`.

    Args:
        mesh: :func:`ember_jax.mesh` of this process's devices, or :func:`ember_jax.process_mesh`.
        backend: the jax backend whose PRNG key a compiled step carries over the mesh (:meth:`release`).
    """

    def __init__(self, mesh: Mesh, backend: Any) -> None:
        self.mesh = mesh
        self.backend = backend
        self.multi_process = bool(mesh.is_multi_process)
        self.local_parts = sum(1 for d in mesh.devices.flat if d.process_index == jax.process_index())

    def replicate(self, obj: Any) -> Any:
        """:func:`ember_jax.replicate` over this mesh."""
        return replicate(obj, self.mesh)

    def shard(self, obj: Any) -> Any:
        """:func:`ember_jax.shard_batch` over this mesh."""
        return shard_batch(obj, self.mesh)

    def local(self, obj: Any, rows: int | None = None) -> Any:
        """:func:`ember_jax.to_local` across processes; ``obj`` unchanged within one."""
        return to_local(obj, rows) if self.multi_process else obj

    def release(self) -> None:
        """Across processes: the backend's PRNG key (replicated over the processes by the compiled steps) back to
        this process's copy."""
        keys = self.backend._keys
        if self.multi_process and keys.key is not None:
            keys.key = to_local(keys.key)

    def __repr__(self) -> str:
        return f"JaxMesh({list(self.mesh.devices.flat)!r})"
