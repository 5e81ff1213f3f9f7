"""``TrackingLogger``: the base of the loggers that follow a whole run (both splits, global steps, epoch means,
hyper-parameters), added with ``LearnerBuilder.with_metric_logger`` (Burn's name) next to the file loggers.

The Learner calls, in order: :meth:`TrackingLogger.start` once per ``fit`` (with the resume point when the
run continues from a checkpoint), :meth:`~TrackingLogger.log_iteration` for each metric entry of each step
(at each logging interval), :meth:`~TrackingLogger.log_epoch` with each epoch's mean, :meth:`~TrackingLogger.flush`
at each logging interval and epoch end, and :meth:`~TrackingLogger.close` when ``fit`` returns or raises
(Ctrl-C, errors). Subclasses implement the ``_``-less hooks they need; all have no-op defaults.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._errors import LearnerError

__all__ = ["EpochEndSteps", "ResumePoint", "RunInfo", "TrackingLogger", "hparams_of", "flat_hparams"]


@dataclass(frozen=True)
class ResumePoint:
    """Where a resumed run continues: ``epoch`` (1-based) after ``iteration`` training iterations of it
    (0: the epoch starts afresh). ``train_step`` / ``valid_step`` are the global iteration counts of each split
    logged before that point, so that the next entry has step ``train_step + 1`` (``valid_step + 1``).

    :meth:`keeps` says which of the entries an interrupted run logged belong to the resumed run: everything before
    ``epoch``; in ``epoch``, the training iterations up to ``iteration`` and, when the epoch's training was
    complete (``iteration > 0`` with nothing left to train), its epoch mean. The resumed run logs the rest again.
    """

    epoch: int
    iteration: int
    train_step: int
    valid_step: int

    def keeps(self, split: str, epoch: int, iteration: int | None) -> bool:
        """Whether an entry logged before the interruption stays (``iteration=None``: an epoch mean)."""
        if epoch != self.epoch:
            return epoch < self.epoch
        if split != "train" or self.iteration == 0:
            return False
        return iteration is None or iteration <= self.iteration


@dataclass(frozen=True)
class RunInfo:
    """What :meth:`TrackingLogger.start` receives.

    Attributes:
        artifact_dir: the Learner's artifact directory.
        hparams: the hyper-parameters (``LearnerBuilder.with_hyperparameters``), a JSON-compatible dict (may be
            empty).
        resume: ``None`` for a run that starts at epoch 1, else where it continues.
        num_epochs: the configured number of epochs.
        iterations_per_epoch: ``{"train": len(train loader), "valid": ...}`` (``None`` when a loader has no length).
        units: ``{metric name: unit}`` of the metrics that have one (``{"Accuracy": "%"}``; a metric's ``unit``).
    """

    artifact_dir: Path
    hparams: dict[str, Any] = field(default_factory=dict)
    resume: ResumePoint | None = None
    num_epochs: int = 1
    iterations_per_epoch: dict[str, int | None] = field(default_factory=dict)
    units: dict[str, str] = field(default_factory=dict)


def hparams_of(config: Any) -> dict[str, Any]:
    """A JSON-compatible dict of hyper-parameters: an ``@config`` object (its ``to_dict()``) or a mapping.

    Raises:
        LearnerError: anything else, or values that are not JSON-compatible.
    """
    if callable(getattr(config, "to_dict", None)):
        data = config.to_dict()
    elif isinstance(config, Mapping):
        data = dict(config)
    else:
        raise LearnerError(
            f"LearnerBuilder.with_hyperparameters: expected an @config object or a dict, got {type(config).__name__}; "
            "pass e.g. your TrainingConfig or {'lr': 1e-4, 'batch_size': 64}."
        )
    try:
        json.dumps(data, allow_nan=True)
    except (TypeError, ValueError) as exc:
        raise LearnerError(
            f"LearnerBuilder.with_hyperparameters: the hyper-parameters must be JSON-compatible (numbers, strings, "
            f"booleans, lists, dicts), but {exc}; convert such values to strings first."
        ) from exc
    return data


def flat_hparams(params: Mapping[str, Any], prefix: str = "") -> dict[str, float | int | str | bool]:
    """Nested hyper-parameters as one level of dotted keys (``{"optimizer.beta_1": 0.9}``), the form TensorBoard's
    HParams and MLflow's params take; lists become JSON strings, ``None`` the string ``"None"``."""
    out: dict[str, float | int | str | bool] = {}
    for k, v in params.items():
        key = f"{prefix}{k}"
        if isinstance(v, Mapping):
            out.update(flat_hparams(v, key + "."))
        elif isinstance(v, (bool, int, str)) or (isinstance(v, float) and math.isfinite(v)):
            out[key] = v
        else:
            out[key] = json.dumps(v) if isinstance(v, (list, tuple)) else str(v)
    return out


class EpochEndSteps:
    """The global training step at which each epoch's training ended, for loggers that put the validation of epoch
    ``e`` on the training steps' axis (as Keras and Lightning): feed it the training entries
    (:meth:`train`); :meth:`at` gives the step for an epoch's validation."""

    def __init__(self) -> None:
        self._step = self._epoch = 0
        self._per_epoch: int | None = None

    def start(self, run: RunInfo) -> None:
        r = run.resume
        self._step = 0 if r is None else r.train_step
        self._epoch = 0 if r is None else r.epoch - (0 if r.iteration else 1)
        self._per_epoch = run.iterations_per_epoch.get("train")

    def train(self, step: int, epoch: int) -> None:
        """A training entry of ``epoch`` at global step ``step``."""
        if step >= self._step:
            self._step, self._epoch = step, epoch

    def at(self, epoch: int) -> int:
        """The global training step at which ``epoch``'s training ended: its last training step logged (the
        loader's length times the epochs when no training metric was logged in it)."""
        if self._epoch == epoch or not self._per_epoch:
            return self._step
        return epoch * self._per_epoch

    def purge_step(self, run: RunInfo) -> int:
        """The first step of this run's validation entries: a resumed run hides those logged from there on."""
        r = run.resume
        return 1 if r is None else r.train_step - r.iteration + 1


class TrackingLogger:
    """A logger for an experiment tracker (TensorBoard, CSV, MLflow, your own): subclass it and override the hooks.

    Steps: an iteration entry carries its split's global step (1-based: iteration ``i`` of epoch ``e`` is
    ``i`` plus the iterations of that split's epochs before ``e``); epoch means carry the epoch.
    """

    def start(self, run: RunInfo) -> None:
        """Called once at the start of ``fit``; open files and runs here (``run.resume`` tells a resumed run)."""

    def log_iteration(self, split: str, name: str, value: float, epoch: int, iteration: int, step: int) -> None:
        """One step's value of metric ``name`` (``split``: ``"train"`` or ``"valid"``)."""

    def log_epoch(self, split: str, name: str, value: float, epoch: int) -> None:
        """The count-weighted mean of metric ``name`` over epoch ``epoch`` (the value of the summary)."""

    def restore(self, split: str, name: str, epoch: int, values: list[float], mean: float | None) -> None:
        """On resume: the per-iteration values an earlier run logged for ``epoch`` (read back from the file
        logs) and their count-weighted mean, for loggers that keep history in memory (the plots). Default: ignored.
        """

    def end_epoch(self, epoch: int) -> None:
        """Epoch ``epoch`` is complete (training and validation)."""

    def flush(self) -> None:
        """Make what was logged durable (each logging interval and epoch end)."""

    def close(self) -> None:
        """Flush and release files and runs (``fit`` ended, normally or not). Must be safe to call twice."""
