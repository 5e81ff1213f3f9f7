"""``LearnerBuilder`` (Burn's): every option of the training loop, then ``build(model, optim, lr)``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ._app_logger import FileApplicationLoggerInstaller
from ._checks import require_method
from ._early_stopping import EarlyStoppingStrategy
from ._errors import LearnerError
from ._interrupter import TrainingInterrupter
from ._learner import Learner, _Settings
from ._logger import FileMetricLogger
from ._records import as_scheduler
from ._strategy import CheckpointingStrategy, default_checkpointing_strategy
from ._tracking import TrackingLogger, hparams_of
from .metric._base import Metric
from .renderer._base import MetricsRenderer
from .strategies import LearningStrategy, MultiDevice, SingleDevice

__all__ = ["LearnerBuilder"]

_UNSET: Any = object()


def _check_metric(where: str, metric: Any) -> Metric:
    if not isinstance(metric, Metric):
        raise LearnerError(
            f"LearnerBuilder.{where}: expected a Metric (e.g. AccuracyMetric()), got {type(metric).__name__}; "
            "user metrics subclass ember_train.metric.Metric (and Numeric for plotted ones)."
        )
    return metric


class LearnerBuilder:
    """Configures a :class:`Learner` (Burn's ``LearnerBuilder``), method for method::

        learner = (LearnerBuilder(artifact_dir)
            .metric_train_numeric(AccuracyMetric()).metric_valid_numeric(AccuracyMetric())
            .metric_train_numeric(LossMetric()).metric_valid_numeric(LossMetric())
            .with_file_checkpointer(CompactRecorder())
            .devices([device]).num_epochs(10).summary()
            .build(model, AdamConfig().init(), 1e-4))
        result = learner.fit(dataloader_train, dataloader_valid)

    Defaults (Burn's): 1 epoch, the model's device, no checkpointer, checkpointing strategy "keep the last 2
    and the best by validation loss", file metric loggers under ``train/`` and ``valid/``, the application
    log in ``experiment.log``, plots in ``plots/`` (with matplotlib), the terminal dashboard on a terminal and
    plain lines otherwise, no extra metric loggers (:meth:`with_metric_logger`), no early stopping, no summary
    printout (it is always saved as ``summary.txt``/``summary.json``), and steps compiled by the training backend
    (jax, torch; see :meth:`compile`).

    Args:
        artifact_dir: where logs, checkpoints and the summary go (created when missing).
    """

    def __init__(self, artifact_dir: str | os.PathLike[str]) -> None:
        self._dir = Path(artifact_dir)
        self._metrics_train: list[tuple[Metric, bool]] = []
        self._metrics_valid: list[tuple[Metric, bool]] = []
        self._loggers: tuple[list[Any], list[Any]] | None = None
        self._renderer: MetricsRenderer | None = None
        self._num_epochs = 1
        self._devices: list[Any] | None = None
        self._grads_accumulation: int | None = None
        self._recorder: Any = None
        self._checkpoint: int | None = None
        self._strategy: CheckpointingStrategy = default_checkpointing_strategy()
        self._early_stopping: EarlyStoppingStrategy | None = None
        self._summary = False
        self._interrupter = TrainingInterrupter()
        self._app_logger: Any = _UNSET
        self._log_interval = 10
        self._nan_loss = "raise"
        self._seed: int | None = None
        self._compile = True
        self._compile_options: dict[str, Any] = {}
        self._trackers: list[TrackingLogger] = []
        self._hparams: dict[str, Any] = {}
        self._plots = True
        self._learning_strategy: LearningStrategy | None = None

    # -- metrics -----------------------------------------------------------------------------------
    def metric_train(self, metric: Metric) -> LearnerBuilder:
        """Log and display ``metric`` on the training steps."""
        self._metrics_train.append((_check_metric("metric_train", metric), False))
        return self

    def metric_valid(self, metric: Metric) -> LearnerBuilder:
        """Log and display ``metric`` on the validation steps."""
        self._metrics_valid.append((_check_metric("metric_valid", metric), False))
        return self

    def metric_train_numeric(self, metric: Metric) -> LearnerBuilder:
        """As :meth:`metric_train`, for a numeric metric: also plotted and usable by strategies."""
        self._metrics_train.append((_check_metric("metric_train_numeric", metric), True))
        return self

    def metric_valid_numeric(self, metric: Metric) -> LearnerBuilder:
        """As :meth:`metric_valid`, for a numeric metric: also plotted and usable by strategies."""
        self._metrics_valid.append((_check_metric("metric_valid_numeric", metric), True))
        return self

    def metric_loggers(self, logger_train: Any, logger_valid: Any) -> LearnerBuilder:
        """Replace the default file loggers (Burn's ``metric_loggers``); each may be a logger or a list."""
        def as_list(x: Any) -> list[Any]:
            return list(x) if isinstance(x, (list, tuple)) else [x]

        self._loggers = (as_list(logger_train), as_list(logger_valid))
        return self

    def with_metric_logger(self, logger: TrackingLogger) -> LearnerBuilder:
        """Add a logger that follows the whole run (Burn's ``with_metric_logger``): :class:`TensorBoardLogger`,
        :class:`CsvLogger`, :class:`MlflowLogger` or your :class:`TrackingLogger` subclass. Call it once per logger;
        the file loggers (``train|valid/epoch-N/<Metric>.log``) stay.

        Raises:
            LearnerError: ``logger`` is not a ``TrackingLogger`` (a per-split ``MetricLogger`` goes to
                :meth:`metric_loggers`).
        """
        if not isinstance(logger, TrackingLogger):
            raise LearnerError(
                f"LearnerBuilder.with_metric_logger: expected a TrackingLogger (TensorBoardLogger, CsvLogger, "
                f"MlflowLogger or a subclass), got {type(logger).__name__}; a per-split MetricLogger such as "
                "FileMetricLogger goes to .metric_loggers(train, valid)."
            )
        self._trackers.append(logger)
        return self

    def with_hyperparameters(self, config: Any) -> LearnerBuilder:
        """The run's hyper-parameters, logged by the loggers that support them (TensorBoard's HParams and a
        ``config`` text, MLflow's params and ``config.json`` artifact): an ``@config`` object (e.g. the training
        config) or a JSON-compatible dict. Not in Burn.

        Raises:
            LearnerError: neither a config nor a dict, or values that are not JSON-compatible.
        """
        self._hparams = hparams_of(config)
        return self

    def plots(self, enabled: bool = True) -> LearnerBuilder:
        """Write ``plots/<Metric>.png`` and ``plots/index.html`` at each epoch end (default on; needs matplotlib:
        ``pip install 'ember-train[plot]'``, without it the Learner says so once and trains on). Not in Burn.

        Raises:
            LearnerError: ``enabled`` is not a bool.
        """
        if not isinstance(enabled, bool):
            raise LearnerError(f"LearnerBuilder.plots: expected True or False, got {enabled!r}.")
        self._plots = enabled
        return self

    def renderer(self, renderer: MetricsRenderer) -> LearnerBuilder:
        """Replace the default renderer (dashboard on a terminal, plain lines otherwise)."""
        self._renderer = renderer
        return self

    # -- loop ---------------------------------------------------------------------------------------
    def num_epochs(self, num_epochs: int) -> LearnerBuilder:
        """The number of epochs (Burn's default 1)."""
        if not isinstance(num_epochs, int) or num_epochs < 1:
            raise LearnerError(f"LearnerBuilder.num_epochs: expected an int >= 1, got {num_epochs!r}.")
        self._num_epochs = num_epochs
        return self

    def devices(self, devices: list[Any]) -> LearnerBuilder:
        """The training device (an autodiff device); validation runs on its inner device. Several devices train
        data-parallel in this process (the :class:`MultiDevice` strategy, as Burn); under
        :class:`DistributedDataParallel` the list holds this rank's device.

        Raises:
            LearnerError: an empty list.
        """
        devices = list(devices)
        if not devices:
            raise LearnerError("LearnerBuilder.devices: pass at least one device (an autodiff device).")
        self._devices = devices
        return self

    def learning_strategy(self, strategy: LearningStrategy) -> LearnerBuilder:
        """How the Learner spreads training over devices and processes (Burn's ``learning_strategy``):
        :class:`SingleDevice` (the default), :class:`MultiDevice` (several devices of this process) or
        :class:`DistributedDataParallel` (one process per device, started by ``torchrun`` or
        ``python -m ember_train.launch``), or your own :class:`LearningStrategy` subclass, whose
        ``learning_method()`` gives the object the Learner's loop calls (:mod:`ember_train.strategies`).

        Raises:
            LearnerError: not a ``LearningStrategy``.
        """
        if not isinstance(strategy, LearningStrategy):
            raise LearnerError(
                "LearnerBuilder.learning_strategy: expected SingleDevice(...), MultiDevice([...]), "
                f"DistributedDataParallel(...) or another LearningStrategy, got {type(strategy).__name__}."
            )
        self._learning_strategy = strategy
        return self

    def grads_accumulation(self, accumulation: int) -> LearnerBuilder:
        """Sum the gradients of ``accumulation`` steps before each optimizer step (Burn's; leftover steps at
        the end of an epoch are dropped, as Burn). The learning rate is the scheduler's at the applying step."""
        if not isinstance(accumulation, int) or accumulation < 1:
            raise LearnerError(f"LearnerBuilder.grads_accumulation: expected an int >= 1, got {accumulation!r}.")
        self._grads_accumulation = accumulation if accumulation > 1 else None
        return self

    def log_interval(self, iterations: int) -> LearnerBuilder:
        """Iterations between metric read-backs, log writes and redraws (default 10; 1 reads back every step).
        Device metrics are converted to host numbers once per interval."""
        if not isinstance(iterations, int) or iterations < 1:
            raise LearnerError(f"LearnerBuilder.log_interval: expected an int >= 1, got {iterations!r}.")
        self._log_interval = iterations
        return self

    def on_nan_loss(self, action: str) -> LearnerBuilder:
        """What a NaN/inf training or validation loss does: ``"raise"`` (default: stop with
        ``NonFiniteLossError`` naming epoch and iteration), ``"warn"`` or ``"ignore"``."""
        if action not in ("raise", "warn", "ignore"):
            raise LearnerError(f"LearnerBuilder.on_nan_loss: expected 'raise', 'warn' or 'ignore', got {action!r}.")
        self._nan_loss = action
        return self

    def seed(self, seed: int) -> LearnerBuilder:
        """Re-seed the training backend at the start of every epoch with ``(seed, epoch)``, so that random
        layers (Dropout) draw the same numbers in a resumed run as in an uninterrupted one (under
        ``DistributedDataParallel`` the rank is mixed in: each rank draws its own). Not in Burn."""
        self._seed = int(seed)
        return self

    def compile(self, enabled: bool = True, **options: Any) -> LearnerBuilder:
        """Compile the training and validation steps with the training backend (default on; not in Burn).

        The Learner wraps each whole step (``train_step``, Ember's backward and ``optim.step``; ``valid_step``)
        with ``device.backend.compile``: jax compiles it with ``ember_jax.jit`` (traced once per batch shape,
        no recompilation in later epochs; on an accelerator the training step donates a private copy of the model,
        made at the first step and updated in place afterwards, so the model given to :meth:`build` is never
        changed); torch captures it with ``ember_torch.compile`` (one aten graph per batch shape: replayed as it
        is on the CPU, where an inductor compile takes tens of seconds, and compiled by inductor on CUDA; see
        ``docs/torch.md``); numpy runs it eagerly. ``compile(False)`` runs the
        steps eagerly on every backend, so that Python code inside a step (``print``, ``breakpoint()``,
        ``into_scalar``) sees values; a compiled step only sees traced tensors, and a host read there fails on
        the first batch with a ``LearnerError`` that says so.

        ``options`` go to the backend's ``compile`` for every step: torch's ``mode`` (``"capture"``: the captured
        graph without inductor, no compile time; ``"default"``: inductor), ``backend`` and ``options``
        (:func:`ember_torch.compile`); jax's ``donate_state`` (:func:`ember_jax.jit`; the Learner itself decides
        the model's donation). E.g. ``compile(mode="capture")`` on CUDA for a short run, where inductor's compile
        (13-35 s per batch shape on an H200, ``docs/torch.md``) would not pay back.

        Raises:
            LearnerError: ``enabled`` is not a bool; options with ``enabled=False``. An option the backend does
                not take is refused when ``fit`` starts, with the backend's reason.
        """
        if not isinstance(enabled, bool):
            raise LearnerError(f"LearnerBuilder.compile: expected True or False, got {enabled!r}.")
        if options and not enabled:
            raise LearnerError(f"LearnerBuilder.compile: options {sorted(options)} given with compile(False), which "
                               "runs the steps eagerly: drop them, or compile.")
        self._compile_options = dict(options)
        self._compile = enabled
        return self

    # -- checkpoints and stopping ------------------------------------------------------------------------
    def with_file_checkpointer(self, recorder: Any) -> LearnerBuilder:
        """Save checkpoints in ``checkpoint/``: ``{model,optim,scheduler}-N.<ext>`` and ``manifest-N.json``, which
        makes a checkpoint complete (written last and atomically: a checkpoint is complete or ignored whatever
        moment a kill -9 hits) and holds the run's random states (resume is bitwise, dropout included).

        Every part is written at full precision by ``recorder``'s kind of recorder (float32, or float64 when a record
        holds 64-bit tensors), whatever its precision settings: ``CompactRecorder()`` picks gzipped msgpack files,
        not float16 checkpoints, since a resumed run must continue bitwise. Save the final model with the compact
        recorder for a small file."""
        if not callable(getattr(recorder, "record", None)) or not callable(getattr(recorder, "file_path", None)):
            raise LearnerError(
                "LearnerBuilder.with_file_checkpointer: expected a file recorder (e.g. "
                f"ember.record.CompactRecorder()), got {type(recorder).__name__}."
            )
        self._recorder = recorder
        return self

    def checkpoint(self, epoch: int) -> LearnerBuilder:
        """Resume from the checkpoint of ``epoch`` (model, optimizer and scheduler): training continues at
        ``epoch + 1``, or inside ``epoch`` when it was interrupted. See :func:`ember_train.last_checkpoint`."""
        if not isinstance(epoch, int) or epoch < 1:
            raise LearnerError(f"LearnerBuilder.checkpoint: expected an epoch >= 1, got {epoch!r}.")
        self._checkpoint = epoch
        return self

    def with_checkpointing_strategy(self, strategy: CheckpointingStrategy) -> LearnerBuilder:
        """Which checkpoints to keep (default: the last 2 and the best by validation loss)."""
        self._strategy = strategy
        return self

    def early_stopping(self, strategy: EarlyStoppingStrategy) -> LearnerBuilder:
        """Stop when ``strategy.should_stop`` says so after an epoch (e.g. :class:`MetricEarlyStoppingStrategy`)."""
        self._early_stopping = strategy
        return self

    def summary(self) -> LearnerBuilder:
        """Print the summary table at the end of training (Burn's ``summary``)."""
        self._summary = True
        return self

    def interrupter(self) -> TrainingInterrupter:
        """The interrupter the Learner checks after every step (Burn's ``interrupter``)."""
        return self._interrupter

    def with_interrupter(self, interrupter: TrainingInterrupter) -> LearnerBuilder:
        """Use ``interrupter`` (Burn's ``with_interrupter``); Ctrl-C also triggers it during ``fit``."""
        self._interrupter = interrupter
        return self

    def with_application_logger(self, installer: Any) -> LearnerBuilder:
        """Replace the ``experiment.log`` writer (an object with ``install()``/``uninstall()``); ``None``
        disables it."""
        self._app_logger = installer
        return self

    # -- build ----------------------------------------------------------------------------------------
    def build(self, model: Any, optim: Any, lr_or_scheduler: Any) -> Learner:
        """The :class:`Learner`.

        Args:
            model: a module with ``train_step`` (and ``valid_step`` for validation).
            optim: an optimizer (``step(lr, model, grads) -> model``, ``to_record``/``load_record`` for checkpoints).
            lr_or_scheduler: a float, a scheduler (``step() -> float``) or a scheduler config (``init()``).

        Raises:
            LearnerError: the model has no ``train_step``, the optimizer no ``step``, a bad ``lr``.
        """
        require_method(model, "train_step", "TrainOutput(model, grads, item)", "LearnerBuilder.build")
        if not callable(getattr(optim, "step", None)):
            raise LearnerError(
                f"LearnerBuilder.build: the optimizer ({type(optim).__name__}) has no step(lr, model, grads); pass "
                "an optimizer such as ember.optim.AdamConfig().init()."
            )
        scheduler = as_scheduler(lr_or_scheduler)
        strategy = self._learning_strategy
        named = strategy.training_devices() if strategy is not None else None
        devices = named if named is not None else self._devices
        if strategy is None:
            strategy = MultiDevice(tuple(devices)) if devices is not None and len(devices) > 1 else SingleDevice()
        if devices is not None and devices:
            device = devices[0]
        else:
            devs = model.devices()
            if not devs:
                raise LearnerError("LearnerBuilder.build: the model has no tensors; pass .devices([device]).")
            device = devs[0]
        strategy.check(devices if devices is not None else [device])  # refuses what it cannot train on, now
        if self._loggers is None:
            loggers = ([FileMetricLogger(self._dir / "train")], [FileMetricLogger(self._dir / "valid")])
        else:
            loggers = self._loggers
        renderer = self._renderer
        if renderer is None:
            from .renderer import default_renderer

            renderer = default_renderer()
        app_logger = self._app_logger
        if app_logger is _UNSET:
            app_logger = FileApplicationLoggerInstaller(self._dir / "experiment.log")
        settings = _Settings(
            artifact_dir=self._dir, metrics_train=list(self._metrics_train), metrics_valid=list(self._metrics_valid),
            loggers_train=loggers[0], loggers_valid=loggers[1], renderer=renderer, num_epochs=self._num_epochs,
            device=device, grads_accumulation=self._grads_accumulation, recorder=self._recorder,
            checkpoint=self._checkpoint, strategy=self._strategy, early_stopping=self._early_stopping,
            summary=self._summary, interrupter=self._interrupter, app_logger=app_logger,
            log_interval=self._log_interval, nan_loss=self._nan_loss, seed=self._seed, compile=self._compile,
            compile_options=self._compile_options,
            trackers=list(self._trackers), hparams=dict(self._hparams), plots=self._plots,
            learning_strategy=strategy,
        )
        return Learner(model, optim, scheduler, settings)
