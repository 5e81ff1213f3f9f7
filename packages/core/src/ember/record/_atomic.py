"""Atomic file writes: a temporary file in the destination's directory, fsync, then ``os.replace``.

A crash or an exception while writing never leaves a half-written file under the final name; the
previous file (if any) stays intact until the rename.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

__all__ = ["atomic_write", "atomic_path"]


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # pragma: no cover - e.g. Windows
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; on success fsync it and rename it to ``path``.

    For writers that take a file name (e.g. ``safetensors``). On error the temporary file is removed.
    """
    final = Path(path)
    directory = final.parent if str(final.parent) else Path(".")
    directory.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{final.name}.", suffix=".tmp", dir=directory)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        with open(tmp_path, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp_path, final)
        _fsync_dir(directory)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp_path.unlink()
        raise


def atomic_write(path: str | os.PathLike[str], write: Callable[[IO[bytes]], object]) -> Path:
    """Call ``write(file)`` on a temporary binary file next to ``path`` and atomically rename it.

    Returns:
        The final path.
    """
    final = Path(path)
    with atomic_path(final) as tmp, open(tmp, "wb") as f:
        write(f)
        f.flush()
    return final
