"""Atomic file writes: a temporary file in the destination's directory, fsync, then ``os.replace``.

A crash or an exception while writing never leaves a half-written file under the final name; the
previous file (if any) stays intact until the rename. The file gets the permissions of the file it
replaces, or those of any new file (``0o666`` minus the umask, as ``open`` would give), not the
``0o600`` of ``tempfile.mkstemp``.
"""

from __future__ import annotations

import contextlib
import os
import stat
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


def _umask() -> int:
    try:
        with open("/proc/self/status") as f:  # Linux: read it without changing it
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)  # elsewhere: set and restore (not atomic, but only on the fallback path)
    os.umask(mask)
    return mask


def _mode_for(final: Path) -> int:
    try:
        return stat.S_IMODE(os.stat(final).st_mode)
    except OSError:
        return 0o666 & ~_umask()


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
            with contextlib.suppress(OSError, AttributeError):  # after the writer: safetensors recreates the file
                os.fchmod(f.fileno(), _mode_for(final))
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
