"""The process group of a ``DistributedDataParallel`` fit and its collectives, in one object per ``fit``.

:class:`Replicas` (held by :class:`ember_train.strategies.DistributedDataParallelMethod`, which says when the Learner's
loop calls it) joins the process group, makes the parameters equal (broadcast from rank 0), shards the loaders,
averages the gradients (:meth:`Replicas.grads_overlapped` during the backward pass on eager steps whose engine runs
collectives asynchronously, :meth:`Replicas.reduce_grads` after it otherwise), sums the metrics' host values and
makes the ranks agree on stopping. Every rank calls each method at the same point of the loop, in the same order
(the collectives' rule): the Learner's loop is the same on every rank because every rank runs the same number of
steps (``DataLoader.shard``).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Protocol

import numpy as np

from ember import Float, Tensor

from ._app_logger import LOGGER
from ._errors import LearnerError

__all__ = ["DdpOptions", "Replicas", "splits_evenly"]


class DdpOptions(Protocol):
    """The options :class:`Replicas` reads: those of :class:`~ember_train.DistributedDataParallel`."""

    @property
    def timeout(self) -> float: ...
    @property
    def bucket_bytes(self) -> int: ...
    @property
    def backend(self) -> str | None: ...
    @property
    def overlap(self) -> bool | None: ...
    @property
    def first_bucket_bytes(self) -> int: ...


def _lift(t: Tensor, like: Tensor) -> Tensor:
    """``t`` (a collective's result, possibly on the inner device) on ``like``'s device."""
    if t.device is like.device:
        return t
    if like.device.inner is t.device:
        return Tensor.from_inner(t, like.device)
    return t.to_device(like.device)


def _one_machine(world_size: int) -> bool:
    """Whether every rank runs on this machine: the launcher's (and torchrun's) ``LOCAL_WORLD_SIZE`` equals the
    world size; unknown (no launcher variable) counts as several machines."""
    try:
        return int(os.environ["LOCAL_WORLD_SIZE"]) >= world_size
    except (KeyError, ValueError):
        return False


class Replicas:
    """The process group of a ``DistributedDataParallel`` fit and the collectives the Learner needs.

    Raises (from :meth:`start`):
        LearnerError: the training backend has no collective ops, the group cannot be joined, or the group
            (an initialized one, or ``DistributedDataParallel(backend=...)``'s) runs on another backend than the
            training device's inner backend.
    """

    def __init__(self, strategy: DdpOptions) -> None:
        self.strategy = strategy
        self.group: Any = None
        self.rank = 0
        self.world_size = 1
        self._owned = False
        self._device: Any = None
        #: whether any rank asked to stop, as agreed by the last :meth:`reduce_grads` given ``stop``
        self.stop_seen = False

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    # -- the group -------------------------------------------------------------------------------------
    def start(self, device: Any) -> None:
        """Join the process group (from the launcher's environment) unless one is initialized already."""
        from ember import distributed as dist

        backend = device.inner.backend
        if not backend.capabilities.collectives:
            from ember import install_command

            raise LearnerError(
                f"DistributedDataParallel: the {backend.name!r} backend has no collective ops, so it cannot average "
                "gradients across processes; train with a backend that has them (torch, numpy with ember-backend-torch "
                f"installed: `{install_command('ember-backend-torch')}`, jax) or without the "
                "DistributedDataParallel strategy."
            )
        if dist.is_initialized():
            self.group = dist.get_process_group()
        else:
            try:
                self.group = dist.init_process_group(self.strategy.backend or device.inner,
                                                     timeout=self.strategy.timeout)
            except Exception as exc:
                raise LearnerError(
                    f"DistributedDataParallel: could not join the process group ({type(exc).__name__}: {exc}). Start "
                    "the ranks with `python -m ember_train.launch --nproc N train.py` or `torchrun --nproc-per-node N "
                    "train.py` (they set RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT)."
                ) from exc
            self._owned = True
        found = getattr(self.group, "backend", None)
        if found != backend.name:
            how = ("initialized before fit, by ember.distributed.init_process_group or EMBER_BACKEND"
                   if not self._owned else "named by DistributedDataParallel(backend=...)")
            self.close()
            raise LearnerError(
                f"DistributedDataParallel: the process group runs on the {found!r} backend ({how}), but the model "
                f"trains on {device} (inner backend {backend.name!r}); its collectives only take tensors of the "
                f"group's backend. Initialize the group on the training device's backend "
                f"(ember.distributed.init_process_group({backend.name!r}) or leave DistributedDataParallel(backend="
                f"None)), or train on a device of the {found!r} backend."
            )
        self._device = self.group.device
        self.rank = int(self.group.rank)
        self.world_size = int(self.group.world_size)
        LOGGER.info("DistributedDataParallel: rank %d of %d (%s, engine %s)", self.rank, self.world_size,
                    getattr(self.group, "backend", "?"), getattr(self.group, "engine", "?"))

    def log_stats(self) -> None:
        """Log what went through the group's collectives (calls and bytes this rank sent) to the experiment log."""
        stats = getattr(self.group, "stats", None)
        if stats is not None:
            LOGGER.info("DistributedDataParallel: %d collective calls, %d bytes sent by rank %d", stats.calls,
                        stats.bytes, self.rank)

    def close(self) -> None:
        """Leave the group when :meth:`start` joined it."""
        if self._owned:
            from ember import distributed as dist

            try:
                dist.destroy_process_group(self.group)
            except Exception as exc:  # noqa: BLE001 - leaving must not hide the real error
                LOGGER.log(logging.WARNING, "Leaving the process group failed: %s", exc)
            self._owned = False

    # -- data --------------------------------------------------------------------------------------------
    def shard(self, loader: Any, what: str) -> Any:
        """``loader.shard(rank, world_size)``; a loader that cannot shard is an error (every rank would train on
        the whole dataset)."""
        if loader is None or self.world_size == 1:
            return loader
        shard = getattr(loader, "shard", None)
        if not callable(shard):
            raise LearnerError(
                f"DistributedDataParallel: the {what} loader ({type(loader).__name__}) has no shard(rank, world_size), "
                "so every rank would see the same batches; use an ember.data.DataLoader."
            )
        if getattr(loader, "world_size", 1) not in (1, self.world_size):
            raise LearnerError(
                f"DistributedDataParallel: the {what} loader is sharded for {loader.world_size} ranks, the process "
                f"group has {self.world_size}; leave sharding to the Learner."
            )
        return shard(self.rank, self.world_size)

    # -- model and gradients -----------------------------------------------------------------------------
    def sync_model(self, model: Any) -> Any:
        """The model with rank 0's parameter values on every rank (one broadcast per parameter)."""
        from ember import distributed as dist

        def fn(param: Any) -> Any:
            t = param.val()
            return param.with_val(_lift(dist.broadcast(t.inner(), 0, self.group), t))

        with self._peers("broadcasting the parameters from rank 0"):
            return model.map(fn)

    def sync_running_states(self, model: Any) -> Any:
        """The model's running states (``RunningState``: BatchNorm's running mean and variance) made equal on every
        rank: the Float ones averaged over the ranks (``all_reduce_many``, ``op="mean"``: one collective per
        bucket), the others (Int, Bool) rank 0's (a broadcast each). Each rank's batch norm sees only its shard,
        so its statistics drift from the other ranks'; the average is the closest to one process's (PyTorch DDP
        instead broadcasts rank 0's buffers at each forward). The Learner calls it at the end of each epoch's
        training, before validation and checkpoints. The states are updated in place (``RunningState.update``,
        the cell a forward pass updates) and the same ``model`` is returned; a model without running states costs
        no collective."""
        from ember import distributed as dist

        states: list[Any] = []
        for _, st in model.running_states() if hasattr(model, "running_states") else []:
            if not any(st is o for o in states):  # a state shared by several modules is reduced once
                states.append(st)
        if not states or self.world_size == 1:
            return model
        floats = [st for st in states if st.value().kind is Float]
        with self._peers("averaging the running states (batch norm statistics)"):
            if floats:
                means = dist.all_reduce_many([st.value() for st in floats], op="mean", group=self.group,
                                             bucket_bytes=self.strategy.bucket_bytes)
                for st, m in zip(floats, means):
                    st.update(_lift(m, st.value()))
            for st in states:
                if st.value().kind is not Float:
                    t = st.value()
                    st.update(_lift(dist.broadcast(t, 0, self.group), t))
        return model

    def reduce_grads(self, grads: Any, stop: bool | None = None) -> Any:
        """The gradients averaged over the ranks (``all_reduce_many``: one collective per bucket).

        With ``stop`` (this rank's interrupter), a one-number flag rides in the last bucket, so the ranks agree on
        stopping without a collective of their own: :attr:`stop_seen` is then whether any rank's ``stop`` was set.
        """
        from ember import distributed as dist
        from ember.optim import GradientsParams

        items = grads.items()
        if not items:
            if stop is not None:
                self.stop_seen = self.any(stop)
            return grads
        tensors = [g for _, g in items]
        if stop is not None:  # last, so that every rank builds the same buckets
            tensors.append(Tensor.from_data(np.asarray([1.0 if stop else 0.0]), tensors[-1].device, Float))
        with self._peers("averaging the gradients"):
            reduced = dist.all_reduce_many(tensors, op="mean", group=self.group,
                                           bucket_bytes=self.strategy.bucket_bytes)
        if stop is not None:
            self.stop_seen = float(reduced.pop().to_numpy().reshape(-1)[0]) > 0
        return GradientsParams({k: r for (k, _), r in zip(items, reduced)})

    def overlaps(self, compiled: bool) -> bool:
        """Whether a step reduces its gradients during the backward pass (:meth:`grads_overlapped`): the strategy's
        ``overlap`` is on (``None``: on nccl or across machines, see ``DistributedDataParallel``), the step runs
        eagerly (a compiled step is one traced program: no hook can fire in it) and the group's engine launches
        collectives asynchronously (torch.distributed: torch and numpy; jax's multi-process collectives block, so
        jax keeps the reduction after the backward pass)."""
        engine = getattr(self.group, "_collectives", None)
        if compiled or not getattr(engine, "supports_async", False):
            return False
        if self.strategy.overlap is None:  # overlap where communication has hardware of its own (see the strategy)
            return bool(self.group.engine == "nccl" or not _one_machine(self.world_size))
        return bool(self.strategy.overlap)

    def grads_overlapped(self, model: Any, grad_step: Callable[[], tuple[Any, Any]],
                         stop: Callable[[], bool]) -> tuple[Any, Any]:
        """``grad_step()`` (the step's forward and backward passes, giving ``(grads, item)``) with its gradients
        averaged over the ranks, the reduction overlapping the backward pass (PyTorch DDP's reducer).

        Buckets are planned from the trainable parameters in reverse order (the order a backward pass makes their
        gradients final), the first one at most ``first_bucket_bytes``; ``ember.autodiff.grad_ready_hook`` hands
        each parameter's final gradient to an :class:`ember.distributed.Bucketer`, which launches a bucket's
        all-reduce as soon as the bucket is full. After ``grad_step`` returns, ``stop()`` (this rank's
        interrupter) is read and rides in the last bucket as in :meth:`reduce_grads`, then every bucket is
        waited for. A step whose gradients are not the ones the hook saw (a second ``backward()``, gradients
        changed inside ``train_step``, a parameter without a gradient) drains the launched buckets and falls back
        to :meth:`reduce_grads` on the returned gradients. Whether a step falls back is agreed by the ranks: each
        rank's "not the gradients the hook saw" flag rides in the last bucket with ``stop``, and when any rank's
        flag is set every rank falls back (so every rank runs the same collectives, and the averaged gradients
        are those of the returned gradients on every rank).
        """
        from ember import distributed as dist
        from ember.autodiff import grad_id, grad_ready_hook
        from ember.optim import GradientsParams

        params, seen = [], set()  # the trainable parameters (ember.optim's rule), each once
        for p in model.params():
            if p.require_grad and p.kind is Float and p.id not in seen and grad_id(p.val()) is not None:
                seen.add(p.id)
                params.append(p)
        if not params:
            grads, item = grad_step()
            return self.reduce_grads(grads, stop()), item
        order = params[::-1]
        inner = params[0].device.inner
        likes: list[Any] = [p.val().inner() for p in order]  # the gradients' device, shapes and dtypes
        likes.append(Tensor.from_data(np.zeros(2), inner, Float))  # [stop, not fine], last
        s = self.strategy
        with self._peers("averaging the gradients"):
            bucketer = dist.Bucketer(likes, "mean", self.group, bucket_bytes=s.bucket_bytes,
                                     first_bucket_bytes=min(s.first_bucket_bytes, s.bucket_bytes))
        slot = {grad_id(p.val()): k for k, p in enumerate(order)}
        given: dict[int, Any] = {}
        failed: list[BaseException] = []

        def on_ready(leaf_id: int, g: Tensor) -> None:
            k = slot.get(leaf_id)
            if k is None or failed:
                return
            if k in given:  # a second backward() in the step: the fallback below
                failed.append(LearnerError("a parameter's gradient was reported twice"))
                return
            given[k] = g.primitive
            try:
                bucketer.ready(k, g)
            except Exception as exc:  # noqa: BLE001 - raised after the step, as a LearnerError naming the peers
                failed.append(exc)

        with grad_ready_hook(on_ready):
            grads, item = grad_step()
        items = dict(grads.items())
        fine = (not failed and len(given) == len(order) and len(items) == len(order)
                and all(p.id in items and items[p.id].primitive is given[k] for k, p in enumerate(order)))
        # this rank's stop and "not fine" flags ride in the last bucket: the ranks agree on both, so a fallback
        # (one more collective) runs on every rank or on none
        flags = Tensor.from_data(np.asarray([1.0 if stop() else 0.0, 0.0 if fine else 1.0]), inner, Float)
        with self._peers("averaging the gradients"):
            if failed and not isinstance(failed[0], LearnerError):
                raise failed[0]
            for k in range(len(order)):  # complete the plan (the values of a fallback are discarded)
                if k not in given:
                    bucketer.ready(k, likes[k])
            bucketer.ready(len(order), flags)
            reduced = bucketer.wait()
        agreed = reduced[-1].to_numpy().reshape(-1)
        self.stop_seen = float(agreed[0]) > 0
        if float(agreed[1]) > 0:
            LOGGER.debug("DistributedDataParallel: the overlapped reduction did not see the step's gradients on %s; "
                         "reducing them again after the backward pass, on every rank",
                         "this rank" if not fine else "another rank")
            return self.reduce_grads(grads), item
        by_id = {p.id: reduced[k] for k, p in enumerate(order)}
        return GradientsParams({p.id: by_id[p.id] for p in params}), item

    @contextmanager
    def _peers(self, what: str) -> Iterator[None]:
        """Turn a failed collective into a ``LearnerError``. A failure of the engine (``ember.distributed`` raises it
        ``from`` the engine's own exception: a peer gone, the timeout, a transport error) says which rank this is
        and which ranks may have stopped (with two ranks: the other one); a call refused before it reached the
        engine (a tensor of another backend, a bad argument: no engine exception behind it) is this rank's error
        and is reported as such."""
        from ember import CollectiveError

        try:
            yield
        except CollectiveError as exc:
            cause = exc.__cause__
            if cause is None or isinstance(cause, CollectiveError):
                raise LearnerError(
                    f"DistributedDataParallel: rank {self.rank} of {self.world_size} could not start a collective "
                    f"while {what} (the call was refused before it reached the engine; no other rank is to blame): "
                    f"{exc}"
                ) from exc
            others = [r for r in range(self.world_size) if r != self.rank]
            who = f"rank {others[0]}" if len(others) == 1 else f"one of ranks {others}"
            timeout = getattr(self.group, "timeout", self.strategy.timeout)
            raise LearnerError(
                f"DistributedDataParallel: rank {self.rank} of {self.world_size} stopped while {what}: {who} died, "
                f"stopped or did not answer within {timeout} s (its own log says why; the launcher "
                f"names the rank that failed). Resume from the last checkpoint (LearnerBuilder.checkpoint). "
                f"Cause: {exc}"
            ) from exc

    # -- host values -------------------------------------------------------------------------------------
    def sum(self, values: list[float]) -> list[float]:
        """Element-wise sums over the ranks of a list of host numbers (one collective, in the training device's
        float type: float32 by default, exact for counts up to 2**24, about 7 significant digits otherwise)."""
        from ember import distributed as dist

        if not values:
            return values
        t = Tensor.from_data(np.asarray(values, np.float64), self._device, Float)
        with self._peers("reducing metrics and flags"):
            out = dist.all_reduce(t, op="sum", group=self.group)
        return [float(x) for x in out.to_numpy().reshape(-1)]

    def gather_texts(self, text: str) -> list[str]:
        """Every rank's ``text``, in rank order, on every rank (two collectives: the lengths, then the padded UTF-8
        bytes as an Int tensor)."""
        from ember import Int
        from ember import distributed as dist

        data = text.encode("utf-8")
        lengths = [int(n) for n in self.sum([float(len(data)) if r == self.rank else 0.0
                                             for r in range(self.world_size)])]
        buf = np.zeros(max(max(lengths), 1), np.int64)
        buf[:len(data)] = np.frombuffer(data, np.uint8)
        with self._peers("gathering the ranks' random states for a checkpoint"):
            parts = dist.all_gather(Tensor.from_data(buf, self._device, Int), group=self.group)
        return [bytes(p.to_numpy().astype(np.uint8)[:n].tobytes()).decode("utf-8") for p, n in zip(parts, lengths)]

    def any(self, flag: bool) -> bool:
        """``True`` on every rank when ``flag`` is true on some rank."""
        return self.sum([1.0 if flag else 0.0])[0] > 0

    def from_main(self, flag: bool) -> bool:
        """Rank 0's ``flag`` on every rank."""
        return self.sum([1.0 if (flag and self.is_main) else 0.0])[0] > 0


def splits_evenly(loader: Any, world_size: int) -> bool:
    """Whether every rank's batches of the sharded ``loader`` have the same size at each step (the last, partial
    global batch is cut with ``numpy.array_split``, see ``ember.data.DataLoader``), which a step compiled as one
    program over the ranks needs. ``None`` splits evenly; a loader that does not say its size does not."""
    if loader is None:
        return True
    num_items, global_batch = getattr(loader, "num_items", None), getattr(loader, "global_batch_size", None)
    if not callable(num_items) or not global_batch:
        return False
    rest = int(num_items()) % int(global_batch)
    return rest == 0 or len({max(len(p), 1) for p in np.array_split(np.arange(rest), world_size)}) == 1
