"""``DistributedDataParallel``: one process per device, gradients averaged over the processes (the options; the
behaviour is :class:`~ember_train.strategies._ddp_method.DistributedDataParallelMethod`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .._errors import LearnerError
from ._base import LearningStrategy
from ._ddp_method import DistributedDataParallelMethod

__all__ = ["DistributedDataParallel"]


@dataclass(frozen=True)
class DistributedDataParallel(LearningStrategy):
    """One process per device, gradients averaged across the processes after each backward pass (Burn's
    ``LearningStrategy::DistributedDataParallel``, PyTorch's DDP).

    Start the processes with ``torchrun --nproc-per-node N train.py`` or ``python -m ember_train.launch --nproc N
    train.py``; each runs the same script. The Learner then:

    - joins the process group (:func:`ember.distributed.init_process_group` from the launcher's environment,
      unless one is initialized already), and broadcasts the parameters from rank 0 so that they start equal;
    - shards the data loaders by rank (``DataLoader.shard(rank, world_size)``: the loader's ``batch_size`` is the
      per-rank batch, the global batch is ``batch_size * world_size``);
    - averages the gradients over the ranks (bucketed: one collective per ``bucket_bytes`` of gradients) before
      the optimizer step, so every rank applies the same update and the optimizer states stay equal. With
      ``overlap`` on an eager step whose engine runs collectives asynchronously (torch and numpy:
      torch.distributed's gloo or nccl), each bucket's all-reduce is launched during the backward pass, as soon
      as its gradients are final (``ember.autodiff.grad_ready_hook`` feeding an ``ember.distributed.Bucketer``;
      buckets in reverse parameter order, as PyTorch DDP's reducer), and the step waits for them after the
      backward pass. By default (``overlap=None``) it overlaps where communication has hardware of its own to run
      on: nccl (GPUs), or ranks on several machines (a network). With every rank on the CPUs of one machine
      (gloo, ``LOCAL_WORLD_SIZE == WORLD_SIZE``), gloo's threads could only take cores from the backward passes:
      measured with ``bench/distributed.py`` on 2 cores, the overlapped guide step was 11-15 % slower, so there
      it reduces after the backward pass. A compiled step (jax, ``LearnerBuilder.compile()``) is one traced
      program and jax's multi-process collectives block, so there the gradients are reduced after the backward
      pass with ``all_reduce_many(..., op="mean")``;
    - sums the metrics' numerators and denominators over the ranks before logging, so the logged values are the
      single-process ones of the global batch (except when the last global batch holds fewer items than there are
      ranks: a rank left without items repeats the last one, which is counted again);
    - writes checkpoints, metric logs, the summary, plots, trackers and the dashboard on rank 0 only.

    On a backend that compiles one program over the processes (``Backend.capabilities.spmd_processes``: jax), with
    compiled steps (the default), each step is instead ONE compiled program over all ranks: the model and optimizer
    state replicated over the backend's ``process_mesh(device)``, each rank's batch its block of the global
    batch, the gradient all-reduce inserted by XLA inside the program (no collective call per step; the ranks' stop
    flags ride in it too). It falls back to the two halves around ``all_reduce_many`` with ``compile(False)``,
    gradient accumulation, or a last partial global batch that does not split evenly over the ranks (the choice is
    in ``experiment.log``). Under a launcher the jax backend joins the run by itself before its first device, so the
    script needs no ``init_process_group("jax")`` call (one before any jax device still works).

    Args:
        timeout: seconds a collective may wait for the other ranks (the timeout of the process group the Learner
            initializes; a group initialized before ``fit`` keeps its own). Default 1800 s, PyTorch's default
            process-group timeout: a rank also waits in its next collective while rank 0 alone writes checkpoints,
            the summary and plots, so the timeout must cover the slowest of those, not just a step. A dead rank is
            still found within seconds under a launcher (``ember_train.launch`` and torchrun watch the ranks and
            stop the others). Without one, on torch and numpy a survivor fails within ``timeout`` with a
            ``LearnerError`` naming the peers (gloo bounds each collective by it; nccl's watchdog aborts the
            process): pass a smaller value when the ranks run unwatched and rank 0's writes are quick. On jax the
            timeout bounds the rendezvous only: a collective has none (see ``ember.distributed.init_process_group``).
        bucket_bytes: the gradient bytes reduced by one collective (PyTorch DDP's 25 MiB).
        backend: the Ember backend of the process group; ``None`` takes the training device's.
        overlap: ``True`` launches the buckets' all-reduces during the backward pass where the step and the engine
            allow (see above); ``False`` reduces every gradient after the backward pass; ``None`` (the default)
            overlaps on nccl and across machines, not between CPU ranks of one machine.
        first_bucket_bytes: the size of the first bucket of the overlapped reduction (the last parameters'
            gradients, final first), at most ``bucket_bytes``: PyTorch DDP's 1 MiB, so that the first collective
            starts early in the backward pass.
    """

    timeout: float = 1800.0
    bucket_bytes: int = 25 * 2**20
    backend: str | None = None
    overlap: bool | None = None
    first_bucket_bytes: int = 2**20

    def __post_init__(self) -> None:
        if not self.timeout > 0:
            raise LearnerError(f"DistributedDataParallel: timeout must be > 0 seconds, got {self.timeout!r}.")
        if not isinstance(self.bucket_bytes, int) or self.bucket_bytes < 1:
            raise LearnerError(f"DistributedDataParallel: bucket_bytes must be an int >= 1, got {self.bucket_bytes!r}.")
        if not isinstance(self.first_bucket_bytes, int) or self.first_bucket_bytes < 1:
            raise LearnerError(
                f"DistributedDataParallel: first_bucket_bytes must be an int >= 1, got {self.first_bucket_bytes!r}.")

    def learning_method(self) -> DistributedDataParallelMethod:
        return DistributedDataParallelMethod(self)

    def check(self, devices: list[Any]) -> None:
        """Raises:
            LearnerError: several devices (this rank trains on one), or a backend without collective ops
                (``capabilities.collectives``).
        """
        super().check(devices)
        inner = getattr(devices[0], "inner", devices[0]).backend
        if not inner.capabilities.collectives:
            from ember import install_command

            raise LearnerError(
                f"LearnerBuilder.build: DistributedDataParallel needs collective ops, and the {inner.name!r} "
                "backend has none; use torch (gloo/nccl), numpy with ember-backend-torch installed "
                f"(`{install_command('ember-backend-torch')}`), or jax."
            )
