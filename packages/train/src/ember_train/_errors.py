"""Errors raised by ember-train; all derive from :class:`ember.EmberError`."""

from __future__ import annotations

from ember import EmberError

__all__ = ["LearnerError", "MetricAdaptError", "NonFiniteLossError", "CheckpointError"]


class LearnerError(EmberError):
    """The Learner cannot run: a model without ``train_step``, a batch the step rejects, a bad option."""


class MetricAdaptError(LearnerError, TypeError):
    """A step output cannot be adapted to a metric's input type (no adaptor registered)."""


class NonFiniteLossError(LearnerError, FloatingPointError):
    """The training loss became NaN or infinite; the message names the epoch and iteration.

    Attributes:
        epoch: 1-based epoch of the first non-finite loss.
        iteration: 1-based iteration inside that epoch.
        split: ``"train"`` or ``"valid"``.
    """

    def __init__(self, message: str, epoch: int, iteration: int, split: str) -> None:
        super().__init__(message)
        self.epoch = epoch
        self.iteration = iteration
        self.split = split


class CheckpointError(LearnerError):
    """A checkpoint is missing, incomplete or unreadable (names the files)."""
