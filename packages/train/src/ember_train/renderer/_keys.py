"""``KeyReader``: arrow keys from a terminal, read in a daemon thread while the dashboard runs.

The terminal is put in cbreak mode (no line buffering, no echo; Ctrl-C still sends SIGINT, so the Learner's
graceful stop keeps working) and restored by :meth:`KeyReader.stop`. Only where stdin is a terminal on a POSIX
system; elsewhere the reader does nothing.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["KeyReader"]

_ARROWS = {b"A": "up", b"B": "down", b"C": "right", b"D": "left"}


class KeyReader:
    """Calls ``on_key("left" | "right" | "up" | "down")`` for each arrow key pressed.

    Args:
        on_key: the callback (runs in the reader thread).
        stream: the input (default ``sys.stdin``).
    """

    def __init__(self, on_key: Callable[[str], None], stream: Any = None) -> None:
        self.on_key = on_key
        self.stream = stream if stream is not None else sys.stdin
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._saved: Any = None
        self._fd = -1

    def start(self) -> bool:
        """Start reading; ``False`` (and nothing changed) when the input is not a terminal."""
        try:
            import termios
            import tty

            fd = self.stream.fileno()
            if not os.isatty(fd):
                return False
            self._saved = termios.tcgetattr(fd)
            tty.setcbreak(fd)
        except (ImportError, AttributeError, OSError, ValueError):
            return False
        except Exception:  # noqa: BLE001 - termios.error: not a usable terminal
            return False
        self._fd = fd
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="ember-dashboard-keys", daemon=True)
        self._thread.start()
        return True

    def _run(self) -> None:
        import select

        buf = b""
        while not self._stop.is_set():
            try:
                ready, _, _ = select.select([self._fd], [], [], 0.1)
                if not ready:
                    continue
                buf += os.read(self._fd, 32)
            except OSError:
                return
            while buf:
                if buf.startswith((b"\x1b[", b"\x1bO")) and len(buf) >= 3:
                    key = _ARROWS.get(buf[2:3])
                    buf = buf[3:]
                    if key is not None:
                        self.on_key(key)
                elif buf.startswith(b"\x1b") and len(buf) < 3:
                    break  # the rest of an escape sequence is on its way
                else:
                    buf = buf[1:]

    def stop(self) -> None:
        """Stop the thread and restore the terminal's mode."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=1.0)
            self._thread = None
        if self._saved is not None:
            import termios

            try:
                termios.tcsetattr(self._fd, termios.TCSADRAIN, self._saved)
            except Exception:  # noqa: BLE001 - the terminal went away
                pass
            self._saved = None
