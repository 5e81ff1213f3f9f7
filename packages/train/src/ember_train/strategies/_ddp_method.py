"""What the Learner's loop does under ``DistributedDataParallel``: :class:`DistributedDataParallelMethod`.

The process group and its collectives are :class:`ember_train._parallel.Replicas`'s; this file says when the loop
uses them. The training step runs one of two ways, chosen once per fit by :meth:`~DistributedDataParallelMethod.
plan_step` and logged:

- split at the gradients: each rank's forward and backward pass, the gradients averaged over the ranks (during the
  backward pass where the step and engine allow, ``Replicas.grads_overlapped``; else after it,
  ``Replicas.reduce_grads``), then the same optimizer update on every rank;
- one compiled program over the ranks, where the backend compiles one (``capabilities.spmd_processes``): the model
  and optimizer replicated over ``Backend.process_mesh``, each rank's batch its block of the global batch, the
  all-reduce inside the program.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from ember import Float, Tensor

from .._app_logger import LOGGER
from .._parallel import DdpOptions, Replicas, splits_evenly
from ._placement import MeshPlacement
from ._single import SingleDeviceMethod

__all__ = ["DistributedDataParallelMethod"]


class DistributedDataParallelMethod(SingleDeviceMethod):
    """One rank of a ``DistributedDataParallel`` fit (see the module docstring).

    Args:
        options: the :class:`~ember_train.DistributedDataParallel` strategy (timeout, buckets, overlap).

    Attributes:
        replicas: the process group and the collectives the loop needs.
        one_program: the training step is one compiled program over the ranks (set by :meth:`plan_step`).
    """

    def __init__(self, options: DdpOptions) -> None:
        super().__init__()
        self.replicas = Replicas(options)
        self.one_program = False

    # -- the run ---------------------------------------------------------------------------------------
    def start(self, device: Any) -> None:
        """Join the process group (``Replicas.start``)."""
        super().start(device)
        self.replicas.start(device)
        self.rank, self.world_size = self.replicas.rank, self.replicas.world_size

    def log_stats(self) -> None:
        self.replicas.log_stats()

    def close(self) -> None:
        self.replicas.close()

    # -- preparing -------------------------------------------------------------------------------------
    def prepare_loaders(self, train: Any, valid: Any) -> tuple[Any, Any]:
        """Each loader sharded by rank (``loader.shard(rank, world_size)``), then made on the training device."""
        return super().prepare_loaders(self.replicas.shard(train, "training"), self.replicas.shard(valid, "validation"))

    def metric_sum(self) -> Callable[[list[float]], list[float]] | None:
        return self.replicas.sum

    def prepare_model(self, model: Any) -> Any:
        """Rank 0's parameters on every rank (a broadcast each)."""
        return self.replicas.sync_model(model)

    def plan_step(self, compile: bool, accumulating: bool, train: Any, valid: Any) -> bool:
        """One program over the ranks where the backend spans processes (``capabilities.spmd_processes``) and there
        are several ranks, the steps are compiled, gradients are not accumulated and every rank's batch has the same
        rows at each step (``splits_evenly``); else the step is split at the gradients. The choice is logged."""
        caps = self.device.backend.capabilities
        if self.world_size < 2 or not caps.spmd_processes:
            return True
        why = ("the steps are not compiled (LearnerBuilder.compile(False))" if not (compile and caps.compiles_steps)
               else "gradients are accumulated" if accumulating
               else "the last batch's rows are not split evenly over the ranks" if not (
                   splits_evenly(train, self.world_size) and splits_evenly(valid, self.world_size))
               else None)
        if why is not None:
            LOGGER.info("DistributedDataParallel: the step is split at the gradients, averaged by a collective "
                        "between the halves: %s.", why)
            return True
        LOGGER.info("DistributedDataParallel: the step is one compiled program over the %d ranks (%s; the compiler "
                    "all-reduces the gradients inside it).", self.world_size, self.device.inner.backend.name)
        self.one_program = True
        return False

    def prepare(self, model: Any, optim: Any, steps: Any) -> tuple[Any, Any]:
        if self.one_program:
            self.placement = MeshPlacement(self.device.backend.process_mesh(self.device))
        return super().prepare(model, optim, steps)

    @property
    def seed_rank(self) -> int:
        """This rank (its samples draw their own dropout masks); 0 for one program, which draws for the global
        batch from one key, as one process."""
        return 0 if self.one_program else self.rank

    # -- the epoch -------------------------------------------------------------------------------------
    def train_step(self, steps: Any, model: Any, optim: Any, batch: Any, lr: Any,
                   stop: Callable[[], bool]) -> tuple[Any, Any]:
        """This rank's step, gradients averaged over the ranks; this rank's ``stop()`` rides with them."""
        if self.one_program:
            return self._one_program_step(steps, model, optim, batch, lr, stop)
        replicas = self.replicas
        if replicas.overlaps(steps.compiled):  # the buckets' all-reduces launched during the backward pass
            grads, item = replicas.grads_overlapped(model, partial(steps.grad, model, batch), stop)
        else:
            grads, item = steps.grad(model, batch)
            grads = replicas.reduce_grads(grads, stop=stop())
        return steps.update(model, optim, grads, lr), item

    def _one_program_step(self, steps: Any, model: Any, optim: Any, batch: Any, lr: Any,
                          stop: Callable[[], bool]) -> tuple[Any, Any]:
        """The step as one program over the ranks: ``batch`` is already this rank's block of the global batch, the
        model and optimizer replicated; each rank's stop flag, split over the ranks like a batch, is summed inside
        the program. The item comes back as this rank's part (its rows; the loss is the global batch's, which the
        metrics' weighted mean over the ranks keeps)."""
        placement = self.placement
        assert isinstance(placement, MeshPlacement)
        flag = Tensor.from_data(np.asarray([1.0 if stop() else 0.0]), steps.device.inner, Float)
        model, item, seen = steps.train(model, optim, batch, lr, placement.mesh.shard(flag))
        self.replicas.stop_seen = float(placement.local(seen).to_numpy().reshape(-1)[0]) > 0
        return model, placement.local_item(item)

    def reduce_grads(self, grads: Any) -> Any:
        """The accumulated gradients averaged over the ranks."""
        return self.replicas.reduce_grads(grads)

    def stop_after_step(self, stop: Callable[[], bool]) -> bool:
        """The ranks' agreement that rode with the step's gradients (no collective of its own)."""
        return self.replicas.stop_seen

    def agree(self, flag: bool) -> bool:
        return self.replicas.any(flag)

    def from_main(self, flag: bool) -> bool:
        return self.replicas.from_main(flag)

    def end_epoch(self, model: Any) -> Any:
        """Split step: each rank's running states (batch norm) saw its shard only, so their mean on every rank.
        One program: already equal."""
        return model if self.one_program else self.replicas.sync_running_states(model)

    def gather(self, state: dict[str, Any]) -> list[dict[str, Any]]:
        """Every rank's ``state`` (a collective every rank calls)."""
        return [json.loads(t) for t in self.replicas.gather_texts(json.dumps(state))]

    def finish(self, model: Any, steps: Any) -> Any:
        """One program: this process's copy of the trained model and of the backend's random state."""
        if not self.one_program:
            return model
        LOGGER.info("DistributedDataParallel: the training step ran as %d compiled program(s) over the ranks "
                    "(%d trace(s))", getattr(steps.train, "cache_size", 0), getattr(steps.train, "trace_count", 0))
        placement = self.placement
        assert isinstance(placement, MeshPlacement)
        model = placement.local(model)
        placement.mesh.release()
        return model
