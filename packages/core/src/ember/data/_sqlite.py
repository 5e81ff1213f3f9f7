"""``SqliteDataset``: items stored in an SQLite file, read lazily (Burn's ``SqliteDataset``)."""

from __future__ import annotations

import os
import sqlite3
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from ._codec import decode_item
from ._dataset import Dataset
from ._errors import DatasetError
from ._rows import make_item
from ._sqlite_schema import FORMAT_VERSION, check_split, quote

__all__ = ["SqliteDataset"]

I = TypeVar("I")  # noqa: E741


_MMAP_BYTES = 1 << 30
_ALIVE: weakref.WeakSet[SqliteDataset[Any]] = weakref.WeakSet()


def _connect(path: Path) -> sqlite3.Connection:
    # Read-only. Files written by SqliteDatasetWriter are never modified in place (a new file is renamed
    # over the old one, and open readers keep the old one), so they are opened as immutable: no file
    # locks and no change checks per query, and pages are read through mmap (4x faster reads). A file
    # with a write-ahead log beside it was written by another program and is opened normally.
    resolved = path.resolve()
    uri = resolved.as_uri() + "?mode=ro"
    if not resolved.with_name(resolved.name + "-wal").exists():
        uri += "&immutable=1"
    conn = sqlite3.connect(uri, uri=True, check_same_thread=False)
    conn.execute(f"PRAGMA mmap_size = {_MMAP_BYTES}")
    return conn


def _forget_connections_after_fork() -> None:
    # A forked child must not use its parent's SQLite connections; it opens its own.
    for ds in list(_ALIVE):
        ds._pool = []


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_connections_after_fork)


def _bad_file(path: Path, exc: BaseException) -> DatasetError:
    return DatasetError(
        f"{path}: not a readable SQLite dataset file ({exc}). The file may be truncated or of another "
        "format; recreate it with SqliteDatasetWriter (or HuggingfaceDatasetLoader)."
    )


