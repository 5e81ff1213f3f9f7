"""Record digests: a named algorithm plus its hex value, ``"xxh3-64:0123456789abcdef"`` (``docs/record-format.md``).

Writers use :data:`DEFAULT_ALGORITHM`, XXH3-64 from the ``xxhash`` library (~30 GB/s, streamable; chosen with
``bench/record.py``, figures in ``bench/README.md``). Because the algorithm is stored with the value, readers
check any algorithm of :data:`ALGORITHMS`, and a later Ember can change the default without breaking old files.

``sum64`` (the sum of 8-byte little-endian words modulo 2**64) is the checksum of files written before the
digest: it is read and verified, never written. It misses any reordering of 8-byte-aligned blocks, which is why
it was replaced.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

from .._errors import RecordError

__all__ = [
    "ALGORITHMS", "DEFAULT_ALGORITHM", "LEGACY", "Hasher", "Sum64", "sum64", "new_hasher", "digest_of",
    "format_digest", "parse_digest", "check_algorithm", "mismatch",
]

_U64 = np.dtype("<u8")


class Hasher(Protocol):
    """What an algorithm's factory returns (hashlib's and xxhash's objects are hashers)."""

    def update(self, data: Any, /) -> None: ...

    def hexdigest(self) -> str: ...


def _xxh3_64() -> Hasher:
    import xxhash

    return xxhash.xxh3_64()  # type: ignore[no-any-return]


def _blake2b_256() -> Hasher:
    return hashlib.blake2b(digest_size=32)


#: algorithm name -> a factory of a fresh hasher. Names are lower case, without ':'.
ALGORITHMS: dict[str, Callable[[], Hasher]] = {
    "xxh3-64": _xxh3_64,
    "blake2b-256": _blake2b_256,
    "sha256": hashlib.sha256,
}
#: the algorithm writers use
DEFAULT_ALGORITHM = "xxh3-64"
#: algorithms that are read (old files) but never written
LEGACY = frozenset({"sum64"})


def sum64(buf: Any) -> int:
    """The sum64 checksum of a bytes-like object (old files only)."""
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

    def hexdigest(self) -> str:
        """:meth:`digest` as 16 hex digits (the number, most significant digit first)."""
        return f"{self.digest():016x}"


def new_hasher(algorithm: str) -> Hasher:
    """A fresh hasher of ``algorithm`` (a key of :data:`ALGORITHMS`, or ``"sum64"``)."""
    if algorithm == "sum64":
        return Sum64()
    return ALGORITHMS[algorithm]()


def format_digest(algorithm: str, hasher: Hasher) -> str:
    """``"<algorithm>:<hex>"``, the stored form of a digest."""
    return f"{algorithm}:{hasher.hexdigest()}"


def digest_of(buf: Any, algorithm: str) -> str:
    """The stored form of ``algorithm``'s digest of the bytes-like ``buf`` (hashed without a copy)."""
    h = new_hasher(algorithm)
    h.update(buf)
    return format_digest(algorithm, h)


def legacy(value: int) -> str:
    """The stored form of an old file's sum64 checksum (an int), comparable with :func:`digest_of`."""
    return f"sum64:{value & 0xFFFFFFFFFFFFFFFF:016x}"


def check_algorithm(algorithm: str | None) -> str | None:
    """``algorithm`` if writers may use it (``None``: write no digest).

    Raises:
        RecordError: an unknown name, or ``"sum64"`` (read only).
    """
    if algorithm is None or algorithm in ALGORITHMS:
        return algorithm
    raise RecordError(
        f"record digest: unknown algorithm {algorithm!r}; expected one of {sorted(ALGORITHMS)} (or None for no "
        "digest)" + ("; sum64 is read in old files but no longer written." if algorithm in LEGACY else ".")
    )


def parse_digest(stored: Any, origin: str, where: str = "") -> str:
    """The algorithm of a stored digest ``"<algorithm>:<hex>"`` after checking its form.

    Raises:
        RecordError: not a string of that form, or an algorithm this Ember does not know (names the file).
    """
    at = f" at {where!r}" if where else ""
    if not isinstance(stored, str) or stored.count(":") != 1 or len(stored) > 200:
        shown = stored[:60] + "..." if isinstance(stored, str) and len(stored) > 60 else stored
        found = repr(shown) if isinstance(stored, str) else type(stored).__name__
        raise RecordError(
            f"{origin}: the digest{at} must be a string '<algorithm>:<hex>', found {found}; the file is "
            "corrupted or was changed."
        )
    algorithm = stored.split(":", 1)[0]
    if algorithm not in ALGORITHMS and algorithm not in LEGACY:
        raise RecordError(
            f"{origin}: the digest{at} uses the algorithm {algorithm!r}, which this Ember does not know (it knows "
            f"{sorted(ALGORITHMS)}); load it with the Ember version that wrote it, or pass verify=False to load "
            "it unchecked."
        )
    return algorithm


def mismatch(origin: str, stored: str, actual: str, where: str = "") -> RecordError:
    """The error for a digest that does not match the data."""
    what = f"the data at {where!r}" if where else "the file's content"
    return RecordError(
        f"{origin}: digest mismatch: the file stores {stored} but {what} hashes to {actual}; the file is "
        "corrupted or was changed after it was written. Restore it from a good copy (or re-save it)."
    )
