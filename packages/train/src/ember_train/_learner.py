"""``Learner``: the training loop (Burn's ``Learner::fit``)."""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from ember import BackendError

from ._app_logger import LOGGER
from ._checkpointer import LearnerCheckpointer, complete_checkpoints
from ._checks import check_batch_type, describe, require_method
from ._compiled import OTHER, TRAIN_STEP, VALID_STEP, CompiledSteps
from ._early_stopping import EarlyStoppingStrategy
from ._errors import LearnerError, MetricAdaptError, NonFiniteLossError
from ._interrupter import TrainingInterrupter, sigint_stops
from ._learning_strategy import DistributedDataParallel, LearningStrategy, MultiDevice
from ._metrics_set import MetricsSet
from ._parallel import DeviceReplicas, Replicas, splits_evenly
from ._records import load_state, state_record
from ._run_state import capture, check_loader, loader_info, restore_rngs
from ._store import MetricStore, Split
from ._strategy import CheckpointingAction, CheckpointingStrategy
from ._summary import LearnerSummary, MetricSummary
from ._tracking import ResumePoint, RunInfo, TrackingLogger
from .metric._base import Metric, MetricMetadata, Numeric
from .renderer._base import MetricsRenderer, TrainingProgress

__all__ = ["Learner", "TrainingResult"]


@dataclass
class TrainingResult:
    """What :meth:`Learner.fit` returns.

    Attributes:
        model: the trained model (on the training device, as Burn).
        summary: the :class:`LearnerSummary` (best and last value per metric and split).
        epoch: the last epoch reached (complete unless ``interrupted``).
        stopped_early: an early-stopping strategy ended training; ``stop_reason`` says why.
        interrupted: Ctrl-C or the interrupter ended training; ``resume_epoch`` is the checkpoint to resume
            from (``LearnerBuilder(...).checkpoint(resume_epoch)``), ``None`` without a checkpointer.
    """

    model: Any
    summary: LearnerSummary
    epoch: int
    stopped_early: bool = False
    interrupted: bool = False
    resume_epoch: int | None = None
    stop_reason: str = ""
    checkpoints: list[int] = field(default_factory=list)


@dataclass
class _Settings:
    artifact_dir: Path
    metrics_train: list[tuple[Metric, bool]]
    metrics_valid: list[tuple[Metric, bool]]
    loggers_train: list[Any]
    loggers_valid: list[Any]
    renderer: MetricsRenderer
    num_epochs: int
    device: Any
    grads_accumulation: int | None
    recorder: Any
    checkpoint: int | None
    strategy: CheckpointingStrategy
    early_stopping: EarlyStoppingStrategy | None
    summary: bool
    interrupter: TrainingInterrupter
    app_logger: Any
    log_interval: int
    nan_loss: str
    seed: int | None
    compile: bool = True
    trackers: list[TrackingLogger] = field(default_factory=list)
    hparams: dict[str, Any] = field(default_factory=dict)
    plots: bool = True
    learning_strategy: LearningStrategy | None = None


def _progress_of(it: Any, iteration: int) -> tuple[int, int]:
    prog = getattr(it, "progress", None)
    if callable(prog):
        p = prog()
        return int(p.items_processed), int(p.items_total)
    return iteration, 0


def _set_epoch(loader: Any, epoch: int) -> None:
    fn = getattr(loader, "set_epoch", None)
    if callable(fn):
        fn(epoch - 1)


def _close(it: Any) -> None:
    fn = getattr(it, "close", None)
    if callable(fn):
        fn()


