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
    ``KeyboardInterrupt`` as usual. The handler found on entry is restored on exit.

    The handler is installed only where Ctrl-C can reach Python code the usual way:

    - only in the main thread (Python delivers signals there only);
    - not when SIGINT is ignored on entry (``SIG_IGN``): a job started in the background
      (``cmd &``, ``nohup``, many CI runners) begins with SIGINT ignored, and a process that chose to
      ignore Ctrl-C keeps ignoring it. Such a run is stopped with ``interrupter.stop()`` or a signal it
      does not ignore (SIGTERM, SIGKILL; resume from the last complete checkpoint);
    - not when the handler on entry was installed outside Python (``signal.getsignal`` returns
      ``None``), since it could not be restored afterwards.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    if previous is signal.SIG_IGN or previous is None:
        yield
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        if interrupter.should_stop():
            signal.signal(signal.SIGINT, previous)
            raise KeyboardInterrupt
        interrupter.stop("Ctrl-C")
        if callable(on_first):
            on_first()

    signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
