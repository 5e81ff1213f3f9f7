"""Streaming msgpack decoding of record files: tensor bytes go from the file straight into their own arrays.

``msgpack.unpackb`` needs the whole file in memory (a buffer or a mapping) and then copies every ``bin``
into a ``bytes`` object, so loading held the data twice: the loaded tensors plus the file's pages, which
count in the process's resident memory while mapped. This reader walks the stream instead: the structure
(maps, arrays, strings, numbers) is parsed from a small window of the file, and every ``bin`` of at least
:data:`_DIRECT` bytes is read with ``readinto`` into a new array that becomes the tensor's storage. Peak
memory is then the loaded tensors plus one window (``bench/record.py``), with no mapping.

Objects that lie wholly inside the window (most of the structure, small tensors) are decoded by msgpack's
C ``Unpacker`` fed with the window; only the containers around large tensors are walked in Python, so
records of many small entries (optimizer state) load about as fast as with ``unpackb``.

The file is read once, in order, and its digest (``docs/record-format.md`` section 5) is accumulated on the
way over every byte before ``stop``, each piece hashed while it is in cache. The decoded values are those of
``msgpack.unpackb(data, raw=False, strict_map_key=True, use_list=True)`` with the limits of :mod:`._mpk`,
except that ``bin`` objects that do not fit in the window come back as read-only ``memoryview`` objects of
their own ``uint8`` array.
"""

from __future__ import annotations

import io
import struct
from typing import Any

import msgpack
import numpy as np

from ._checksum import Hasher, Sum64

__all__ = ["Malformed", "StreamReader"]

_WINDOW = 1 << 18  # bytes read at a time for the structure (and the head of each tensor)
_PIECE = 1 << 20  # bytes read (then summed while in cache) at a time into a tensor's array
_DIRECT = 1 << 12  # a bin read in Python at least this long gets its own array (smaller ones become bytes)
_MAX_DEPTH = 512  # nesting of maps/arrays (records are a few levels deep; msgpack's C unpacker allows 1024)

# type byte -> struct of the fixed-size value that follows
_FIXED: dict[int, struct.Struct] = {
    0xCA: struct.Struct(">f"), 0xCB: struct.Struct(">d"),
    0xCC: struct.Struct(">B"), 0xCD: struct.Struct(">H"), 0xCE: struct.Struct(">I"), 0xCF: struct.Struct(">Q"),
    0xD0: struct.Struct(">b"), 0xD1: struct.Struct(">h"), 0xD2: struct.Struct(">i"), 0xD3: struct.Struct(">q"),
}
# type byte -> (struct of the length that follows, kind)
_SIZED: dict[int, tuple[struct.Struct, str]] = {
    0xC4: (struct.Struct(">B"), "bin"), 0xC5: (struct.Struct(">H"), "bin"), 0xC6: (struct.Struct(">I"), "bin"),
    0xD9: (struct.Struct(">B"), "str"), 0xDA: (struct.Struct(">H"), "str"), 0xDB: (struct.Struct(">I"), "str"),
    0xDC: (struct.Struct(">H"), "array"), 0xDD: (struct.Struct(">I"), "array"),
    0xDE: (struct.Struct(">H"), "map"), 0xDF: (struct.Struct(">I"), "map"),
}
_CONSTANTS = {0xC0: None, 0xC2: False, 0xC3: True}
_INCOMPLETE = object()


class Malformed(Exception):
    """The stream is not a valid msgpack object within the limits (the message says why)."""


