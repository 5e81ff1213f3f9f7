"""``TrainingInterrupter`` (Burn's): stop training from another thread or from Ctrl-C."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

__all__ = ["TrainingInterrupter", "sigint_stops"]


class TrainingInterrupter:
    """A flag the Learner checks after every step (Burn's ``TrainingInterrupter``): ``stop()`` makes it
    finish the current step, write a checkpoint and return. Thread-safe."""

    __slots__ = ("_event", "reason")

    def __init__(self) -> None:
        self._event = threading.Event()
        self.reason = ""

    def stop(self, reason: str = "stop requested") -> None:
        self.reason = reason
        self._event.set()

    def should_stop(self) -> bool:
        return self._event.is_set()

    def reset(self) -> None:
        self._event.clear()
        self.reason = ""


@contextmanager
def sigint_stops(interrupter: TrainingInterrupter, on_first: object = None) -> Iterator[None]:
    """While active, the first Ctrl-C (SIGINT) calls ``interrupter.stop()``; a second one raises
    ``KeyboardInterrupt`` as usual. Only installed in the main thread."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)

    def handler(signum: int, frame: FrameType | None) -> None:
        if interrupter.should_stop():
            signal.signal(signal.SIGINT, previous if callable(previous) else signal.default_int_handler)
            raise KeyboardInterrupt
        interrupter.stop("Ctrl-C")
        if callable(on_first):
            on_first()

    signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
