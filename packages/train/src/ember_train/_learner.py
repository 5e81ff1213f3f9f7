"""``Learner``: the training loop (Burn's ``Learner::fit``)."""

from __future__ import annotations

import logging
import sys
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from ._app_logger import LOGGER
from ._checks import require_method
from ._compiled import CompiledSteps
from ._early_stopping import EarlyStoppingStrategy
from ._errors import LearnerError, NonFiniteLossError
from ._first_steps import first_train_step, probe_valid
from ._fit_checkpoints import FitCheckpoints
from ._interrupter import TrainingInterrupter, sigint_stops
from ._iteration import close_iterator, progress_of, set_epoch
from ._metrics_set import MetricsSet
from ._run_state import capture, restore_rngs
from ._store import MetricStore, Split
from ._strategy import CheckpointingStrategy
from ._summary import LearnerSummary, MetricSummary
from ._tracking import ResumePoint, RunInfo, TrackingLogger
from ._updates import updates
from .metric._base import Metric, MetricMetadata, Numeric
from .renderer._base import MetricsRenderer, TrainingProgress
from .strategies import LearningMethod, LearningStrategy, SingleDevice

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
    compile_options: dict[str, Any] = field(default_factory=dict)
    trackers: list[TrackingLogger] = field(default_factory=list)
    hparams: dict[str, Any] = field(default_factory=dict)
    plots: bool = True
    learning_strategy: LearningStrategy | None = None


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

    The loop is the same for every learning strategy: at fixed points it calls the strategy's
    :class:`~ember_train.LearningMethod` (made by ``LearningStrategy.learning_method()`` for this fit) to prepare
    the loaders and the model, run a training step, reduce gradients and metrics, agree on stopping and hand back the
    trained model (:mod:`ember_train.strategies`). Under ``DistributedDataParallel`` each rank runs this loop with
    its shard of the data, gradients averaged over the ranks (:class:`~ember_train.DistributedDataParallel` says how,
    and what else changes: parameters broadcast from rank 0, metrics summed over the ranks, files written by rank 0
    only, a stop agreed by all ranks). Under ``MultiDevice`` the model and optimizer are replicated on the devices
    and each batch is split across them; the compiled step runs over all of them.
    """

    def __init__(self, model: Any, optim: Any, scheduler: Any, settings: _Settings) -> None:
        self.model = model
        self.optim = optim
        self.scheduler = scheduler
        self.s = settings
        self._trackers: list[TrackingLogger] = []
        self._method: LearningMethod = SingleDevice().learning_method()  # this fit's (see fit)
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
        method = self._method = (s.learning_strategy or SingleDevice()).learning_method()
        try:
            method.start(s.device)  # inside the try: whatever fails after joining a process group leaves it
            if not method.is_main:
                s = self.s = _follower_settings(s)
            app_logger = s.app_logger
            if method.is_main:
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
                method.log_stats()
                self._close_loggers()
                if app_logger is not None:
                    app_logger.uninstall()
        finally:
            method.close()

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
        s, method = self.s, self._method
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
        loader_train, loader_valid = method.prepare_loaders(loader_train, loader_valid)

        metrics_train = self._available(s.metrics_train)
        metrics_valid = self._available(s.metrics_valid)
        store = MetricStore()
        train = MetricsSet(Split.TRAIN, metrics_train, s.loggers_train, s.renderer, store, s.nan_loss != "ignore")
        valid = MetricsSet(Split.VALID, metrics_valid, s.loggers_valid, s.renderer, store, s.nan_loss != "ignore")
        train.reduce = valid.reduce = method.metric_sum()
        train.iterations_total = len(loader_train) if hasattr(loader_train, "__len__") else None
        valid.iterations_total = len(loader_valid) if hasattr(loader_valid, "__len__") else None

        checkpoints = FitCheckpoints(s, method, self._note, loader_train)
        start, skip = 1, 0
        resumed: dict[str, Any] | None = None  # this process's random states saved with the checkpoint resumed
        if s.checkpoint is not None:
            model, optim, scheduler, start, skip = checkpoints.restore(model, optim, scheduler)
            resumed = checkpoints.resumed_state(loader_train)
            for e in range(1, start + (1 if skip else 0)):
                train.reload(e)
                if e < start:
                    valid.reload(e)
        model = method.prepare_model(model)
        train.trackers = valid.trackers = self._start_trackers(train, valid, start, skip)
        train.replay()
        valid.replay()
        LOGGER.info("Fitting %s (%d parameters) for %d epochs on %s, artifacts in %s",
                    type(model).__name__, model.num_params(), s.num_epochs, device, s.artifact_dir)
        split = method.plan_step(s.compile, s.grads_accumulation is not None, loader_train, loader_valid)
        steps = CompiledSteps(device, s.compile, accumulation=s.grads_accumulation is not None or split,
                              options=s.compile_options)
        # "compiling the training step" while a first call compiles (a renderer without the hook: none)
        steps.on_compile = getattr(s.renderer, "compiling", None)
        if steps.compiled and hasattr(optim, "init_states"):
            optim.init_states(model)  # the states' steady layout from the first step: traced once, not twice
        model, optim = method.prepare(model, optim, steps)
        if loader_valid is not None:
            probe_valid(steps, method, model, loader_valid, valid)

        epoch = start - 1
        stopped_early = interrupted = False
        stop_reason = ""
        resume_epoch = None
        for epoch in range(start, s.num_epochs + 1):
            if s.seed is not None:
                device.backend.seed(s.seed * 1_000_003 + epoch + 7_919 * method.seed_rank)
            model, done = self._train_epoch(steps, model, optim, scheduler, loader_train, train, epoch,
                                             skip if epoch == start else 0, first=epoch == start,
                                             resumed=resumed if epoch == start else None)
            model = method.end_epoch(model)  # before the validation and the checkpoints (also of an interrupted epoch)
            if done and loader_valid is not None:
                # stopped right at the end of training: leave validation to the resumed run
                done = (not method.agree(s.interrupter.should_stop())
                        and self._valid_epoch(steps, model, loader_valid, valid, epoch))
            if done:
                for t in train.trackers:
                    t.end_epoch(epoch)
            if not done:
                interrupted = True
                stop_reason = s.interrupter.reason or "interrupted"
                # stopped during validation: the random states as the training epoch left them (validation runs again)
                after_train = self._after_train if self._last_iteration == self._train_total else None
                resume_epoch = checkpoints.save_interrupted(model, optim, scheduler, epoch, self._last_iteration,
                                                            after_train)
                break
            stopping = method.agree(s.interrupter.should_stop())
            checkpoints.after_epoch(store, stopping, model, optim, scheduler, epoch)
            if stopping:
                interrupted = True
                stop_reason = s.interrupter.reason or "interrupted"
                resume_epoch = epoch if epoch in checkpoints.saved else None
                where = (f"resume with LearnerBuilder(...).checkpoint({epoch}) to continue at epoch {epoch + 1}"
                         if resume_epoch else "no checkpointer is configured, so nothing was saved")
                self._note(f"Training interrupted after epoch {epoch} ({stop_reason}); {where}.")
                break
            if s.early_stopping is not None and method.from_main(s.early_stopping.should_stop(epoch, store)):
                stopped_early = True
                stop_reason = s.early_stopping.reason()
                self._note(f"Early stopping after epoch {epoch}: {stop_reason}.")
                break

        model = method.finish(model, steps)
        summary = self._summary(model, store, metrics_train, metrics_valid)
        if method.is_main:
            summary.save(s.artifact_dir)
        LOGGER.info("Training ended at epoch %d\n%s", epoch, summary.table())
        s.renderer.on_train_end(summary if s.summary else None)
        return TrainingResult(model, summary, epoch, stopped_early, interrupted, resume_epoch, stop_reason,
                              sorted(checkpoints.saved))

    def _available(self, metrics: list[tuple[Metric, bool]]) -> list[tuple[Metric, bool]]:
        out = []
        for m, numeric in metrics:
            why = m.available()
            if why is None:
                out.append((m, numeric))
            else:
                self._note(f"Skipping the {m.name()} metric: {why}.", logging.WARNING)
        return out

    def _train_epoch(self, steps: CompiledSteps, model: Any, optim: Any, scheduler: Any, loader: Any,
                     metrics: MetricsSet, epoch: int, skip: int, first: bool,
                     resumed: dict[str, Any] | None = None) -> tuple[Any, bool]:
        """One training epoch from iteration ``skip + 1``. ``resumed``: the random states saved with the checkpoint
        this run resumes, restored where the interrupted run saved them: after the skipped batches were loaded (so
        that a batcher's draws are not repeated), or at the epoch's start for a finished epoch (the backend's only
        without a seed: with one every epoch starts from its own seed, as in the uninterrupted run)."""
        s, method = self.s, self._method
        backend = s.device.backend
        if resumed is not None and not skip:
            restore_rngs(backend, resumed, "all" if s.seed is None else "host")
        set_epoch(loader, epoch)
        total = len(loader) if hasattr(loader, "__len__") else None
        metrics.start_epoch(epoch, skip)
        LOGGER.info("Training epoch %d/%d%s", epoch, s.num_epochs, f" from iteration {skip + 1}" if skip else "")
        update = updates(method, steps, s.interrupter.should_stop, s.grads_accumulation)
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
                batch = method.place(batch)
                lr = float(scheduler.step())
                step = partial(update.step, model, optim, batch, steps.lr(lr))
                if first:
                    model, item = first_train_step(steps, model, batch, metrics, step)
                    first = False
                else:
                    model, item = step()
                done, tot = progress_of(it, iteration)
                metrics.update(item, MetricMetadata(done, tot, epoch, s.num_epochs, iteration, lr))
                if iteration % s.log_interval == 0 or iteration == total:
                    self._flush(metrics, TrainingProgress(done, tot, epoch, s.num_epochs, iteration, total,
                                                          time.perf_counter() - start,
                                                          **steps.compile_stats("train")))
                if update.should_stop(iteration == total):
                    completed = iteration == total
                    break
        finally:
            close_iterator(it)
        if iteration > skip:
            done, tot = progress_of(it, iteration)
            self._flush(metrics, TrainingProgress(done, tot, epoch, s.num_epochs, iteration, total,
                                                  time.perf_counter() - start,
                                                  **steps.compile_stats("train")))
        self._last_iteration = iteration
        self._train_total = total
        if not completed:
            return model, False
        self._after_train = capture(backend)
        update.end_epoch(epoch)
        values = metrics.end_epoch()
        LOGGER.info("Epoch %d train: %s", epoch, values)
        return model, True

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
        set_epoch(loader, epoch)
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
                item = self._method.local_item(steps.valid(vm, self._method.place(batch)))
                done, tot = progress_of(it, iteration)
                metrics.update(item, MetricMetadata(done, tot, epoch, s.num_epochs, iteration, None))
                if iteration % s.log_interval == 0 or iteration == total:
                    self._flush(metrics, TrainingProgress(done, tot, epoch, s.num_epochs, iteration, total,
                                                          time.perf_counter() - start,
                                                          **steps.compile_stats("valid")))
                if self._method.agree(s.interrupter.should_stop()):
                    stopped = True
                    break
        finally:
            close_iterator(it)
        if stopped and iteration != total:
            return False  # the epoch's training is complete; resuming runs this validation again
        done, tot = progress_of(it, iteration)
        self._flush(metrics, TrainingProgress(done, tot, epoch, s.num_epochs, iteration, total,
                                              time.perf_counter() - start,
                                              **steps.compile_stats("valid")))
        values = metrics.end_epoch()
        LOGGER.info("Epoch %d valid: %s", epoch, values)
        return True

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


def _follower_settings(s: _Settings) -> _Settings:
    """The settings of a DDP rank other than 0: the same loop, writing nothing (no metric files, experiment log,
    trackers, plots or dashboard); rank 0 writes them with the metrics of all ranks."""
    from dataclasses import replace

    from .renderer._base import MetricsRenderer

    return replace(s, loggers_train=[], loggers_valid=[], renderer=MetricsRenderer(), app_logger=None, trackers=[],
                   plots=False, summary=False)
