"""``DataLoaderBuilder``: configures and builds a ``DataLoader`` (Burn's ``DataLoaderBuilder``)."""

from __future__ import annotations

from typing import Any, Generic, TypeVar

from ._batcher import batch_function
from ._dataloader import DataLoader
from ._dataset import Dataset

__all__ = ["DataLoaderBuilder"]

O = TypeVar("O")  # noqa: E741


class DataLoaderBuilder(Generic[O]):
    """Burn's builder, method for method:

    .. code-block:: python

        loader = (DataLoaderBuilder(MnistBatcher())
                  .batch_size(64).shuffle(42).num_workers(4).set_device(device)
                  .build(MnistDataset.train()))

    Each setter returns the builder; :meth:`build` may be called several times (e.g. for the
    training and the test set). Settings are checked by :meth:`build` (see :class:`DataLoader`).
    """

    __slots__ = ("_batcher", "_settings")

    def __init__(self, batcher: Any) -> None:
        batch_function(batcher)  # fail early on a non-batcher
        self._batcher = batcher
        self._settings: dict[str, Any] = {}

    def batch_size(self, batch_size: int) -> DataLoaderBuilder[O]:
        """Items per batch (default 1, as Burn)."""
        self._settings["batch_size"] = batch_size
        return self

    def shuffle(self, seed: int) -> DataLoaderBuilder[O]:
        """Shuffle each epoch, deterministically from ``seed`` (an int >= 0)."""
        self._settings["shuffle"] = seed
        return self

    def num_workers(self, num_workers: int) -> DataLoaderBuilder[O]:
        """Background threads loading batches ahead (default 0: load in the caller's thread)."""
        self._settings["num_workers"] = num_workers
        return self

    def set_device(self, device: Any) -> DataLoaderBuilder[O]:
        """The device handed to the batcher (default: ``ember.device()``)."""
        self._settings["device"] = device
        return self

    def prefetch(self, num_batches: int) -> DataLoaderBuilder[O]:
        """Batches loaded ahead with workers (default ``2 * num_workers``; PyTorch's ``prefetch_factor``
        counts per worker, this counts in all)."""
        self._settings["prefetch"] = num_batches
        return self

    def shard(self, rank: int, world_size: int) -> DataLoaderBuilder[O]:
        """Load only rank ``rank``'s part of each global batch of ``batch_size * world_size`` items, for
        data-parallel training (see :meth:`DataLoader.shard`); ``batch_size`` stays the per-rank batch."""
        self._settings["rank"] = rank
        self._settings["world_size"] = world_size
        return self

    def build(self, dataset: Dataset[Any]) -> DataLoader[O]:
        """The data loader over ``dataset`` with these settings."""
        return DataLoader(dataset, self._batcher, **self._settings)