class SqliteDataset(Dataset[I]):
    """A split of an SQLite dataset file, read item by item (Burn's ``SqliteDataset::from_db_file``).

    >>> with SqliteDatasetWriter(path) as w:           # doctest: +SKIP
    ...     w.write("train", {"x": np.zeros(3), "y": 1})
    >>> SqliteDataset(path, "train").get(0)            # doctest: +SKIP
    {'x': array([0., 0., 0.]), 'y': 1}

    Items are stored as msgpack blobs, one row per item (schema in ``ember.data._sqlite_schema``).
    Reads go through a small pool of read-only connections, one per concurrent reader, so any number
    of data-loader workers may read at once; after a fork or unpickling, connections are reopened.
    The file is treated as immutable while open: replace it (as ``SqliteDatasetWriter`` does, by
    renaming a new file over it) rather than editing it in place.

    Args:
        path: the ``.db`` file, written by :class:`SqliteDatasetWriter`.
        split: the split to read (a table of the file), e.g. ``"train"``.
        item_type: when given (e.g. a dataclass), items are built as ``item_type(**row)``; else they are
            read back as dicts (see ``ember.data._codec`` for the value types).

    Raises:
        DatasetError: the file is missing, is not an SQLite database or is malformed (names the file),
            has no such split (names the splits it has), or was written by a newer Ember.
    """

    __slots__ = ("_path", "_split", "_item_type", "_len", "_query", "_pool", "__weakref__")

    def __init__(self, path: str | os.PathLike[str], split: str, item_type: Callable[..., I] | None = None) -> None:
        self._path = Path(path)
        self._split = check_split(split)
        self._item_type = item_type
        self._query = f"SELECT item FROM {quote(split)} WHERE row_id = ?"
        self._pool: list[sqlite3.Connection] = []
        _ALIVE.add(self)
        splits = self.splits(self._path)
        if split not in splits:
            raise DatasetError(
                f"{self._path}: no split {split!r}; the file has splits {splits}. Pass one of them."
            )
        conn = self._acquire()
        try:
            cols = [r[1] for r in conn.execute(f"PRAGMA table_info({quote(split)})")]
            if "row_id" not in cols or "item" not in cols:
                raise DatasetError(
                    f"{self._path}: the table of split {split!r} has columns {cols}, expected (row_id, item); "
                    "this file was not written by SqliteDatasetWriter."
                )
            self._len = int(conn.execute(f"SELECT COUNT(*) FROM {quote(split)}").fetchone()[0])
        except sqlite3.DatabaseError as exc:
            raise _bad_file(self._path, exc) from None
        finally:
            self._pool.append(conn)

    @classmethod
    def from_db_file(
        cls, path: str | os.PathLike[str], split: str, item_type: Callable[..., I] | None = None
    ) -> SqliteDataset[I]:
        """Burn's name for the constructor."""
        return cls(path, split, item_type)

    @staticmethod
    def splits(path: str | os.PathLike[str]) -> list[str]:
        """The split names stored in the file at ``path``, sorted.

        Raises:
            DatasetError: the file is missing, not an SQLite database, or of a newer format version.
        """
        p = Path(path)
        if not p.is_file():
            raise DatasetError(
                f"{p}: no such SQLite dataset file. Create it with SqliteDatasetWriter({str(p)!r}) "
                "or check the path."
            )
        try:
            conn = _connect(p)
            try:
                version = conn.execute("PRAGMA user_version").fetchone()[0]
                names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
            finally:
                conn.close()
        except sqlite3.DatabaseError as exc:
            raise _bad_file(p, exc) from None
        if version > FORMAT_VERSION:
            raise DatasetError(
                f"{p}: dataset format version {version}, this Ember reads up to {FORMAT_VERSION}; upgrade ember-core."
            )
        return sorted(n for n in names if not n.startswith("sqlite_"))

    @property
    def path(self) -> Path:
        return self._path

    @property
    def split(self) -> str:
        return self._split

    def _acquire(self) -> sqlite3.Connection:
        # list.pop / list.append are atomic, so the pool needs no lock; a reader that finds it empty
        # opens a connection, and the pool grows to the number of concurrent readers.
        try:
            return self._pool.pop()
        except IndexError:
            try:
                return _connect(self._path)
            except sqlite3.Error as exc:
                raise _bad_file(self._path, exc) from None

    def get(self, index: int) -> I | None:
        if not 0 <= index < self._len:
            return None
        conn = self._acquire()
        try:
            row = conn.execute(self._query, (int(index),)).fetchone()
        except sqlite3.DatabaseError as exc:
            raise _bad_file(self._path, exc) from None
        finally:
            self._pool.append(conn)
        if row is None:
            raise DatasetError(
                f"{self._path}: split {self._split!r} has {self._len} rows but no row_id {index}; the file was "
                "not written by SqliteDatasetWriter or was modified. Recreate it."
            )
        try:
            item = decode_item(row[0])
        except Exception as exc:
            raise DatasetError(
                f"{self._path}: split {self._split!r}, row {index}: the item does not decode ({exc}). "
                "The file is corrupt or was written by another program."
            ) from None
        return make_item(self._item_type, item, f"{self._path}: split {self._split!r}, row {index}")

    def __len__(self) -> int:
        return self._len

    def close(self) -> None:
        """Close the idle connections (the dataset reopens one if read again)."""
        pool, self._pool = self._pool, []
        for conn in pool:
            conn.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # interpreter shutdown
            pass

    def __getstate__(self) -> dict[str, Any]:
        return {"path": self._path, "split": self._split, "item_type": self._item_type, "len": self._len}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._path, self._split, self._item_type = state["path"], state["split"], state["item_type"]
        self._len = state["len"]
        self._query = f"SELECT item FROM {quote(self._split)} WHERE row_id = ?"
        self._pool = []
        _ALIVE.add(self)

    def __repr__(self) -> str:
        return f"SqliteDataset({str(self._path)!r}, split={self._split!r}, len={self._len})"