class Learner:
    """Trains a model with an optimizer and a learning-rate scheduler; made by ``LearnerBuilder.build``.

    :meth:`fit` runs the epochs: each training step calls ``model.train_step(batch) -> TrainOutput`` and
    ``optim.step(lr, model, grads)`` (after ``grads_accumulation`` steps when set); each validation step
    calls ``model.valid().valid_step(batch)``. Metrics are logged to ``train|valid/epoch-N/<Metric>.log``,
    checkpoints saved as the strategy says, early stopping applied, and the summary written.

    The whole training step (forward, backward, optimizer update) and the validation step are compiled by the
    training device's backend (``Backend.compile``): on jax with ``ember_jax.jit``, traced once per batch shape
    (a second epoch does not recompile); on torch with ``ember_torch.compile``, captured once per batch shape as one
    aten graph (replayed as it is on the CPU, compiled by inductor on CUDA); numpy runs them eagerly.
    ``LearnerBuilder.compile(False)``
    runs them eagerly everywhere (to debug a step with prints or breakpoints).

    Under ``DistributedDataParallel`` each rank runs this loop with its shard of the data and the step split at the
    gradients, which are averaged over the ranks: on eager numpy and torch steps the buckets' all-reduces can be
    launched during the backward pass (by default on nccl and across machines); on jax the whole step is one
    compiled program over the ranks, with the all-reduce inside (:class:`~ember_train.DistributedDataParallel`
    says when, and what else changes: parameters broadcast from rank 0, metrics summed over the ranks, files
    written by rank 0 only, a stop agreed by all ranks). Under ``MultiDevice`` (jax) the model and optimizer are
    replicated on the devices and each batch is split across them; the compiled step runs over all of them.
    """

    def __init__(self, model: Any, optim: Any, scheduler: Any, settings: _Settings) -> None:
        self.model = model
        self.optim = optim
        self.scheduler = scheduler
        self.s = settings
        self._trackers: list[TrackingLogger] = []
        self._replicas: Replicas | None = None
        self._global_batch: int | None = None
        self._multi: DeviceReplicas | None = None
        self._loader_info: dict[str, Any] = {}
        self._after_train: dict[str, Any] | None = None  # the random states at the end of the last training epoch
        self._train_total: int | None = None

    # ------------------------------------------------------------------ public
    def fit(self, dataloader_train: Any, dataloader_valid: Any = None) -> TrainingResult:
        """Train for the configured epochs.

        Args:
            dataloader_train: batches for ``train_step``; moved to the training device (``to_device``).
            dataloader_valid: batches for ``valid_step`` (optional); moved to the inner backend's device.

        Returns:
            A :class:`TrainingResult`.

        Raises:
            LearnerError: the model lacks a step method, a batch does not fit the step, a step fails on its
                first batch (also when it cannot be compiled, e.g. ``into_scalar`` inside a step on jax), a
                metric cannot take the step's output (checked on the first batches, before training), a
                checkpoint to resume is missing. NonFiniteLossError: the loss became NaN/inf (names epoch and
                iteration), unless ``on_nan_loss("warn"|"ignore")``.
        """
        s = self.s
        replicas = None
        self._multi = None
        if isinstance(s.learning_strategy, MultiDevice):
            self._multi = DeviceReplicas(list(s.learning_strategy.devices))
        if isinstance(s.learning_strategy, DistributedDataParallel):
            replicas = self._replicas = Replicas(s.learning_strategy)
        try:
            if replicas is not None:
                replicas.start(s.device)  # inside the try: whatever fails after the join leaves the group
                if not replicas.is_main:
                    s = self.s = _follower_settings(s)
            app_logger = s.app_logger
            if replicas is None or replicas.is_main:
                s.artifact_dir.mkdir(parents=True, exist_ok=True)
            if app_logger is not None:
                app_logger.install()
            try:
                with sigint_stops(s.interrupter, on_first=self._on_ctrl_c):
                    return self._fit(dataloader_train, dataloader_valid)
            except BaseException:
                s.renderer.on_train_end(None)  # leave the terminal usable (the dashboard stops)
                raise
            finally:
                if replicas is not None:
                    replicas.log_stats()
                self._close_loggers()
                if app_logger is not None:
                    app_logger.uninstall()
        finally:
            if replicas is not None:
                replicas.close()
                self._replicas = None

    # ------------------------------------------------------------------ internals
    def _close_loggers(self) -> None:
        """Close every metric logger and tracker (also after Ctrl-C and errors). A failing ``close`` does not stop
        the others; its error is raised afterwards unless another exception is already on its way out."""
        s = self.s
        errors: list[BaseException] = []
        for lg in [*s.loggers_train, *s.loggers_valid, *self._trackers]:
            close = getattr(lg, "close", None)
            if not callable(close):
                continue
            try:
                close()
            except Exception as exc:  # noqa: BLE001 - reported below
                LOGGER.error("Closing the metric logger %r failed: %s", lg, exc)
                errors.append(exc)
        self._trackers = []
        if errors and sys.exc_info()[1] is None:
            raise errors[0]

    def _start_trackers(self, train: MetricsSet, valid: MetricsSet, start: int, skip: int) -> list[TrackingLogger]:
        """The trackers of this run (the plot writer first, when plots are on and matplotlib is installed), started
        with the hyper-parameters and the resume point."""
        s = self.s
        trackers = list(s.trackers)
        if s.plots:
            from .plots import PlotWriter, matplotlib_missing

            missing = matplotlib_missing()
            if missing is None:
                trackers.insert(0, PlotWriter(s.artifact_dir / "plots"))
            else:
                self._note(f"Plots are off: {missing}", logging.WARNING)
        resume = None
        if s.checkpoint is not None:
            resume = ResumePoint(start, skip, train.steps_before(start) + skip, valid.steps_before(start))
        self._trackers = trackers
        units = {sl.name: getattr(sl.metric, "unit", "").strip() for sl in [*train.slots, *valid.slots]}
        run = RunInfo(s.artifact_dir, dict(s.hparams), resume, s.num_epochs,
                      {"train": train.iterations_total, "valid": valid.iterations_total},
                      {name: unit for name, unit in units.items() if unit})
        for t in trackers:
            t.start(run)
        return trackers

    def _on_ctrl_c(self) -> None:
        self.s.renderer.message("Ctrl-C: finishing the current step, then saving a checkpoint (Ctrl-C again aborts).")

    def _note(self, text: str, level: int = logging.INFO) -> None:
        LOGGER.log(level, text)
        self.s.renderer.message(text)

    def _fit(self, loader_train: Any, loader_valid: Any) -> TrainingResult:
        s = self.s
        model, optim, scheduler = self.model, self.optim, self.scheduler
        device = s.device
        require_method(model, "train_step", "TrainOutput(model, grads, item)", "Learner.fit")
        if loader_valid is not None:
            require_method(model, "valid_step", "item", "Learner.fit")
        if not getattr(device.backend, "is_autodiff", False):
            raise LearnerError(
                f"Learner.fit: the training device {device} is not an autodiff device, so train_step cannot compute "
                "gradients; use ember.autodiff.Autodiff(ember.backend('numpy')).device() in LearnerBuilder.devices()."
            )
        if any(d is not device for d in model.devices()):
            model = model.fork(device)
        replicas = self._replicas
        if replicas is not None:
            loader_train = replicas.shard(loader_train, "training")
            loader_valid = replicas.shard(loader_valid, "validation")
        self._global_batch = getattr(loader_train, "global_batch_size", None)
        if hasattr(loader_train, "to_device"):
            loader_train = loader_train.to_device(device)
        if loader_valid is not None and hasattr(loader_valid, "to_device"):
            loader_valid = loader_valid.to_device(device.inner)

        metrics_train = self._available(s.metrics_train)
        metrics_valid = self._available(s.metrics_valid)
        store = MetricStore()
        train = MetricsSet(Split.TRAIN, metrics_train, s.loggers_train, s.renderer, store, s.nan_loss != "ignore")
        valid = MetricsSet(Split.VALID, metrics_valid, s.loggers_valid, s.renderer, store, s.nan_loss != "ignore")
        if replicas is not None:
            train.reduce = valid.reduce = replicas.sum
        train.iterations_total = len(loader_train) if hasattr(loader_train, "__len__") else None
        valid.iterations_total = len(loader_valid) if hasattr(loader_valid, "__len__") else None

        checkpointer = LearnerCheckpointer(s.recorder, s.artifact_dir / "checkpoint") if s.recorder else None
        # under DDP every rank reads a checkpoint to resume (the artifact directory must be shared), rank 0 alone
        # writes them (``saving``)
        saving = checkpointer if replicas is None or replicas.is_main else None
        start, skip = 1, 0
        saved: set[int] = set()
        self._loader_info = loader_info(loader_train)
        resumed: dict[str, Any] | None = None  # this process's random states saved with the checkpoint resumed
        if s.checkpoint is not None:
            model, optim, scheduler, start, skip = self._restore(checkpointer, model, optim, scheduler,
                                                                 getattr(loader_train, "global_batch_size", None))
            resumed = self._resumed_state(checkpointer, loader_train)  # type: ignore[arg-type]
            saved = {e for e in complete_checkpoints(checkpointer.directory) if e <= s.checkpoint}  # type: ignore[union-attr]
            for e in range(1, start + (1 if skip else 0)):
                train.reload(e)
                if e < start:
                    valid.reload(e)
        if replicas is not None:
            model = replicas.sync_model(model)  # equal parameters on every rank: rank 0's
        train.trackers = valid.trackers = self._start_trackers(train, valid, start, skip)
        train.replay()
        valid.replay()
        LOGGER.info("Fitting %s (%d parameters) for %d epochs on %s, artifacts in %s",
                    type(model).__name__, model.num_params(), s.num_epochs, device, s.artifact_dir)
        # data-parallel: the step is split at the gradients, which are averaged over the ranks between the two halves;
        # on jax it is one program over the ranks instead (XLA all-reduces the gradients inside it)
        one_program = replicas is not None and self._one_program(replicas, loader_train, loader_valid)
        steps = CompiledSteps(device, s.compile, accumulation=s.grads_accumulation is not None
                              or (replicas is not None and not one_program))
        # "compiling the training step" while a first call compiles (a renderer without the hook: none)
        steps.on_compile = getattr(s.renderer, "compiling", None)
        if steps.compiled and hasattr(optim, "init_states"):
            optim.init_states(model)  # the states' steady layout from the first step: traced once, not twice
        if one_program:
            self._multi = DeviceReplicas.across_processes(device)
        if self._multi is not None:  # every tensor a step takes lives on all the devices
            model, optim = self._multi.replicate(model), self._multi.replicate(optim)
            steps.place = self._multi.replicate
        if loader_valid is not None:
            self._probe_valid(steps, model, loader_valid, valid)

        epoch = start - 1
        stopped_early = interrupted = False
        stop_reason = ""
        resume_epoch = None
        for epoch in range(start, s.num_epochs + 1):
            if s.seed is not None:
                # data-parallel ranks draw different random numbers (dropout masks) for their different samples; a step
                # that is one program over the ranks draws them for the global batch from one key (as one process)
                rank = replicas.rank if replicas is not None and not one_program else 0
                device.backend.seed(s.seed * 1_000_003 + epoch + 7_919 * rank)
            model, done = self._train_epoch(steps, model, optim, scheduler, loader_train, train, epoch,
                                             skip if epoch == start else 0, first=epoch == start,
                                             resumed=resumed if epoch == start else None)
            if replicas is not None and not one_program:
                # each rank's running states (batch norm) saw its shard only: their mean on every rank, before the
                # validation and the checkpoints (also of an interrupted epoch)
                model = replicas.sync_running_states(model)
            if done and loader_valid is not None:
                # stopped right at the end of training: leave validation to the resumed run
                done = (not self._agree(s.interrupter.should_stop())
                        and self._valid_epoch(steps, model, loader_valid, valid, epoch))
            if done:
                for t in train.trackers:
                    t.end_epoch(epoch)
            if not done:
                interrupted = True
                stop_reason = s.interrupter.reason or "interrupted"
                resume_epoch = self._save_interrupted(checkpointer, saving, model, optim, scheduler, epoch)
                break
            stopping = self._agree(s.interrupter.should_stop())
            if checkpointer is not None:
                actions = s.strategy.checkpointing(epoch, store, saved)
                if stopping and epoch not in saved and not any(a.kind == "save" for a in actions):
                    actions.insert(0, CheckpointingAction.save(epoch))  # an interrupted run must stay resumable
                run_state = self._run_state()  # on every rank (a collective under DDP), whatever the actions
                for action in actions:
                    if action.kind == "save":
                        if saving is not None:
                            saving.save(epoch, self._local(model).into_record(),
                                        state_record(self._local(optim), "optimizer"),
                                        state_record(scheduler, "scheduler"), state=run_state)
                        saved.add(epoch)
                        LOGGER.info("Saved checkpoint %d", epoch)
                for action in actions:
                    if action.kind == "delete" and action.epoch != epoch:
                        if saving is not None:
                            saving.delete(action.epoch)
                        saved.discard(action.epoch)
                        LOGGER.info("Deleted checkpoint %d", action.epoch)
            if stopping:
                interrupted = True
                stop_reason = s.interrupter.reason or "interrupted"
                resume_epoch = epoch if epoch in saved else None
                where = (f"resume with LearnerBuilder(...).checkpoint({epoch}) to continue at epoch {epoch + 1}"
                         if resume_epoch else "no checkpointer is configured, so nothing was saved")
                self._note(f"Training interrupted after epoch {epoch} ({stop_reason}); {where}.")
                break
            if s.early_stopping is not None and self._from_main(s.early_stopping.should_stop(epoch, store)):
                stopped_early = True
                stop_reason = s.early_stopping.reason()
                self._note(f"Early stopping after epoch {epoch}: {stop_reason}.")
                break

        if one_program:  # this process's copy of the trained model, and of the PRNG key
            LOGGER.info("DistributedDataParallel: the training step ran as %d compiled program(s) over the ranks "
                        "(%d trace(s))", getattr(steps.train, "cache_size", 0), getattr(steps.train, "trace_count", 0))
            model = self._local(model)
            self._multi.release_keys(device)  # type: ignore[union-attr]
        summary = self._summary(model, store, metrics_train, metrics_valid)
        if replicas is None or replicas.is_main:
            summary.save(s.artifact_dir)
        LOGGER.info("Training ended at epoch %d\n%s", epoch, summary.table())
        s.renderer.on_train_end(summary if s.summary else None)
        return TrainingResult(model, summary, epoch, stopped_early, interrupted, resume_epoch, stop_reason,
                              sorted(saved))

    def _available(self, metrics: list[tuple[Metric, bool]]) -> list[tuple[Metric, bool]]:
        out = []
        for m, numeric in metrics:
            why = m.available()
            if why is None:
                out.append((m, numeric))
            else:
                self._note(f"Skipping the {m.name()} metric: {why}.", logging.WARNING)
        return out

    def _restore(self, checkpointer: LearnerCheckpointer | None, model: Any, optim: Any,
                 scheduler: Any, global_batch: int | None = None) -> tuple[Any, Any, Any, int, int]:
        k = self.s.checkpoint
        assert k is not None
        if checkpointer is None:
            raise LearnerError(
                f"LearnerBuilder.checkpoint({k}): resuming needs the checkpointer that wrote the files; add "
                ".with_file_checkpointer(recorder) with the same recorder."
            )
        model_rec, optim_rec, sched_rec = checkpointer.restore(k)
        model = model.load_record(model_rec)
        optim = load_state(optim, optim_rec, "optimizer")
        scheduler = load_state(scheduler, sched_rec, "scheduler")
        progress = checkpointer.progress(k)
        if progress is not None:
            skip = int(progress["iteration"])
            items, batch = progress.get("items"), progress.get("global_batch")
            if global_batch and batch and items is not None and batch != global_batch:
                # another global batch (another number of ranks): skip the items already trained on
                skip = int(items) // global_batch
                self._note(f"The interrupted run's global batch was {batch}, this run's is {global_batch}: skipping "
                           f"{skip} batches ({skip * global_batch} of the {items} items already trained on).")
            self._note(f"Resuming epoch {k} after iteration {skip} (interrupted checkpoint {k}).")
            return model, optim, scheduler, k, skip
        self._note(f"Resuming from checkpoint {k}: training starts at epoch {k + 1}.")
        return model, optim, scheduler, k + 1, 0

    def _run_state(self, mine: dict[str, Any] | None = None) -> dict[str, Any]:
        """The state a checkpoint saves beside the records (:mod:`._run_state`): every process's random states (this
        process's now, or ``mine``; under DDP gathered from all ranks, a collective every rank must call) and the
        training loader's order."""
        if mine is None:
            mine = capture(self.s.device.backend)
        replicas = self._replicas
        if replicas is None:
            ranks = [mine]
        else:
            import json

            ranks = [json.loads(t) for t in replicas.gather_texts(json.dumps(mine))]
        return {"ranks": ranks, "loader": self._loader_info}

    def _resumed_state(self, checkpointer: LearnerCheckpointer, loader_train: Any) -> dict[str, Any] | None:
        """This process's saved random states of the checkpoint being resumed (``None`` when it has none: a
        checkpoint of an earlier Ember, or another number of ranks; both reported)."""
        k = self.s.checkpoint
        assert k is not None
        state = checkpointer.state(k)
        check_loader(state.get("loader") or {}, loader_train, lambda text: self._note(text, logging.WARNING))
        ranks = state.get("ranks")
        rank, world = (0, 1) if self._replicas is None else (self._replicas.rank, self._replicas.world_size)
        if not isinstance(ranks, list) or not ranks:
            self._note(f"Checkpoint {k} holds no random states (written by an earlier Ember): random ops (dropout) "
                       "of the resumed run differ from an uninterrupted run's.", logging.WARNING)
            return None
        if len(ranks) != world:
            self._note(f"Checkpoint {k} was written by {len(ranks)} process(es), this run has {world}: the random "
                       "states are not restored, so random ops (dropout) differ from an uninterrupted run's.",
                       logging.WARNING)
            return None
        return ranks[rank] if isinstance(ranks[rank], dict) else None

    def _probe_valid(self, steps: CompiledSteps, model: Any, loader: Any, metrics: MetricsSet) -> None:
        """Run ``valid_step`` on the first validation batch and check the metrics can take its output (the
        compiled step: a step that cannot be compiled fails here, before training)."""
        it = iter(loader)
        try:
            batch = next(it, None)
        finally:
            _close(it)
        if batch is None:
            return
        vm = model.valid()
        check_batch_type(vm, "valid_step", batch, "validation")
        steps.phase = OTHER
        try:
            item = steps.valid(vm, self._place(batch))
            item = self._local(item, self._multi.rows if self._multi is not None else None)
        except LearnerError:
            raise
        except Exception as exc:
            if steps.phase != VALID_STEP:
                raise
            raise LearnerError(
                f"model.valid_step raised {type(exc).__name__} on the first validation batch ({describe(batch)}), "
                f"before training started: {_advice(steps, exc, 'validation', 'valid_step')}"
            ) from exc
        metrics.check(item)

    def _train_epoch(self, steps: CompiledSteps, model: Any, optim: Any, scheduler: Any, loader: Any,
                     metrics: MetricsSet, epoch: int, skip: int, first: bool,
                     resumed: dict[str, Any] | None = None) -> tuple[Any, bool]:
        """One training epoch from iteration ``skip + 1``. ``resumed``: the random states saved with the checkpoint
        this run resumes, restored where the interrupted run saved them: after the skipped batches were loaded (so
        that a batcher's draws are not repeated), or at the epoch's start for a finished epoch (the backend's only
        without a seed: with one every epoch starts from its own seed, as in the uninterrupted run)."""
        s = self.s
        backend = s.device.backend
        if resumed is not None and not skip:
            restore_rngs(backend, resumed, "all" if s.seed is None else "host")
        _set_epoch(loader, epoch)
        total = len(loader) if hasattr(loader, "__len__") else None
        metrics.start_epoch(epoch, skip)
        LOGGER.info("Training epoch %d/%d%s", epoch, s.num_epochs, f" from iteration {skip + 1}" if skip else "")
        accumulator = None
        acc_count = 0
        if s.grads_accumulation:
            from ember.optim import GradientsAccumulator

            accumulator = GradientsAccumulator()
        replicas = self._replicas
        train_fn: Callable[..., tuple[Any, Any]] = (
            partial(self._one_program_step, steps, replicas) if replicas is not None and self._multi is not None
            else partial(self._replicated_step, steps, replicas) if replicas is not None
            else steps.train if accumulator is None else _no_train_fn)
        it = iter(loader)
        start = time.perf_counter()
        steps.reset_compile_time("train")
        iteration = 0
        completed = True
        try:
            for iteration, batch in enumerate(it, 1):
                if iteration <= skip:
                    if iteration == skip and resumed is not None:
                        restore_rngs(backend, resumed, "all")
                    continue
                batch = self._place(batch)
                lr = float(scheduler.step())
                lr_arg = steps.lr(lr)
                if accumulator is None:
                    if first:
                        model, item = self._first_step(steps, model, batch, metrics,
                                                       partial(train_fn, model, optim, batch, lr_arg))
                        first = False
                    else:
                        model, item = train_fn(model, optim, batch, lr_arg)
                else:
                    if first:
                        grads, item = self._first_step(steps, model, batch, metrics, partial(steps.grad, model, batch))
                        first = False
                    else:
                        grads, item = steps.grad(model, batch)
                    accumulator.accumulate(model, grads)
                    acc_count += 1
                    if acc_count >= s.grads_accumulation:  # type: ignore[operator]
                        grads = accumulator.grads()
                        if replicas is not None:
                            grads = replicas.reduce_grads(grads)
                        model = steps.update(model, optim, grads, lr_arg)
                        acc_count = 0
                done, tot = _progress_of(it, iteration)
                metrics.update(item, MetricMetadata(done, tot, epoch, s.num_epochs, iteration, lr))
                if iteration % s.log_interval == 0 or iteration == total:
                    self._flush(metrics, TrainingProgress(done, tot, epoch, s.num_epochs, iteration, total,
                                                          time.perf_counter() - start,
                                                          **steps.compile_stats("train")))
                # under DDP the step's gradient all-reduce carried the ranks' stop flags (with accumulation, a
                # step without an update asks the other ranks)
                agreed = (replicas.stop_seen if replicas is not None and accumulator is None
                          else self._agree(s.interrupter.should_stop()))
                # with gradient accumulation, stop only after an update: the accumulated gradients are not saved
                if agreed and (acc_count == 0 or iteration == total):
                    completed = iteration == total
                    break
        finally:
            _close(it)
        if iteration > skip:
            done, tot = _progress_of(it, iteration)
            self._flush(metrics, TrainingProgress(done, tot, epoch, s.num_epochs, iteration, total,
                                                  time.perf_counter() - start,
                                                  **steps.compile_stats("train")))
        self._last_iteration = iteration
        self._train_total = total
        if not completed:
            return model, False
        self._after_train = capture(backend)
        if acc_count:
            LOGGER.info("Epoch %d ended with %d accumulated step(s) not applied (as Burn).", epoch, acc_count)
        values = metrics.end_epoch()
        LOGGER.info("Epoch %d train: %s", epoch, values)
        return model, True

    def _first_step(self, steps: CompiledSteps, model: Any, batch: Any, metrics: MetricsSet,
                    step: Callable[[], tuple[Any, Any]]) -> tuple[Any, Any]:
        """``step()`` (``steps.train`` or ``steps.grad`` on the first training batch, ``batch``), with the first
        step's checks: the batch type, a failure of ``train_step`` named as such, the item against the metrics."""
        check_batch_type(model, "train_step", batch, "training")
        steps.phase = OTHER
        try:
            result, item = step()
        except LearnerError:
            raise
        except Exception as exc:
            if steps.phase != TRAIN_STEP:
                raise
            raise LearnerError(
                f"model.train_step raised {type(exc).__name__} on the first training batch ({describe(batch)}): "
                f"{_advice(steps, exc, 'training', 'train_step')}"
            ) from exc
        try:
            metrics.check(item)
        except MetricAdaptError:
            raise
        return result, item

    def _flush(self, metrics: MetricsSet, progress: TrainingProgress) -> None:
        bad = metrics.flush(progress)
        if bad is None or self.s.nan_loss == "ignore":
            return
        iteration, value = bad
        where = f"epoch {metrics.epoch}, iteration {iteration}"
        if metrics.split is Split.VALID:
            where = f"validation of {where}"
        msg = (f"the loss is {value} at {where}. Lower the learning rate, clip gradients "
               "(GradientClippingConfig), or check the batch for NaN/inf inputs; "
               "LearnerBuilder.on_nan_loss('warn') keeps training.")
        if self.s.nan_loss == "warn":
            self._note("Warning: " + msg, logging.WARNING)
            return
        LOGGER.error("Training stopped: %s", msg)
        raise NonFiniteLossError("Training stopped: " + msg, metrics.epoch, iteration, metrics.split.value)

    def _valid_epoch(self, steps: CompiledSteps, model: Any, loader: Any, metrics: MetricsSet, epoch: int) -> bool:
        s = self.s
        _set_epoch(loader, epoch)
        total = len(loader) if hasattr(loader, "__len__") else None
        metrics.start_epoch(epoch)
        vm = model.valid()
        it = iter(loader)
        start = time.perf_counter()
        steps.reset_compile_time("valid")
        iteration = 0
        stopped = False
        try:
            for iteration, batch in enumerate(it, 1):
                item = steps.valid(vm, self._place(batch))
                item = self._local(item, self._multi.rows if self._multi is not None else None)
                done, tot = _progress_of(it, iteration)
                metrics.update(item, MetricMetadata(done, tot, epoch, s.num_epochs, iteration, None))
                if iteration % s.log_interval == 0 or iteration == total:
                    self._flush(metrics, TrainingProgress(done, tot, epoch, s.num_epochs, iteration, total,
                                                          time.perf_counter() - start,
                                                          **steps.compile_stats("valid")))
                if self._agree(s.interrupter.should_stop()):
                    stopped = True
                    break
        finally:
            _close(it)
        if stopped and iteration != total:
            return False  # the epoch's training is complete; resuming runs this validation again
        done, tot = _progress_of(it, iteration)
        self._flush(metrics, TrainingProgress(done, tot, epoch, s.num_epochs, iteration, total,
                                              time.perf_counter() - start,
                                              **steps.compile_stats("valid")))
        values = metrics.end_epoch()
        LOGGER.info("Epoch %d valid: %s", epoch, values)
        return True

    def _place(self, batch: Any) -> Any:
        """``batch`` split across the devices under ``MultiDevice``; unchanged otherwise."""
        return batch if self._multi is None else self._multi.place_batch(batch)

    def _local(self, obj: Any, rows: int | None = None) -> Any:
        """``obj`` (a step's results, the model, the optimizer) with this rank's part of each array that a step
        compiled as one program over the ranks spread over them (``ember_jax.to_local``; ``rows``: the global
        batch's, whose per-sample results give this rank's rows); unchanged otherwise."""
        return obj if self._multi is None else self._multi.local(obj, rows)

    def _one_program(self, replicas: Replicas, loader_train: Any, loader_valid: Any) -> bool:
        """Whether the DDP step runs as one compiled program over the ranks: on jax with compiled steps, without
        gradient accumulation, and when every rank's batches have the same size at each step (else the step is
        split at the gradients, averaged by a collective between the halves). The choice is logged."""
        s = self.s
        if replicas.world_size < 2 or s.device.inner.backend.name != "jax" or getattr(replicas.group, "engine",
                                                                                          None) != "jax":
            return False  # (a jax program spans the processes only when jax.distributed joined them)
        why = ("the steps are not compiled (LearnerBuilder.compile(False))" if not s.compile
               else "gradients are accumulated" if s.grads_accumulation is not None
               else "the last batch's rows are not split evenly over the ranks" if not (
                   splits_evenly(loader_train, replicas.world_size)
                   and splits_evenly(loader_valid, replicas.world_size))
               else None)
        if why is not None:
            LOGGER.info("DistributedDataParallel: the step is split at the gradients, averaged by a collective "
                        "between the halves: %s.", why)
            return False
        LOGGER.info("DistributedDataParallel: the step is one compiled program over the %d ranks (jax; XLA "
                    "all-reduces the gradients inside it).", replicas.world_size)
        return True

    def _agree(self, flag: bool) -> bool:
        """``flag`` on one process; under DDP, whether any rank's ``flag`` is set (every rank gets the same answer,
        so that all stop at the same step)."""
        return flag if self._replicas is None else self._replicas.any(flag)

    def _from_main(self, flag: bool) -> bool:
        """``flag``; under DDP, rank 0's ``flag`` on every rank."""
        return flag if self._replicas is None else self._replicas.from_main(flag)

    def _replicated_step(self, steps: CompiledSteps, replicas: Replicas, model: Any, optim: Any, batch: Any,
                         lr: Any) -> tuple[Any, Any]:
        """The DDP training step: this rank's gradients, averaged over the ranks, then the optimizer step (the
        same update on every rank). The ranks' stop flags ride with the gradients (``replicas.stop_seen``)."""
        if replicas.overlaps(steps.compiled):  # the buckets' all-reduces launched during the backward pass
            grads, item = replicas.grads_overlapped(model, partial(steps.grad, model, batch),
                                                    self.s.interrupter.should_stop)
            return steps.update(model, optim, grads, lr), item
        grads, item = steps.grad(model, batch)
        grads = replicas.reduce_grads(grads, stop=self.s.interrupter.should_stop())
        return steps.update(model, optim, grads, lr), item

    def _one_program_step(self, steps: CompiledSteps, replicas: Replicas, model: Any, optim: Any, batch: Any,
                          lr: Any) -> tuple[Any, Any]:
        """The DDP training step as one program over the ranks (jax): ``batch`` is already this rank's block of the
        global batch, the model and optimizer are replicated over the ranks; the ranks' stop flags ride in the
        program (``replicas.stop_seen``). The item comes back as this rank's part (its rows; the loss is the
        global batch's, which the metrics' weighted mean over the ranks keeps)."""
        from ember import Float, Tensor

        multi = self._multi
        assert multi is not None
        stop = 1.0 if self.s.interrupter.should_stop() else 0.0
        stops = multi.split(Tensor.from_data(np.asarray([stop]), steps.device.inner, Float))
        model, item, seen = steps.train(model, optim, batch, lr, stops)
        replicas.stop_seen = float(multi.local(seen).to_numpy().reshape(-1)[0]) > 0
        return model, multi.local(item, multi.rows)

    def _save_interrupted(self, checkpointer: LearnerCheckpointer | None, saving: LearnerCheckpointer | None,
                          model: Any, optim: Any, scheduler: Any, epoch: int) -> int | None:
        it = self._last_iteration
        if checkpointer is None:
            self._note(f"Training interrupted at epoch {epoch}, iteration {it}. No checkpointer is configured "
                       "(LearnerBuilder.with_file_checkpointer), so nothing was saved to resume from.")
            return None
        progress: dict[str, Any] = {"epoch": epoch, "iteration": it}
        if self._global_batch:
            progress.update(global_batch=self._global_batch, items=it * self._global_batch)
        # stopped during validation: the random states as the training epoch left them (validation runs again)
        after_train = self._after_train if it == self._train_total else None
        run_state = self._run_state(after_train)  # on every rank (a collective under DDP)
        if saving is not None:
            saving.save(epoch, self._local(model).into_record(), state_record(self._local(optim), "optimizer"),
                        state_record(scheduler, "scheduler"), progress=progress, state=run_state)
        self._note(
            f"Training interrupted at epoch {epoch}, iteration {it}; checkpoint saved in "
            f"{checkpointer.directory}. Resume with LearnerBuilder({str(self.s.artifact_dir)!r})...."
            f"checkpoint({epoch}).build(...).fit(...): it continues epoch {epoch} after iteration {it}."
        )
        return epoch

    def _summary(self, model: Any, store: MetricStore, metrics_train: list[tuple[Metric, bool]],
                 metrics_valid: list[tuple[Metric, bool]]) -> LearnerSummary:
        out = LearnerSummary(model=f"{type(model).__name__} ({model.num_params():,} parameters)")
        for split, metrics in ((Split.TRAIN, metrics_train), (Split.VALID, metrics_valid)):
            for m, _numeric in metrics:
                hist = store.history(m.name(), split)
                if not hist:
                    continue
                hib = m.higher_is_better if isinstance(m, Numeric) else None
                out.metrics.append(MetricSummary(split.value, m.name(), hist, hib, getattr(m, "unit", "").strip()))
                out.epochs = max(out.epochs, hist[-1][0])
        return out


