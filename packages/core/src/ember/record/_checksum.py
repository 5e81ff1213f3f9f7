"""``sum64``: the integrity checksum of record files (fast: one vectorized pass, ~10 GB/s).

Definition (``docs/record-format.md``): split the bytes into 8-byte little-endian unsigned words, the
last one zero-padded; the checksum is their sum modulo 2**64. Any single flipped bit or byte changes it,
and truncation changes it; it is not a cryptographic hash. CRC-32 (zlib) was measured at ~1.3 GB/s on
the reference machine, which would dominate load time for large models.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["sum64", "Sum64"]

_U64 = np.dtype("<u8")


def sum64(buf: Any) -> int:
    """The sum64 checksum of a bytes-like object (bytes, memoryview, mmap, numpy buffer)."""
    mv = memoryview(buf).cast("B") if not isinstance(buf, memoryview) or buf.format != "B" else buf
    n = len(mv)
    full = n // 8
    total = 0
    if full:
        total = int(np.frombuffer(mv, dtype=_U64, count=full).sum(dtype=np.uint64))
    rest = n - full * 8
    if rest:
        total += int.from_bytes(bytes(mv[full * 8:]) + b"\0" * (8 - rest), "little")
    return total & 0xFFFFFFFFFFFFFFFF


class Sum64:
    """sum64 over a stream written in chunks of any size (keeps word alignment across chunks)."""

    __slots__ = ("total", "_pending")

    def __init__(self) -> None:
        self.total = 0
        self._pending = b""

    def update(self, chunk: Any) -> None:
        mv = memoryview(chunk).cast("B") if not isinstance(chunk, (bytes, bytearray)) else memoryview(chunk)
        start = 0
        if self._pending:
            need = 8 - len(self._pending)
            head = self._pending + bytes(mv[:need])
            if len(head) < 8:
                self._pending = head
                return
            self.total += int.from_bytes(head, "little")
            self._pending = b""
            start = need
        body = mv[start:]
        full = len(body) // 8
        if full:
            self.total += int(np.frombuffer(body, dtype=_U64, count=full).sum(dtype=np.uint64))
        if len(body) - full * 8:
            self._pending = bytes(body[full * 8:])
        self.total &= 0xFFFFFFFFFFFFFFFF

    def digest(self) -> int:
        """The checksum of everything written so far."""
        total = self.total
        if self._pending:
            total += int.from_bytes(self._pending + b"\0" * (8 - len(self._pending)), "little")
        return total & 0xFFFFFFFFFFFFFFFF
