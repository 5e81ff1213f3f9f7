"""ember-backend-jax: Ember's backend on ``jax.Array`` (any jax device: cpu, gpu, tpu).

Users select it with ``ember.backend("jax")``; this package only needs to be installed. The
plugin registry imports this package to discover the entry point, so jax is imported lazily:
only when the backend is first used (or ``ember_jax.JaxBackend`` / ``ember_jax.jit`` is accessed).

``ember_jax.jit`` compiles a whole training or validation step (see :func:`ember_jax._jit.jit` and
``docs/jax.md``); ``device.backend.compile(step)`` gives the same on this backend. ``ember_jax.replicate`` and
``ember_jax.shard_batch`` spread a step over several devices of this process (data parallelism in one XLA
program, :mod:`ember_jax._sharding`); ``ember.distributed`` runs across processes (:mod:`ember_jax._collectives`),
and over ``ember_jax.process_mesh()`` the same two functions make one program span the processes of a
``jax.distributed`` run (``ember_jax.to_local`` gives back each process's part). Under a launcher
(``WORLD_SIZE > 1``) the backend joins the run itself before it creates its first device.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._backend import JaxBackend
    from ._jit import CompiledStep, jit
    from ._sharding import mesh, process_mesh, replicate, shard_batch, to_local

__all__ = ["JaxBackend", "jit", "CompiledStep", "replicate", "shard_batch", "mesh", "process_mesh", "to_local"]


def __getattr__(name: str) -> Any:
    if name == "JaxBackend":
        from ._backend import JaxBackend

        return JaxBackend
    if name in ("jit", "CompiledStep"):
        from . import _jit

        return getattr(_jit, name)
    if name in ("replicate", "shard_batch", "mesh", "process_mesh", "to_local"):
        from . import _sharding

        return getattr(_sharding, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
