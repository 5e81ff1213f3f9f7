"""``SqliteDatasetWriter``: creates an SQLite dataset file atomically (Burn's ``SqliteDatasetWriter``)."""

from __future__ import annotations

import os
import sqlite3
import tempfile
import threading
from pathlib import Path
from types import TracebackType
from typing import Any

from ._codec import encode_item
from ._errors import DatasetError
from ._sqlite_schema import FORMAT_VERSION, check_split, quote

__all__ = ["SqliteDatasetWriter"]

_FLUSH_ROWS = 1024


class SqliteDatasetWriter:
    """Writes items into the splits of a new SQLite dataset file.

    >>> with SqliteDatasetWriter("mnist.db") as writer:          # doctest: +SKIP
    ...     for item in items:
    ...         writer.write("train", item)
    >>> SqliteDataset("mnist.db", "train")                        # doctest: +SKIP

    The rows go to a temporary file beside ``path``; :meth:`close` (Burn's ``set_completed``) commits,
    fsyncs and renames it to ``path`` in one atomic step, so readers never see a half-written file and
    an interrupted write leaves ``path`` as it was. Leaving the ``with`` block on an exception, or
    :meth:`abort`, discards the temporary file. Items are dicts or dataclasses (any value
    ``ember.data._codec`` stores). ``write`` may be called from several threads.

    Args:
        path: the file to create (parent directories are created).
        overwrite: replace an existing file at ``path`` on close (Burn's ``overwrite`` flag).

    Raises:
        DatasetError: ``path`` exists and ``overwrite`` is false.
    """

    def __init__(self, path: str | os.PathLike[str], *, overwrite: bool = False) -> None:
        self._path = Path(path)
        if self._path.exists() and not overwrite:
            raise DatasetError(
                f"{self._path} already exists; pass overwrite=True to replace it, or choose another path."
            )
        self._overwrite = overwrite
        self._path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{self._path.name}.", suffix=".tmp", dir=self._path.parent)
        os.close(fd)
        self._tmp = Path(tmp)
        self._lock = threading.Lock()
        self._counts: dict[str, int] = {}
        self._pending: dict[str, list[tuple[int, bytes]]] = {}
        self._state = "open"  # then "completed" or "aborted"
        self._conn: sqlite3.Connection | None = sqlite3.connect(self._tmp, check_same_thread=False)
        # The temporary file is private until the rename: no journal, and one fsync at close.
        self._conn.execute("PRAGMA journal_mode = OFF")
        self._conn.execute("PRAGMA synchronous = OFF")
        self._conn.execute(f"PRAGMA user_version = {FORMAT_VERSION}")

    @property
    def path(self) -> Path:
        """The file created on :meth:`close`."""
        return self._path

    def counts(self) -> dict[str, int]:
        """The number of items written so far, per split."""
        with self._lock:
            return dict(self._counts)

    def write(self, split: str, item: Any) -> int:
        """Append ``item`` to ``split`` (creating the split on first use); returns its index in the split.

        Raises:
            DatasetError: the writer is closed, or ``split`` is not a valid name.
            TypeError: the item holds a value that cannot be stored (names its type).
        """
        check_split(split)
        blob = encode_item(item)
        with self._lock:
            self._check_open()
            if split not in self._counts:
                assert self._conn is not None
                self._conn.execute(
                    f"CREATE TABLE {quote(split)} (row_id INTEGER NOT NULL PRIMARY KEY, item BLOB NOT NULL)"
                )
                self._counts[split] = 0
                self._pending[split] = []
            index = self._counts[split]
            self._counts[split] = index + 1
            rows = self._pending[split]
            rows.append((index, blob))
            if len(rows) >= _FLUSH_ROWS:
                self._flush(split)
        return index

    def _flush(self, split: str) -> None:
        rows = self._pending[split]
        if rows:
            assert self._conn is not None
            self._conn.executemany(f"INSERT INTO {quote(split)} (row_id, item) VALUES (?, ?)", rows)
            rows.clear()

    def _check_open(self) -> None:
        if self._state != "open":
            raise DatasetError(
                f"SqliteDatasetWriter({str(self._path)!r}) is {self._state}; open a new writer to write more."
            )

    def close(self) -> None:
        """Commit, fsync and atomically rename the file to ``path`` (Burn's ``set_completed``).

        Raises:
            DatasetError: ``path`` appeared meanwhile and ``overwrite`` is false (the temporary file is
                removed), or the writer was aborted.
        """
        with self._lock:
            if self._state == "completed":
                return
            self._check_open()
            self._state = "completed"
            try:
                assert self._conn is not None
                for split in self._pending:
                    self._flush(split)
                self._conn.commit()
                self._conn.close()
                self._conn = None
                with open(self._tmp, "rb+") as f:
                    os.fsync(f.fileno())
                if self._path.exists() and not self._overwrite:
                    raise DatasetError(
                        f"{self._path} was created by someone else while writing; not replaced. "
                        "Pass overwrite=True to replace it."
                    )
                os.replace(self._tmp, self._path)
            except BaseException:
                self._state = "aborted"
                self._discard()
                raise
        _fsync_dir(self._path.parent)

    set_completed = close

    def abort(self) -> None:
        """Discard everything written: the temporary file is removed and ``path`` is left untouched."""
        with self._lock:
            if self._state == "open":
                self._state = "aborted"
                self._discard()

    def _discard(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        try:
            self._tmp.unlink()
        except FileNotFoundError:
            pass

    def __enter__(self) -> SqliteDatasetWriter:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()

    def __del__(self) -> None:
        # A writer dropped without close() leaves no temporary file behind (nothing is published).
        try:
            if self._state == "open":
                self.abort()
        except Exception:
            pass

    def __repr__(self) -> str:
        return f"SqliteDatasetWriter({str(self._path)!r}, {self._state}, counts={self._counts})"


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
