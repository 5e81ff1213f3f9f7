"""Atomic file writes: a temporary file in the destination's directory, fsync, then ``os.replace``.

A crash or an exception while writing never leaves a half-written file under the final name; the
previous file (if any) stays intact until the rename. The file gets the permissions of the file it
replaces, or those of any new file (``0o666`` minus the umask, as ``open`` would give), not the
``0o600`` of ``tempfile.mkstemp``.

Temporary files are named ``.<name>.<12 hex digits>.tmp``. A write that fails removes its own; a process killed
while writing (``kill -9``, power loss) cannot, so every write first removes the stale temporary files of the same
target. A writer holds an exclusive ``flock`` on its temporary file while it lives, so a temporary file whose lock
can be taken belongs to a dead writer and is removed, while one still locked (another process writing the same
file right now) is left alone; the kernel drops the lock when its process dies, so no timing is involved. Where
``flock`` is missing (Windows) stale files are left in place.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

try:  # pragma: no cover - platform
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["atomic_write", "atomic_path", "remove_stale_temps"]


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


def _kept_mode(final: Path) -> int | None:
    """The permission bits of the file being replaced (``None`` when there is none)."""
    try:
        return os.stat(final).st_mode & 0o777
    except OSError:
        return None


def _lock(fd: int) -> bool:
    """Take an exclusive, non-blocking ``flock`` on ``fd``: ``False`` when another process holds it."""
    if fcntl is None:  # pragma: no cover - Windows
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    except OSError:  # pragma: no cover - a file system without locks: treat the file as in use
        return False
    return True


def _new_temp(directory: Path, name: str) -> tuple[Path, int, int]:
    """Create an empty file with a fresh name in ``directory``, locked (:func:`_lock`) for the writer's lifetime;
    returns it with its open descriptor (which holds the lock) and its permission bits: ``0o666`` minus the umask,
    applied by the kernel as for any new file (``tempfile.mkstemp`` would give ``0o600``)."""
    for _ in range(100):
        tmp = directory / f".{name}.{secrets.token_hex(6)}.tmp"
        try:
            fd = os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666)
        except FileExistsError:  # pragma: no cover - 48 random bits
            continue
        try:
            _lock(fd)
            mode = os.fstat(fd).st_mode & 0o777
        except BaseException:
            os.close(fd)
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise
        return tmp, fd, mode
    raise FileExistsError(f"atomic write: could not create a temporary file in {directory} next to {name!r}.")


def remove_stale_temps(path: str | os.PathLike[str]) -> list[Path]:
    """Remove the temporary files that killed writers left next to ``path`` (``.<name>.<hex>.tmp``); a temporary
    file another live process is writing (its lock held) is kept. Returns the removed paths. Without ``flock``
    (Windows) nothing is removed.

    Raises:
        nothing: a file that cannot be inspected or removed is skipped.
    """
    if fcntl is None:  # pragma: no cover - Windows
        return []
    final = Path(path)
    directory = final.parent if str(final.parent) else Path(".")
    pattern = re.compile(r"^\." + re.escape(final.name) + r"\.[0-9a-f]{12}\.tmp$")
    removed = []
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return []
    for entry in entries:
        if not pattern.match(entry.name):
            continue
        try:
            fd = os.open(entry.path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except OSError:
            continue
        try:
            if _lock(fd):  # its writer is gone (the kernel released the lock with the process)
                os.unlink(entry.path)
                removed.append(Path(entry.path))
        except OSError:
            pass
        finally:
            os.close(fd)
    return removed


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; on success fsync it and rename it to ``path``.

    For writers that take a file name (e.g. ``safetensors``). The file gets the permission bits of the file it
    replaces, else ``0o666`` minus the umask; ownership is not carried over. On error the temporary file is
    removed and ``path`` is untouched; stale temporary files of ``path`` left by killed writers are removed first
    (:func:`remove_stale_temps`).

    Raises:
        OSError: the directory cannot be created or written, or the rename fails (the error of the system call).
    """
    final = Path(path)
    directory = final.parent if str(final.parent) else Path(".")
    directory.mkdir(parents=True, exist_ok=True)
    remove_stale_temps(final)
    tmp_path, lock_fd, new_mode = _new_temp(directory, final.name)
    try:
        yield tmp_path
        with open(tmp_path, "rb+") as f:
            kept = _kept_mode(final)
            # after the writer, which may have recreated the file with its own mode (safetensors: 0o600)
            with contextlib.suppress(OSError, AttributeError):
                os.fchmod(f.fileno(), new_mode if kept is None else kept)
            os.fsync(f.fileno())
        os.replace(tmp_path, final)
        _fsync_dir(directory)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp_path.unlink()
        raise
    finally:
        os.close(lock_fd)  # releases the lock: after the rename, or after the temporary file is gone


def atomic_write(path: str | os.PathLike[str], write: Callable[[IO[bytes]], object]) -> Path:
    """Call ``write(file)`` on a temporary binary file next to ``path`` and atomically rename it (permissions
    as :func:`atomic_path`).

    Returns:
        The final path.

    Raises:
        OSError: as :func:`atomic_path`; anything ``write`` raises (``path`` is then untouched).
    """
    final = Path(path)
    with atomic_path(final) as tmp, open(tmp, "wb") as f:
        write(f)
        f.flush()
    return final
