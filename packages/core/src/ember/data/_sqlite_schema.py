"""The on-disk layout of an SQLite dataset file, shared by the reader and the writer.

One table per split, named after the split (as Burn does, with a ``row_id`` column)::

    CREATE TABLE "<split>" (row_id INTEGER NOT NULL PRIMARY KEY, item BLOB NOT NULL)

``row_id`` runs from 0 to ``len - 1``; ``item`` is the msgpack encoding of the item (see
``ember.data._codec``). ``PRAGMA user_version`` holds the format version (1).
"""

from __future__ import annotations

import re

from ._errors import DatasetError

__all__ = ["FORMAT_VERSION", "check_split", "quote"]

FORMAT_VERSION = 1
_SPLIT = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]*$")


def check_split(split: str) -> str:
    """``split`` if it is a valid split name (letters, digits, ``_``, ``.``, ``-``; not ``sqlite_*``)."""
    if not isinstance(split, str) or not _SPLIT.match(split) or split.lower().startswith("sqlite_"):
        raise DatasetError(
            f"invalid split name {split!r}: use letters, digits, '_', '.' and '-' (e.g. 'train', 'valid', "
            "'test'), not starting with 'sqlite_'."
        )
    return split


def quote(split: str) -> str:
    """The SQL identifier of the split's table."""
    return '"' + split.replace('"', '""') + '"'
