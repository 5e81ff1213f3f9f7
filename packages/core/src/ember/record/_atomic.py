"""Atomic file writes: a temporary file in the destination's directory, fsync, then ``os.replace``.

A crash or an exception while writing never leaves a half-written file under the final name; the
previous file (if any) stays intact until the rename. The file gets the permissions of the file it
replaces, or those of any new file (``0o666`` minus the umask, as ``open`` would give), not the
``0o600`` of ``tempfile.mkstemp``.
"""

from __future__ import annotations

import contextlib
import os
import secrets
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


def _kept_mode(final: Path) -> int | None:
    """The permission bits of the file being replaced (``None`` when there is none)."""
    try:
        return os.stat(final).st_mode & 0o777
    except OSError:
        return None


def _new_temp(directory: Path, name: str) -> tuple[Path, int]:
    """Create an empty file with a fresh name in ``directory``; returns it with its permission bits: ``0o666``
    minus the umask, applied by the kernel as for any new file (``tempfile.mkstemp`` would give ``0o600``)."""
    for _ in range(100):
        tmp = directory / f".{name}.{secrets.token_hex(6)}.tmp"
        try:
            fd = os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666)
        except FileExistsError:  # pragma: no cover - 48 random bits
            continue
        try:
            mode = os.fstat(fd).st_mode & 0o777
        finally:
            os.close(fd)
        return tmp, mode
    raise FileExistsError(f"atomic write: could not create a temporary file in {directory} next to {name!r}.")


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; on success fsync it and rename it to ``path``.

    For writers that take a file name (e.g. ``safetensors``). The file gets the permission bits of the file it
    replaces, else ``0o666`` minus the umask; ownership is not carried over. On error the temporary file is
    removed and ``path`` is untouched.

    Raises:
        OSError: the directory cannot be created or written, or the rename fails (the error of the system call).
    """
    final = Path(path)
    directory = final.parent if str(final.parent) else Path(".")
    directory.mkdir(parents=True, exist_ok=True)
    tmp_path, new_mode = _new_temp(directory, final.name)
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