def _no_train_fn(*args: Any) -> tuple[Any, Any]:
    raise AssertionError("gradient accumulation runs steps.grad and steps.update")


def _follower_settings(s: _Settings) -> _Settings:
    """The settings of a DDP rank other than 0: the same loop, writing nothing (no metric files, experiment log,
    trackers, plots or dashboard); rank 0 writes them with the metrics of all ranks."""
    from dataclasses import replace

    from .renderer._base import MetricsRenderer

    return replace(s, loggers_train=[], loggers_valid=[], renderer=MetricsRenderer(), app_logger=None, trackers=[],
                   plots=False, summary=False)


def _advice(steps: CompiledSteps, exc: Exception, split: str, step: str) -> str:
    """The end of a first-step failure message: the error, then what to check. A BackendError raised while a
    compiling backend traced the step (e.g. ``into_scalar`` on a traced tensor) already says what to do instead;
    the advice is then how to run the step eagerly."""
    text = str(exc).rstrip()
    text = text if text.endswith(".") else text + "."
    if steps.compiled and isinstance(exc, BackendError):
        return (f"{text} The steps are compiled by the {steps.device.inner.backend.name} backend; "
                "LearnerBuilder.compile(False) runs them eagerly (e.g. to debug a step with prints or breakpoints).")
    return f"{text} Check that the {split} loader's batcher produces the batch {step} expects."
