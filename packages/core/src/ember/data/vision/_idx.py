"""Reading IDX files (the format of MNIST, LeCun et al.), gzipped or raw.

Layout (http://yann.lecun.com/exdb/mnist/): two zero bytes, a type code (0x08 uint8, 0x09 int8,
0x0B int16, 0x0C int32, 0x0D float32, 0x0E float64), the number of dimensions, then each dimension
as a big-endian uint32, then the data, big-endian, C order.
"""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from .._errors import DatasetError

__all__ = ["read_idx", "parse_idx"]

_TYPES: dict[int, np.dtype[Any]] = {
    0x08: np.dtype("u1"), 0x09: np.dtype("i1"), 0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"), 0x0D: np.dtype(">f4"), 0x0E: np.dtype(">f8"),
}


def read_idx(path: Path) -> np.ndarray:
    """The array stored in the IDX file at ``path`` (gzip-compressed or not, told by its first bytes).

    Returns a read-only array in native byte order.

    Raises:
        DatasetError: a corrupt or truncated gzip stream, a bad header or a data size that does not match
            the header (the message names the file).
    """
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as exc:
            raise DatasetError(
                f"{path}: corrupt or truncated gzip data ({exc}). Delete the file and download it again."
            ) from None
    return parse_idx(raw, str(path))


def parse_idx(raw: bytes, name: str) -> np.ndarray:
    """The array in the IDX bytes ``raw``; ``name`` appears in error messages."""
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] not in _TYPES:
        raise DatasetError(
            f"{name}: not an IDX file (bad magic number {raw[:4].hex() or 'empty file'}; expected 0000 then a type "
            "code 08/09/0b/0c/0d/0e and the rank, e.g. 00000803 for MNIST images)."
        )
    dtype, ndim = _TYPES[raw[2]], raw[3]
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise DatasetError(f"{name}: truncated IDX header ({len(raw)} bytes, expected at least {header}).")
    shape = tuple(int(d) for d in np.frombuffer(raw, dtype=">u4", count=ndim, offset=4))
    expected = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    found = len(raw) - header
    if found != expected:
        what = "truncated" if found < expected else "has trailing bytes"
        raise DatasetError(
            f"{name}: IDX data {what}: the header gives shape {list(shape)} of {dtype.name} ({expected} bytes), "
            f"the file holds {found} bytes. Delete the file and download it again."
        )
    arr = np.frombuffer(raw, dtype=dtype, offset=header).reshape(shape)
    if dtype.byteorder == ">":
        arr = arr.astype(dtype.newbyteorder("="))
        arr.flags.writeable = False
    return arr
