"""Iterating a loader in the Learner: its epoch, its progress, closing its iterator (any iterable; a ``DataLoader``
says more)."""

from __future__ import annotations

from typing import Any

__all__ = ["progress_of", "set_epoch", "close_iterator"]


def progress_of(it: Any, iteration: int) -> tuple[int, int]:
    """``(items done, items in all)`` from the iterator's ``progress()``, else ``(iteration, 0)``."""
    prog = getattr(it, "progress", None)
    if callable(prog):
        p = prog()
        return int(p.items_processed), int(p.items_total)
    return iteration, 0


def set_epoch(loader: Any, epoch: int) -> None:
    """``loader.set_epoch(epoch - 1)`` where it has one (its shuffle order for ``epoch``)."""
    fn = getattr(loader, "set_epoch", None)
    if callable(fn):
        fn(epoch - 1)


def close_iterator(it: Any) -> None:
    """``it.close()`` where it has one (stops a loader's prefetching workers)."""
    fn = getattr(it, "close", None)
    if callable(fn):
        fn()
