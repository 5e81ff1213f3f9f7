"""``DataLoader``: batches of a dataset, made by a batcher, on a device (Burn's ``DataLoader``)."""

from __future__ import annotations

import weakref
from typing import Any, Generic, TypeVar

import numpy as np

from ._batcher import batch_function
from ._dataloader_iter import DataLoaderIterator
from ._dataset import Dataset, check_dataset
from ._errors import DatasetError
from ._progress import Progress
from ._transform_partial import PartialDataset

__all__ = ["DataLoader"]

O = TypeVar("O")  # noqa: E741


def _check_int(op: str, name: str, value: Any, low: int) -> int:
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < low:
        raise DatasetError(f"{op}: {name} must be an int >= {low}, got {value!r}.")
    return int(value)


class DataLoader(Generic[O]):
    """Iterates a dataset in batches: ``for batch in loader`` (an epoch each time).

    Made by :class:`DataLoaderBuilder` (Burn's API); the constructor takes the same settings.

    - ``len(loader)`` is the number of batches per epoch, ``ceil(num_items / batch_size)`` (the last
      batch holds the remainder, as Burn's ``FixBatchStrategy``); :meth:`num_items` the items.
    - Each ``iter(loader)`` is a new epoch and returns a :class:`DataLoaderIterator` with
      ``progress()``. With a shuffle seed, epoch ``e`` visits the items in the order
      ``numpy.random.default_rng([seed, e]).permutation(num_items)``: deterministic for a seed,
      different every epoch, and the same with any number of workers. Without a seed, in index order.
    - The batcher receives the loader's device: the one set with ``set_device`` / :meth:`to_device`,
      else ``ember.device()`` (the default backend's default device), resolved at each epoch's start.
    - ``num_workers > 0`` loads batches ahead in that many background threads (see
      :class:`DataLoaderIterator`); ``0`` loads each batch in the caller's thread when asked.
    - Sharded for data-parallel training (:meth:`shard`, ``DataLoaderBuilder.shard``; the Learner's
      ``DistributedDataParallel`` strategy shards its loaders itself): ``batch_size`` is the batch of one rank,
      and every rank walks the same global batches of ``batch_size * world_size`` items (the same shuffle on
      every rank: the seed and epoch, not the rank, make the order). Rank ``r`` takes the ``r``-th contiguous
      part of each global batch, so the ranks' shards are disjoint and together they are exactly the batches
      of an unsharded loader with ``batch_size * world_size``. The last, partial global batch is kept (as the
      unsharded loader keeps it) and cut into ``world_size`` parts as equal as possible (``numpy.array_split``);
      a rank whose part would be empty (fewer items left than ranks) takes the batch's last item again, so
      every rank runs the same number of steps, ``len(loader) = ceil(num_items / (batch_size * world_size))``.

    Args:
        dataset: any object with ``get(index)`` and ``__len__`` (a :class:`Dataset`).
        batcher: a :class:`Batcher` or a function ``(items, device) -> batch``.
        batch_size: items per batch, ``>= 1`` (Burn's default 1).
        shuffle: the shuffle seed (an int ``>= 0``), or ``None`` for index order.
        num_workers: background threads, ``>= 0``.
        device: the device handed to the batcher.
        prefetch: batches loaded ahead with workers (default ``2 * num_workers``).
        rank: this process's shard, ``0 <= rank < world_size`` (default 0).
        world_size: the number of shards (data-parallel ranks), ``>= 1`` (default 1: not sharded).

    Raises:
        DatasetError: a setting out of range. TypeError: ``dataset`` or ``batcher`` of the wrong kind.
    """

    __slots__ = ("_dataset", "_batcher", "_batch_fn", "_batch_size", "_seed", "_num_workers", "_device",
                 "_prefetch", "_epoch", "_last", "_rank", "_world_size")

    def __init__(self, dataset: Dataset[Any], batcher: Any, *, batch_size: int = 1, shuffle: int | None = None,
                 num_workers: int = 0, device: Any = None, prefetch: int | None = None, rank: int = 0,
                 world_size: int = 1) -> None:
        self._dataset = check_dataset("DataLoader", dataset)
        self._batcher = batcher
        self._batch_fn = batch_function(batcher)
        self._batch_size = _check_int("DataLoader", "batch_size", batch_size, 1)
        self._seed = None if shuffle is None else _check_int("DataLoader", "shuffle seed", shuffle, 0)
        self._num_workers = _check_int("DataLoader", "num_workers", num_workers, 0)
        self._prefetch = None if prefetch is None else _check_int("DataLoader", "prefetch", prefetch, 1)
        self._device = device
        self._world_size = _check_int("DataLoader", "world_size", world_size, 1)
        self._rank = _check_int("DataLoader", "rank", rank, 0)
        if self._rank >= self._world_size:
            raise DatasetError(f"DataLoader: rank must be < world_size ({self._world_size}), got {rank!r}.")
        self._epoch = 0
        self._last: weakref.ref[DataLoaderIterator[O]] | None = None

    def _replace(self, **changes: Any) -> DataLoader[O]:
        settings: dict[str, Any] = {
            "dataset": self._dataset, "batch_size": self._batch_size, "shuffle": self._seed,
            "num_workers": self._num_workers, "device": self._device, "prefetch": self._prefetch,
            "rank": self._rank, "world_size": self._world_size,
        }
        settings.update(changes)
        dataset = settings.pop("dataset")
        new: DataLoader[O] = DataLoader(dataset, self._batcher, **settings)
        new._epoch = self._epoch
        return new

    # -- Burn's DataLoader trait ---------------------------------------------------------------

    def iter(self) -> DataLoaderIterator[O]:
        """A new epoch (Burn's ``iter``); the epoch counter advances."""
        epoch = self._epoch
        self._epoch += 1
        n = len(self._dataset)
        order = None
        if self._seed is not None:
            order = np.random.default_rng([self._seed, epoch]).permutation(n).astype(np.int64)
        device = self._device
        if device is None:
            from ..backend import device as default_device

            device = default_device()
        it: DataLoaderIterator[O] = DataLoaderIterator(
            self._dataset.get, self._batch_fn, device, n, self._batch_size * self._world_size, order,
            self._num_workers, epoch=epoch, prefetch=self._prefetch, shard=(self._rank, self._world_size),
        )
        self._last = weakref.ref(it)
        return it

    def __iter__(self) -> DataLoaderIterator[O]:
        return self.iter()

    def num_items(self) -> int:
        """The number of items per epoch (Burn's ``num_items``)."""
        return len(self._dataset)

    def __len__(self) -> int:
        """The number of batches per epoch (the same on every rank of a sharded loader)."""
        return -(-len(self._dataset) // self.global_batch_size)

    def shard(self, rank: int, world_size: int) -> DataLoader[O]:
        """A loader that yields rank ``rank``'s part of each global batch of ``batch_size * world_size``
        items, for data-parallel training with ``world_size`` ranks (PyTorch's ``DistributedSampler``; see the
        class docstring for how batches are cut). Every rank must use the same dataset, batch size and shuffle
        seed. ``shard(0, 1)`` undoes sharding. ``self`` is unchanged.

        Raises:
            DatasetError: ``world_size < 1`` or ``rank`` outside ``[0, world_size)``.
        """
        return self._replace(rank=rank, world_size=world_size)

    def to_device(self, device: Any) -> DataLoader[O]:
        """A loader with the same dataset, batcher, settings and epoch counter whose batches are made
        on ``device`` (Burn's ``to_device``; the Learner uses it). ``self`` is unchanged."""
        return self._replace(device=device)

    def slice(self, start: int, end: int) -> DataLoader[O]:
        """A loader over items ``start:end`` of the dataset (before shuffling), with the same settings
        (Burn's ``slice``, used by :func:`split_dataloader`).

        Raises:
            DatasetError: not ``0 <= start <= end <= num_items``.
        """
        n = len(self._dataset)
        if not (isinstance(start, int) and isinstance(end, int) and 0 <= start <= end <= n):
            raise DatasetError(f"DataLoader.slice: need 0 <= start <= end <= {n}, got ({start!r}, {end!r}).")
        return self._replace(dataset=PartialDataset(self._dataset, start, end))

    def progress(self) -> Progress:
        """The progress of the most recent epoch's iterator (``Progress(0, num_items)`` before any)."""
        it = self._last() if self._last is not None else None
        if it is None:
            return Progress(0, len(self._dataset))
        return it.progress()

    # -- settings --------------------------------------------------------------------------------

    @property
    def dataset(self) -> Dataset[Any]:
        return self._dataset

    @property
    def batcher(self) -> Any:
        return self._batcher

    @property
    def batch_size(self) -> int:
        return self._batch_size

    @property
    def seed(self) -> int | None:
        """The shuffle seed, ``None`` when not shuffling."""
        return self._seed

    @property
    def rank(self) -> int:
        """This loader's shard (0 when not sharded)."""
        return self._rank

    @property
    def world_size(self) -> int:
        """The number of shards (1 when not sharded)."""
        return self._world_size

    @property
    def global_batch_size(self) -> int:
        """The items of one step over all ranks: ``batch_size * world_size``."""
        return self._batch_size * self._world_size

    @property
    def num_workers(self) -> int:
        return self._num_workers

    @property
    def device(self) -> Any:
        """The device given to the batcher (``None``: the default device, resolved per epoch)."""
        return self._device

    @property
    def epoch(self) -> int:
        """The epoch the next ``iter`` starts (the number of epochs started so far, unless set)."""
        return self._epoch

    def set_epoch(self, epoch: int) -> None:
        """Make the next ``iter`` start epoch ``epoch`` (to resume a run with the same shuffles).

        Raises:
            DatasetError: ``epoch < 0``.
        """
        self._epoch = _check_int("DataLoader.set_epoch", "epoch", epoch, 0)

    def __repr__(self) -> str:
        return (f"DataLoader(num_items={len(self._dataset)}, batch_size={self._batch_size}, "
                f"shuffle={self._seed}, num_workers={self._num_workers}, device={self._device}"
                + (f", rank={self._rank}, world_size={self._world_size})" if self._world_size > 1 else ")"))
