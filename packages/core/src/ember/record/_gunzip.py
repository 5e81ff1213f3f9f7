"""Bounded gzip decompression for the ``.gz`` recorders: a gzip bomb raises instead of filling memory.

A gzip member ends with ``ISIZE``, its uncompressed length modulo 2**32, and deflate expands at most 1032-fold.
So the true length is ``ISIZE + k * 2**32`` for some ``k >= 0`` and at most ``1032 * compressed size``; the
decompressor is never allowed past the largest such value, and for files under 4 MiB (the common case) that
is ``ISIZE`` itself: a small file that declares a small size cannot inflate to gigabytes. zlib checks the CRC-32
and ``ISIZE`` at the end of the stream.
"""

from __future__ import annotations

import os
import zlib
from typing import Any

from .._errors import RecordError
from ._recorder import sniff

__all__ = ["gunzip", "open_head", "MAX_RATIO"]

#: deflate's largest expansion: a 258-byte match coded in under 2 bits, per byte of compressed data
MAX_RATIO = 1032
_CHUNK = 1 << 20


def _limit(size: int, isize: int) -> int:
    bound = size * MAX_RATIO + 1024
    if bound <= isize:
        return isize
    return isize + ((bound - isize) >> 32 << 32)


def open_head(f: Any, origin: str) -> tuple[int, bytes]:
    """``(size, first 16 bytes)`` of the record file open as ``f`` (left at offset 0).

    Raises:
        RecordError: the file is empty.
    """
    size = os.fstat(f.fileno()).st_size
    if size == 0:
        raise RecordError(f"{origin}: the file is empty.")
    head = f.read(16)
    f.seek(0)
    return size, head


def gunzip(f: Any, size: int, head: bytes, origin: str) -> bytearray:
    """The decompressed content of the single-member gzip file open as ``f`` (binary, ``size`` bytes, starting
    with ``head``).

    Raises:
        RecordError: not gzip (magic bytes), truncated or corrupted data (CRC-32 or length check), data after
            the gzip member, content longer than the trailer declares (a gzip bomb), or more than memory holds
            (names the file).
    """
    if head[:2] != b"\x1f\x8b":
        guess = sniff(head)
        raise RecordError(
            f"{origin}: not gzip-compressed (magic bytes {head[:2].hex() or 'none'}, expected 1f8b)"
            + (f"; it looks like {guess}." if guess else "; the file is corrupted or of another format.")
        )
    f.seek(max(0, size - 4))
    isize = int.from_bytes(f.read(4), "little")
    f.seek(0)
    limit = _limit(size, isize)
    d = zlib.decompressobj(wbits=31)  # gzip framing only
    out = bytearray()
    try:
        while not d.eof:
            data = f.read(_CHUNK)
            if not data:
                raise RecordError(f"{origin}: the gzip data ends early: the file is truncated.")
            while data and not d.eof:
                out += d.decompress(data, limit + 1 - len(out))
                if len(out) > limit:
                    raise RecordError(
                        f"{origin}: the gzip data inflates beyond the {limit} bytes its trailer allows (declared "
                        f"size {isize} bytes, {size} bytes compressed): a corrupted file or a gzip bomb; it was "
                        "not loaded."
                    )
                data = d.unconsumed_tail
        if d.unused_data or f.read(1):
            raise RecordError(
                f"{origin}: data follows the gzip stream (Ember writes one gzip member); the file is corrupted or "
                "was changed."
            )
    except zlib.error as exc:
        raise RecordError(
            f"{origin}: corrupted gzip data (zlib: {exc}); the file is truncated or was changed."
        ) from None
    except MemoryError:
        raise RecordError(
            f"{origin}: decompressing needs more memory than is available ({len(out)} bytes so far, up to {limit} "
            "allowed by the gzip trailer); the record is too large for this process."
        ) from None
    return out
