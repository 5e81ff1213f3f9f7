"""Application loggers (Burn's ``ApplicationLoggerInstaller`` / ``FileApplicationLoggerInstaller``).

The Learner logs through the standard :mod:`logging` module under the ``"ember_train"`` logger; the
default installer adds a handler writing ``<artifact_dir>/experiment.log`` for the duration of ``fit``.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Protocol, runtime_checkable

__all__ = ["ApplicationLoggerInstaller", "FileApplicationLoggerInstaller", "LOGGER"]

LOGGER = logging.getLogger("ember_train")
LOGGER.addHandler(logging.NullHandler())  # no stderr fallback output under the dashboard


@runtime_checkable
class ApplicationLoggerInstaller(Protocol):
    """``install()`` before training, ``uninstall()`` after (also on errors)."""

    def install(self) -> None: ...
    def uninstall(self) -> None: ...


class FileApplicationLoggerInstaller:
    """Appends the ``ember_train`` (and ``ember``) log records at ``level`` to ``path`` (Burn's
    ``FileApplicationLoggerInstaller``; the default writes ``<artifact_dir>/experiment.log``)."""

    def __init__(self, path: str | os.PathLike[str], level: int = logging.INFO) -> None:
        self.path = Path(path)
        self.level = level
        self._handler: logging.Handler | None = None
        self._old_levels: list[tuple[logging.Logger, int]] = []

    def install(self) -> None:
        if self._handler is not None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        h = logging.FileHandler(self.path, encoding="utf-8")
        h.setLevel(self.level)
        h.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        self._handler = h
        for name in ("ember_train", "ember"):
            lg = logging.getLogger(name)
            self._old_levels.append((lg, lg.level))
            if lg.level == logging.NOTSET or lg.level > self.level:
                lg.setLevel(self.level)
            lg.addHandler(h)

    def uninstall(self) -> None:
        h = self._handler
        if h is None:
            return
        for lg, level in self._old_levels:
            lg.removeHandler(h)
            lg.setLevel(level)
        self._old_levels.clear()
        h.close()
        self._handler = None