class StreamReader:
    """Decodes the one msgpack object of a binary file opened for reading (from its current position 0).

    Args:
        f: the file, unbuffered (``open(path, "rb", buffering=0)``): windows and tensors are read at once.
        size: the file's size in bytes; no length field may announce more than what is left.
        stop: hash every byte at offsets below ``stop`` (``None``: no digest).
        max_container: most entries in one array or map. max_str: longest string.
        hasher: what hashes those bytes (``update(bytes-like)``); default a :class:`Sum64`.

    Use :meth:`read_object`, then :meth:`drain` (reads and hashes the rest) and :attr:`hasher`.
    """

    def __init__(
        self, f: io.RawIOBase, size: int, stop: int | None, max_container: int, max_str: int,
        hasher: Hasher | None = None,
    ) -> None:
        self._f = f
        self._size = size
        self._stop = stop
        self._sum: Any = Sum64() if hasher is None else hasher
        self._max_container = max_container
        self._max_str = max_str
        self._buf = b""
        self._i = 0  # position in _buf
        self._base = 0  # file offset of _buf[0]
        self._read_to = 0  # file offset of the next byte to read from f
        self._fast: Any = None  # msgpack.Unpacker fed with _buf[_fast_at:], or None
        self._fast_at = 0

    # ------------------------------------------------------------------ input
    @property
    def position(self) -> int:
        """File offset of the next undecoded byte."""
        return self._base + self._i

    @property
    def checksum(self) -> Any:
        """The hasher's ``digest()`` of the bytes read so far that lie below ``stop`` (sum64: an int)."""
        return self._sum.digest()

    @property
    def hasher(self) -> Hasher:
        """The hasher fed with the bytes read so far that lie below ``stop``."""
        return self._sum  # type: ignore[no-any-return]

    def _summed(self, chunk: Any, offset: int) -> None:
        if self._stop is not None and offset < self._stop:
            n = len(chunk)
            self._sum.update(chunk if offset + n <= self._stop else memoryview(chunk)[: self._stop - offset])

    def _readinto(self, view: memoryview) -> int:
        """Fill ``view`` from the file (fewer bytes only at its end); sums each piece while it is in cache."""
        got = 0
        while got < len(view):
            piece = view[got:got + _PIECE]
            n = self._f.readinto(piece)
            if not n:
                break
            self._summed(piece[:n], self._read_to)
            self._read_to += n
            got += n
        return got

    def _read(self, n: int) -> bytes:
        parts = []
        left = n
        while left > 0:
            chunk = self._f.read(left)
            if not chunk:
                break
            parts.append(chunk)
            left -= len(chunk)
        data = parts[0] if len(parts) == 1 else b"".join(parts)
        self._summed(data, self._read_to)
        self._read_to += len(data)
        return data

    def _fill(self, n: int) -> None:
        """Make ``n`` bytes available at ``_buf[_i:]`` (reading a window of the file)."""
        rest = self._buf[self._i:]
        self._base += self._i
        self._fast = None
        self._buf = rest + self._read(max(n - len(rest), min(_WINDOW, self._size - self._read_to)))
        self._i = 0
        if len(self._buf) < n:
            raise Malformed(f"the data ends early: {n} more bytes expected at offset {self._base}, "
                            f"{len(self._buf)} left")

    def _take(self, n: int) -> bytes:
        if self._i + n > len(self._buf):
            self._fill(n)
        out = self._buf[self._i:self._i + n]
        self._i += n
        return out

    def _left(self) -> int:
        return self._size - self.position

    def drain(self) -> None:
        """Read (and sum) the rest of the file, e.g. to tell corruption from a malformed stream."""
        self._base += len(self._buf)
        self._buf, self._i, self._fast = b"", 0, None
        if self._stop is None:
            return
        chunk = memoryview(bytearray(_WINDOW))
        while self._read_to < min(self._stop, self._size) and self._readinto(chunk):
            pass

    def _bin(self, n: int) -> Any:
        if n < _DIRECT:
            return self._take(n)
        arr = np.empty(n, dtype=np.uint8)
        have = min(len(self._buf) - self._i, n)
        arr[:have] = np.frombuffer(self._buf, dtype=np.uint8, count=have, offset=self._i)
        self._i += have
        if have < n:  # the window is used up: read the rest straight into the array
            self._base += len(self._buf)
            self._buf, self._i, self._fast = b"", 0, None
            got = self._readinto(arr.data[have:])
            self._base += got
            if got < n - have:
                raise Malformed(f"the data ends early: a bin of {n} bytes is cut after {have + got} bytes")
        arr.flags.writeable = False
        return arr.data  # read-only, like the array

    # ------------------------------------------------------------------ decoding
    def _length(self, n: int, per_item: int, what: str) -> int:
        limit = self._max_container if what in ("array", "map") else self._max_str if what == "str" else self._size
        if n > limit or n * per_item > self._left():
            raise Malformed(
                f"a {what} of length {n} at offset {self.position} exceeds the limits ({limit}, "
                f"{self._left()} bytes left)"
            )
        return n

    def read_object(self, depth: int = 0) -> Any:
        """The next msgpack object (``raw=False``, ``use_list=True``, ``strict_map_key=True``).

        Nested maps and arrays recurse one Python frame per level.

        Raises:
            Malformed: invalid or reserved type bytes, ext types, lengths beyond the limits or the file,
                invalid UTF-8, non-string map keys, nesting deeper than 512, data ending early.
        """
        if self._i < len(self._buf):
            fast = self._unpack_in_window()
            if fast is not _INCOMPLETE:
                return fast
        else:
            self._fill(1)
        b = self._buf[self._i]
        self._i += 1
        if b <= 0x7F:
            return b
        if b >= 0xE0:
            return b - 0x100
        if 0xA0 <= b <= 0xBF:
            return self._str(self._length(b & 0x1F, 1, "str"))
        if b <= 0x9F:  # fixmap 0x80-0x8f, fixarray 0x90-0x9f
            kind, n = ("map", b & 0x0F) if b <= 0x8F else ("array", b & 0x0F)
        else:
            fixed = _FIXED.get(b)
            if fixed is not None:
                return fixed.unpack(self._take(fixed.size))[0]
            sized = _SIZED.get(b)
            if sized is None:
                if b in _CONSTANTS:
                    return _CONSTANTS[b]
                at = self.position - 1
                if 0xC7 <= b <= 0xC9 or 0xD4 <= b <= 0xD8:
                    raise Malformed(f"an ext object (type byte 0x{b:02x}) at offset {at}; records never hold ext "
                                    "types")
                raise Malformed(f"the reserved type byte 0x{b:02x} at offset {at}")
            fmt, kind = sized
            n = fmt.unpack(self._take(fmt.size))[0]
            if kind == "bin":
                return self._bin(self._length(n, 1, kind))
            if kind == "str":
                return self._str(self._length(n, 1, kind))
        # a map or an array of n entries
        self._length(n, 2 if kind == "map" else 1, kind)
        if depth >= _MAX_DEPTH:
            raise Malformed(f"maps/arrays nested deeper than {_MAX_DEPTH} levels at offset {self.position}")
        if kind == "array":
            items = []
            for _ in range(n):
                items.append(self.read_object(depth + 1))
            return items
        out: dict[Any, Any] = {}
        for _ in range(n):
            key = self.read_object(depth + 1)
            if type(key) is not str and type(key) is not bytes:
                raise Malformed(f"a map key of type {type(key).__name__} before offset {self.position} "
                                "(keys must be str or bytes)")
            out[key] = self.read_object(depth + 1)
        return out

    def _unpack_in_window(self) -> Any:
        """The next object decoded by msgpack's C unpacker if it lies wholly in the window, else
        :data:`_INCOMPLETE` (the position is then unchanged)."""
        u = self._fast
        if u is None or self._fast_at + u.tell() != self._i:
            left = len(self._buf) - self._i
            u = self._fast = msgpack.Unpacker(
                raw=False, strict_map_key=True, use_list=True, max_buffer_size=max(left, 1),
                max_bin_len=self._size, max_str_len=self._max_str, max_array_len=self._max_container,
                max_map_len=self._max_container, max_ext_len=0,
            )
            u.feed(memoryview(self._buf)[self._i:])
            self._fast_at = self._i
        try:
            obj = u.unpack()
        except msgpack.OutOfData:
            self._fast = None
            return _INCOMPLETE
        except msgpack.StackError:
            raise Malformed(f"maps/arrays nested deeper than msgpack's limit after offset {self.position}") from None
        except Exception as exc:
            raise Malformed(f"{type(exc).__name__}: {exc} (after offset {self.position})") from None
        self._i = self._fast_at + u.tell()
        return obj

    def _str(self, n: int) -> str:
        raw = self._take(n)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise Malformed(f"a string that is not valid UTF-8 at offset {self.position - n} ({exc.reason})") from None
