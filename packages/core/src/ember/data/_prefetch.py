"""``WorkerPool``: daemon threads that compute tasks in the background, results read in order.

The data loader's workers. Threads, not processes: numpy, sqlite3, zlib and the array libraries
release the GIL in their heavy work, items need no pickling, and a thread pool starts in
microseconds. The pool never holds a reference to its owner, so an iterator that is dropped (a
``break`` out of a ``for`` loop) is collected and closes its pool.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from typing import Any

__all__ = ["WorkerPool", "Slot"]

_POLL_S = 0.25


class Slot:
    """The result of one task: ``value`` or ``error``, set once ``done`` is set."""

    __slots__ = ("done", "value", "error")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.value: Any = None
        self.error: BaseException | None = None


def _work(fn: Callable[..., Any], tasks: queue.SimpleQueue[Any], stop: threading.Event) -> None:
    while True:
        task = tasks.get()
        if task is None:
            return
        slot, args = task
        del task
        if not stop.is_set():
            try:
                slot.value = fn(*args)
            except BaseException as exc:  # noqa: BLE001 - handed to the consumer, which re-raises it
                slot.error = exc
            slot.done.set()
        del slot, args


class WorkerPool:
    """``num_workers`` daemon threads running ``fn(*args)`` for each :meth:`submit`, first come first served."""

    __slots__ = ("_tasks", "_stop", "_threads")

    def __init__(self, fn: Callable[..., Any], num_workers: int, name: str) -> None:
        self._tasks: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=_work, args=(fn, self._tasks, self._stop), name=f"{name}-{k}", daemon=True)
            for k in range(num_workers)
        ]
        for t in self._threads:
            t.start()

    def submit(self, *args: Any) -> Slot:
        slot = Slot()
        self._tasks.put((slot, args))
        return slot

    def wait(self, slot: Slot) -> Any:
        """The slot's value, or raise its error. Interruptible (Ctrl-C) while waiting."""
        while not slot.done.wait(_POLL_S):
            if not any(t.is_alive() for t in self._threads):
                raise RuntimeError("every data-loader worker thread has exited; this is a bug in Ember")
        if slot.error is not None:
            err, slot.error = slot.error, None
            raise err
        value, slot.value = slot.value, None
        return value

    def close(self, timeout: float = 30.0) -> list[str]:
        """Stop the workers: queued tasks are dropped, running ones finish, then the threads exit.

        Joins the threads for up to ``timeout`` seconds in total; returns the names of threads still
        running after that (a task stuck in user code), which are daemons and exit when it returns.
        """
        self._stop.set()
        for _ in self._threads:
            self._tasks.put(None)
        current = threading.current_thread()
        deadline = time.monotonic() + timeout
        stuck = []
        for t in self._threads:
            if t is not current:
                t.join(max(deadline - time.monotonic(), 0.0))
                if t.is_alive():
                    stuck.append(t.name)
        return stuck
