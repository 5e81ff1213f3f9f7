"""``DataLoaderIterator``: one epoch of a data loader (Burn's ``DataLoaderIterator``)."""

from __future__ import annotations

import warnings
from collections import deque
from collections.abc import Callable, Iterator
from types import TracebackType
from typing import Any, Generic, TypeVar

import numpy as np

from ._errors import DataLoaderError, DatasetError
from ._prefetch import Slot, WorkerPool
from ._progress import Progress

__all__ = ["DataLoaderIterator", "load_batch"]

O = TypeVar("O")  # noqa: E741
_MAX_LISTED = 256


def _describe(indices: list[int]) -> str:
    if len(indices) <= _MAX_LISTED:
        return str(indices)
    return f"{indices[:_MAX_LISTED]} ... ({len(indices)} in all)"


def load_batch(get: Callable[[int], Any], batch_fn: Callable[[list[Any], Any], Any], device: Any,
               batch_index: int, indices: list[int]) -> Any:
    """``batch_fn([get(i) for i in indices], device)``; failures become a :class:`DataLoaderError`
    naming the batch and its item indices, with the original exception as the cause."""
    stage = "dataset.get"
    index = -1
    try:
        items = []
        for index in indices:
            item = get(index)
            if item is None:
                raise DatasetError(f"dataset.get({index}) returned None for an index inside the dataset's length")
            items.append(item)
        stage = "batcher.batch"
        return batch_fn(items, device)
    except Exception as exc:
        where = f"dataset.get({index})" if stage == "dataset.get" else "the batcher"
        raise DataLoaderError(
            f"{where} raised {type(exc).__name__}: {exc} -- while loading batch {batch_index} "
            f"(dataset item indices {_describe(indices)}).",
            batch_index, tuple(indices), stage,
        ) from exc


class DataLoaderIterator(Iterator[O], Generic[O]):
    """Iterates the batches of one epoch; made by ``iter(loader)``.

    With workers, up to ``prefetch`` batches are loaded ahead in background threads and handed out
    in order, so the sequence of batches is the same with any number of workers. The threads start on
    the first ``next`` and stop when the epoch ends, when loading fails, when ``close()`` is called
    (also by ``with`` and on garbage collection: a ``break`` out of a ``for`` loop) and when the
    caller is interrupted (Ctrl-C) while waiting for a batch.

    Raises (from ``next``):
        DataLoaderError: ``dataset.get`` or the batcher raised (names the batch and its dataset item
            indices; the original exception is the ``__cause__``). The iterator is then closed.
    """

    __slots__ = ("_get", "_batch_fn", "_device", "_batch_size", "_order", "_n", "_num_batches",
                 "_num_workers", "_prefetch", "_next", "_submitted", "_pending", "_pool", "_processed",
                 "_closed", "_epoch", "_rank", "_world_size", "__weakref__")

    def __init__(self, get: Callable[[int], Any], batch_fn: Callable[[list[Any], Any], Any], device: Any,
                 num_items: int, batch_size: int, order: np.ndarray | None, num_workers: int,
                 epoch: int = 0, prefetch: int | None = None, shard: tuple[int, int] = (0, 1)) -> None:
        self._get = get
        self._batch_fn = batch_fn
        self._device = device
        self._batch_size = batch_size
        self._order = order
        self._n = num_items
        self._num_batches = -(-num_items // batch_size)
        self._num_workers = num_workers
        self._prefetch = max(prefetch if prefetch is not None else 2 * num_workers, num_workers)
        self._next = 0
        self._submitted = 0
        self._pending: deque[tuple[Slot, int]] = deque()
        self._pool: WorkerPool | None = None
        self._processed = 0
        self._closed = False
        self._epoch = epoch
        self._rank, self._world_size = shard  # batch_size is then the global batch, cut into world_size parts

    @property
    def epoch(self) -> int:
        """The epoch number this iterator belongs to (0 for the loader's first ``iter``)."""
        return self._epoch

    def progress(self) -> Progress:
        """Items of the batches handed out so far, out of the epoch's total (Burn's ``progress()``); a sharded
        loader counts the items of all ranks (the global batches)."""
        return Progress(self._processed, self._n)

    def __len__(self) -> int:
        """The number of batches left in the epoch."""
        return 0 if self._closed else self._num_batches - self._next

    def _indices(self, b: int) -> list[int]:
        start = b * self._batch_size
        stop = min(start + self._batch_size, self._n)
        if self._world_size > 1:
            part = np.array_split(np.arange(start, stop), self._world_size)[self._rank]
            positions = part if part.size else np.arange(stop - 1, stop)  # fewer items than ranks: repeat the last
            return (positions if self._order is None else self._order[positions]).tolist()
        if self._order is None:
            return list(range(start, stop))
        return self._order[start:stop].tolist()

    def _submit(self) -> None:
        assert self._pool is not None
        b = self._submitted
        self._pending.append((self._pool.submit(self._get, self._batch_fn, self._device, b, self._indices(b)), b))
        self._submitted += 1

    def __next__(self) -> O:
        if self._closed or self._next >= self._num_batches:
            self.close()
            raise StopIteration
        b = self._next
        try:
            if self._num_workers == 0:
                batch = load_batch(self._get, self._batch_fn, self._device, b, self._indices(b))
            else:
                if self._pool is None:
                    self._pool = WorkerPool(load_batch, self._num_workers, "ember-dataloader")
                    while self._submitted < min(self._prefetch, self._num_batches):
                        self._submit()
                slot, _ = self._pending.popleft()
                if self._submitted < self._num_batches:
                    self._submit()
                batch = self._pool.wait(slot)
        except BaseException:
            self.close()
            raise
        self._next = b + 1
        self._processed = min((b + 1) * self._batch_size, self._n)
        if self._next >= self._num_batches:
            self.close()  # release the workers now, not when the caller's loop ends
        return batch

    def close(self) -> None:
        """Stop the workers (queued batches are dropped; running ones finish) and end the iteration."""
        if self._closed:
            return
        self._closed = True
        self._pending.clear()
        pool, self._pool = self._pool, None
        if pool is not None:
            stuck = pool.close()
            if stuck:
                warnings.warn(
                    f"data-loader worker threads {stuck} are still running a batch after 30 s; they are "
                    "daemon threads and exit when it returns.",
                    RuntimeWarning,
                    stacklevel=2,
                )

    def __enter__(self) -> DataLoaderIterator[O]:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # interpreter shutdown
            pass

    def __repr__(self) -> str:
        return (f"DataLoaderIterator(epoch={self._epoch}, batch {self._next}/{self._num_batches}, "
                f"workers={self._num_workers})")
