"""Where a step's inputs live: nowhere special (one device), or over a backend's :class:`ember.backend.DeviceMesh`.

:class:`MeshPlacement` is what ``MultiDevice`` and ``DistributedDataParallel`` compiled as one program do with a mesh:
replicate the model and optimizer, split each batch along dim 0 (replicate a tensor whose dim 0 does not divide),
and give back this process's part of a step's results. The mesh comes from the backend
(``Backend.device_mesh`` / ``Backend.process_mesh``), so this file knows no array library.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ember import Tensor
from ember.backend import DeviceMesh

__all__ = ["Placement", "MeshPlacement"]


class Placement:
    """Everything where it is (one device of one process)."""

    def replicate(self, obj: Any) -> Any:
        return obj

    def place_batch(self, batch: Any) -> Any:
        return batch

    def local(self, obj: Any) -> Any:
        return obj

    def local_item(self, item: Any) -> Any:
        return item


class MeshPlacement(Placement):
    """The inputs of a step compiled as one program over ``mesh``.

    A batch's tensors are split along dim 0 over the mesh (``mesh.shard``); one whose dim 0 is not a multiple of
    ``mesh.local_parts`` (the last, partial batch of a ``MultiDevice`` fit) is replicated instead: every device
    computes it whole, which gives the same result. Across processes each process's batch is its block of the global
    batch, and :meth:`local_item` gives it its rows of the step's per-sample results back.

    Attributes:
        rows: dim 0 of the first split tensor of the last placed batch (the global batch's rows), else ``None``.
    """

    def __init__(self, mesh: DeviceMesh) -> None:
        self.mesh = mesh
        self.rows: int | None = None

    def replicate(self, obj: Any) -> Any:
        return self.mesh.replicate(obj)

    def place_batch(self, batch: Any) -> Any:
        """``batch`` with each tensor split over the mesh; dataclasses, tuples, lists and dicts are walked."""
        n = self.mesh.local_parts
        self.rows = None

        def put(t: Any) -> Any:
            if isinstance(t, Tensor):
                if t.rank >= 1 and t.shape[0] % n == 0:
                    out = self.mesh.shard(t)
                    if self.rows is None:
                        self.rows = out.shape[0]
                    return out
                return self.mesh.replicate(t)
            if dataclasses.is_dataclass(t) and not isinstance(t, type):
                return dataclasses.replace(t, **{f.name: put(getattr(t, f.name)) for f in dataclasses.fields(t)
                                                 if f.init})
            if isinstance(t, tuple) and hasattr(t, "_fields"):
                return type(t)(*(put(x) for x in t))
            if isinstance(t, (tuple, list)):
                return type(t)(put(x) for x in t)
            if isinstance(t, dict):
                return {k: put(v) for k, v in t.items()}
            return t

        return put(batch)

    def local(self, obj: Any) -> Any:
        return self.mesh.local(obj)

    def local_item(self, item: Any) -> Any:
        return self.mesh.local(item, self.rows)
