"""Storages: the flat byte buffers tensors in a ``.pt`` file view into, and how they are read.

A :class:`Storage` is declared by the pickle (key, element type, byte size) before any byte is read; the
reader checks the declaration against the file (the zip entry's size, or the legacy header), then fills all
used storages in file order with :func:`fill_storages`: either one ``read`` per storage into a fresh
``numpy`` buffer (one copy, sequential I/O), or a slice of a single copy-on-write memory map of the whole
file (``mmap=True``: nothing is read until a tensor's pages are touched, and untouched pages never count
against memory).
"""

from __future__ import annotations

import io

import numpy as np

from ember import DType

from ._errors import ModelImportError
from ._frozen import Frozen

__all__ = ["Storage", "fill_storages"]


class Storage(Frozen):
    """One storage: ``nbytes`` bytes at ``file_offset`` in the file, elements of ``dtype``.

    ``dtype`` is None for an untyped (byte) storage. A legacy storage *view* has a ``parent`` storage and
    a byte offset into it instead of a file offset. ``array`` is the ``uint8`` buffer once filled.
    """

    __slots__ = ("key", "nbytes", "dtype", "file_offset", "parent", "parent_offset", "array", "name")
    key: str
    nbytes: int
    dtype: DType | None
    name: str
    file_offset: int | None
    parent: Storage | None
    parent_offset: int
    array: np.ndarray | None

    def __init__(self, key: str, nbytes: int, dtype: DType | None, name: str) -> None:
        for field, value in (("key", key), ("nbytes", nbytes), ("dtype", dtype), ("name", name),
                             ("file_offset", None), ("parent", None), ("parent_offset", 0), ("array", None)):
            object.__setattr__(self, field, value)

    def set(self, **fields: object) -> None:
        """Set fields from Ember's own reader code (attribute assignment is refused, see :class:`Frozen`)."""
        for field, value in fields.items():
            object.__setattr__(self, field, value)

    def data(self) -> np.ndarray:
        """The storage's bytes as a ``uint8`` array of length ``nbytes``."""
        if self.array is None:
            if self.parent is None:  # pragma: no cover - fill_storages fills every root storage
                raise ModelImportError(f"storage {self.name!r} was never read (internal error).")
            start = self.parent_offset
            self.set(array=self.parent.data()[start : start + self.nbytes])
        assert self.array is not None
        return self.array

    def __repr__(self) -> str:
        return f"Storage({self.name!r}, nbytes={self.nbytes}, dtype={self.dtype})"


def _read_exact(f: io.RawIOBase, offset: int, nbytes: int, what: str) -> np.ndarray:
    buf = np.empty(nbytes, dtype=np.uint8)
    view = buf.data
    f.seek(offset)
    done = 0
    while done < nbytes:
        n = f.readinto(view[done:])
        if not n:
            raise ModelImportError(
                f"{what}: the file ends after {done} of {nbytes} bytes (truncated); re-download or re-save it."
            )
        done += n
    return buf


def fill_storages(storages: list[Storage], path: str, *, mmap: bool, file_size: int, origin: str) -> None:
    """Give every root storage in ``storages`` its bytes, in file order.

    The caller has already checked ``file_offset + nbytes <= file_size`` for each one.

    Raises:
        ModelImportError: the file is shorter than declared (truncated while reading).
    """
    roots = sorted((s for s in storages if s.parent is None and s.array is None), key=lambda s: s.file_offset or 0)
    if not roots:
        return
    for s in roots:
        if s.file_offset is None or s.file_offset < 0 or s.file_offset + s.nbytes > file_size:
            raise ModelImportError(
                f"{origin}: storage {s.name!r} ({s.nbytes} bytes at offset {s.file_offset}) lies outside the "
                f"file ({file_size} bytes); the file is truncated or corrupted."
            )
    if mmap:
        whole = np.memmap(path, dtype=np.uint8, mode="c")
        for s in roots:
            start = int(s.file_offset or 0)
            s.set(array=np.asarray(whole[start : start + s.nbytes]))
        return
    with open(path, "rb", buffering=0) as f:
        for s in roots:
            s.set(array=_read_exact(f, int(s.file_offset or 0), s.nbytes, f"{origin}: storage {s.name!r}"))
