"""Errors of ``ember.data``."""

from __future__ import annotations

from .._errors import EmberError

__all__ = ["DatasetError", "DataLoaderError"]


class DatasetError(EmberError, ValueError):
    """A dataset file is missing, malformed or truncated, or a dataset was given bad arguments.

    The message names the file (or the dataset) and says what to do.
    """


class DataLoaderError(EmberError, RuntimeError):
    """Loading a batch failed: ``dataset.get`` or the batcher raised.

    The original exception is the ``__cause__``. Attributes: ``batch_index`` (the batch's position in
    the epoch), ``indices`` (the dataset item indices of the batch, in batch order) and ``stage``
    (``"dataset.get"`` or ``"batcher.batch"``).
    """

    def __init__(self, message: str, batch_index: int = -1, indices: tuple[int, ...] = (), stage: str = "") -> None:
        super().__init__(message)
        self.batch_index = batch_index
        self.indices = indices
        self.stage = stage

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.args[0], self.batch_index, self.indices, self.stage))
