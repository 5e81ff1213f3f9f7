"""msgpack recorders: named (``.mpk``, ``.mpk.gz``, bytes) and positional Bin (``.bin``, ``.bin.gz``, bytes).

Writing streams the item through ``msgpack.Packer`` one node at a time, so a tensor is copied once (into
the packer's buffer, written without a further copy) and the whole file is never held in memory.
Reading streams the file (``_mpk_stream``): the structure is decoded from a small window and each
tensor's bytes are read straight into the array that becomes its storage (one copy, no mapping, so
memory holds the data once), while the whole-stream digest is computed on the way. Gzip files are
decompressed in memory first (bounded by the gzip trailer's size, :mod:`._gunzip`) and unpacked with
``msgpack.unpackb`` (so loading a ``.gz`` record needs its uncompressed size once more), as are bytes.
Container sizes are bounded, so corrupted length fields raise instead of allocating or waiting for data
that never comes.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import os
from pathlib import Path
from typing import Any, ClassVar

import msgpack

from .._errors import RecordError
from ._checksum import format_digest, legacy, mismatch, new_hasher, parse_digest
from ._codec import decode_named, decode_positional, encode
from ._gunzip import gunzip, open_head
from ._mpk_stream import Malformed, StreamReader
from ._recorder import BytesRecorder, FileRecorder, Recorder, sniff
from ._settings import HalfPrecisionSettings

__all__ = [
    "NamedMpkFileRecorder",
    "NamedMpkGzFileRecorder",
    "NamedMpkBytesRecorder",
    "BinFileRecorder",
    "BinGzFileRecorder",
    "BinBytesRecorder",
    "DefaultFileRecorder",
    "CompactRecorder",
    "SensitiveCompactRecorder",
]

_MAX_CONTAINER = 1 << 24  # entries in one list/map (a corrupted header must not allocate gigabytes)
_MAX_STR = 1 << 28
_GZ_LEVEL = 6  # gzip/flate2 default level (Burn's NamedMpkGzFileRecorder uses flate2's default)


_DIGEST_KEY = msgpack.packb("digest")
_LEGACY_KEY = msgpack.packb("checksum") + b"\xc4\x08"  # files written before digests: sum64 as bin 8
_LEGACY_LEN = len(_LEGACY_KEY) + 8
_TAIL = 256  # the trailer lies in the last bytes: key, then a str of at most ~80 characters


def _pack_envelope(write: Any, envelope: dict[str, Any], algorithm: str | None) -> None:
    """Write ``{"metadata", "item", "digest"}``; the digest hashes every byte before its key.

    The packer appends to its own buffer (``autoreset=False``), which is hashed and handed to ``write`` without a
    copy after each tensor (``getbuffer``) and then reset: a tensor is copied once, into that buffer. Without an
    ``algorithm`` the envelope has two entries and no digest.
    """
    packer = msgpack.Packer(use_bin_type=True, autoreset=False)
    hasher = new_hasher(algorithm) if algorithm else None

    def flush() -> None:
        buf = packer.getbuffer()
        try:
            if len(buf):
                if hasher is not None:
                    hasher.update(buf)
                write(buf)
        finally:
            buf.release()
        packer.reset()

    packer.pack_map_header(3 if hasher is not None else 2)
    for key in ("metadata", "item"):
        packer.pack(key)
        _pack(packer, envelope[key], flush)
    flush()
    if algorithm and hasher is not None:
        write(_DIGEST_KEY)
        write(msgpack.packb(format_digest(algorithm, hasher)))


def _trailer(tail: bytes, origin: str) -> tuple[str, str, int]:
    """``(stored digest, algorithm, trailer length)`` from the last bytes of a 3-entry envelope.

    The trailer is the key ``"digest"`` and a str ``"<algorithm>:<hex>"`` ending the data, or in files written
    before digests the key ``"checksum"`` and a ``bin 8`` sum64.

    Raises:
        RecordError: no trailer (the data is truncated or corrupted), or an unknown algorithm.
    """
    if len(tail) >= _LEGACY_LEN and tail[-_LEGACY_LEN:-8] == _LEGACY_KEY:
        return legacy(int.from_bytes(tail[-8:], "little")), "sum64", _LEGACY_LEN
    at = tail.rfind(_DIGEST_KEY)
    if at >= 0:
        value = tail[at + len(_DIGEST_KEY):]
        if value[:1] == b"\xd9" and len(value) >= 2:
            text, n = value[2:], value[1]
        elif value and 0xA0 <= value[0] <= 0xBF:
            text, n = value[1:], value[0] & 0x1F
        else:
            text, n = b"", -1
        if len(text) == n:
            stored = text.decode("ascii", "replace")
            return stored, parse_digest(stored, origin), len(tail) - at
    raise RecordError(
        f"{origin}: the digest trailer is missing (a 3-entry envelope must end with \"digest\": "
        "\"<algorithm>:<hex>\"): the data is truncated or corrupted."
    )


def _verify(buf: Any, origin: str) -> None:
    """Check the whole-stream digest of an uncompressed envelope (skipped when it has none)."""
    n = len(buf)
    if n == 0 or buf[0] != 0x83:
        return  # a 2-entry envelope (written by another tool, or digest=None) carries no digest
    stored, algorithm, length = _trailer(bytes(buf[max(0, n - _TAIL):]), origin)
    hasher = new_hasher(algorithm)
    hasher.update(memoryview(buf)[: n - length])
    actual = format_digest(algorithm, hasher)
    if actual != stored:
        raise mismatch(origin, stored, actual)


def _pack(packer: msgpack.Packer, node: Any, flush: Any) -> None:
    if isinstance(node, dict):
        packer.pack_map_header(len(node))
        for k, v in node.items():
            packer.pack(k)
            _pack(packer, v, flush)
    elif isinstance(node, list):
        packer.pack_array_header(len(node))
        for v in node:
            _pack(packer, v, flush)
    else:
        packer.pack(node)
        if isinstance(node, memoryview) and len(node) >= 1 << 16:
            flush()


def _bin(data: Any, path: str) -> Any:
    from ._codec import tensor_bytes

    return tensor_bytes(data)


def _limits(bound: int) -> dict[str, int]:
    return {
        "max_bin_len": bound,
        "max_str_len": min(bound, _MAX_STR),
        "max_array_len": min(bound, _MAX_CONTAINER),
        "max_map_len": min(bound, _MAX_CONTAINER),
        "max_ext_len": 0,
    }


def _invalid(origin: str, problem: str, head: bytes) -> RecordError:
    guess = sniff(head)
    hint = f" The data looks like {guess}." if guess and "msgpack" not in guess else ""
    return RecordError(
        f"{origin}: not a valid msgpack record ({problem}); the file is truncated, corrupted or of another "
        f"format.{hint}"
    )


def _unpack_buffer(buf: Any, origin: str) -> Any:
    n = len(buf)
    try:
        return msgpack.unpackb(buf, raw=False, strict_map_key=True, use_list=True, **_limits(max(n, 1)))
    except RecordError:
        raise
    except Exception as exc:
        raise _invalid(origin, f"{type(exc).__name__}: {exc}", bytes(buf[:16])) from None


def _unpack_file(f: Any, size: int, head: bytes, origin: str, verify: bool) -> Any:
    """The envelope in the file ``f`` (at offset 0), streamed: tensors are read into their own arrays.

    With ``verify`` and a 3-entry envelope, the whole-stream digest is computed while reading; a stream that
    fails to decode is read to the end first, so altered data is reported as a digest mismatch.
    """
    stop = stored = algorithm = None
    hasher = None
    if verify and head[:1] == b"\x83":
        f.seek(max(0, size - _TAIL))
        stored, algorithm, length = _trailer(f.read(_TAIL), origin)
        f.seek(0)
        stop = size - length
        hasher = new_hasher(algorithm)
    reader = StreamReader(f, size, stop, max_container=min(size, _MAX_CONTAINER), max_str=min(size, _MAX_STR),
                          hasher=hasher)

    def check() -> None:
        if stored is not None and algorithm is not None:
            actual = format_digest(algorithm, reader.hasher)
            if actual != stored:
                raise mismatch(origin, stored, actual)

    try:
        envelope = reader.read_object()
        if reader.position != size:
            raise Malformed(f"{size - reader.position} bytes of extra data after the record")
    except (Malformed, RecursionError) as exc:
        if stop is not None:
            reader.drain()
            check()
        raise _invalid(origin, str(exc) if isinstance(exc, Malformed) else type(exc).__name__, head) from None
    check()
    return envelope


class _Msgpack(Recorder):
    def _encode_item(self, record: Any) -> Any:
        return {"metadata": self.metadata(), "item": encode(record, self.settings, _bin, self.positional)}

    def _decode(self, envelope: Any, origin: str, template: Any) -> Any:
        item = self.check_envelope(envelope, origin)
        if self.positional:
            return decode_positional(item, template, origin, self.verify)
        return decode_named(item, origin, self.verify)


class _MsgpackFile(_Msgpack, FileRecorder):
    gzip: ClassVar[bool] = False

    def _write(self, f: Any, item: Any) -> None:
        if self.gzip:
            with gzip.GzipFile(filename="", fileobj=f, mode="wb", compresslevel=_GZ_LEVEL, mtime=0) as gz:
                _pack_envelope(gz.write, item, self.digest)
        else:
            _pack_envelope(f.write, item, self.digest)

    def _read(self, path: Path, origin: str, template: Any) -> Any:
        with open(path, "rb", buffering=0) as f:
            size, head = open_head(f, origin)
            if self.gzip:
                data = gunzip(f, size, head, origin)
                if self.verify:
                    _verify(data, origin)
                envelope = _unpack_buffer(data, origin)
                del data
            else:
                if head[:2] == b"\x1f\x8b":
                    raise RecordError(
                        f"{origin}: the file is gzip-compressed; load it with the matching Gz recorder "
                        f"({type(self).__name__.replace('File', 'GzFile')})."
                    )
                with contextlib.suppress(AttributeError, OSError):
                    os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_SEQUENTIAL)
                envelope = _unpack_file(f, size, head, origin, self.verify)
        return self._decode(envelope, origin, template)


class _MsgpackBytes(_Msgpack, BytesRecorder):
    def record(self, record: Any) -> bytes:
        """The record as bytes (the content of the matching ``.mpk``/``.bin`` file).

        Raises:
            RecordError: the record holds unsupported values.
        """
        buf = io.BytesIO()
        _pack_envelope(buf.write, self._encode_item(record), self.digest)
        return buf.getvalue()

    def load(self, data: bytes | bytearray | memoryview, template: Any = None) -> Any:
        """The record in ``data``.

        Raises:
            RecordError: truncated, corrupted or of another format.
        """
        origin = f"{type(self).__name__} bytes"
        self._check_template(template, origin)
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"{type(self).__name__}.load: expected bytes, got {type(data).__name__}")
        if len(data) == 0:
            raise RecordError(f"{origin}: empty input.")
        if self.verify:
            _verify(data, origin)
        return self._decode(_unpack_buffer(data, origin), origin, template)


class NamedMpkFileRecorder(_MsgpackFile):
    """msgpack with field names (``.mpk``); Burn's ``NamedMpkFileRecorder``. Default settings: full precision."""

    format = "named-mpk"
    extension = "mpk"


class NamedMpkGzFileRecorder(_MsgpackFile):
    """gzip-compressed named msgpack (``.mpk.gz``); Burn's ``NamedMpkGzFileRecorder``."""

    format = "named-mpk"
    extension = "mpk.gz"
    gzip = True


class NamedMpkBytesRecorder(_MsgpackBytes):
    """Named msgpack to and from ``bytes`` in memory (Burn's ``NamedMpkBytesRecorder``)."""

    format = "named-mpk"


class BinFileRecorder(_MsgpackFile):
    """Positional msgpack (``.bin``): no field names, so smaller; loading needs a template.

    Burn's ``BinFileRecorder`` (bincode). ``module.load_file`` supplies the template itself.
    """

    format = "bin"
    extension = "bin"
    positional = True


class BinGzFileRecorder(_MsgpackFile):
    """gzip-compressed positional msgpack (``.bin.gz``); Burn's ``BinGzFileRecorder``."""

    format = "bin"
    extension = "bin.gz"
    positional = True
    gzip = True


class BinBytesRecorder(_MsgpackBytes):
    """Positional msgpack to and from ``bytes`` (Burn's ``BinBytesRecorder``); loading needs a template."""

    format = "bin"
    positional = True


class DefaultFileRecorder(NamedMpkFileRecorder):
    """Burn's default: :class:`NamedMpkFileRecorder` with :class:`FullPrecisionSettings`."""


class CompactRecorder(NamedMpkGzFileRecorder):
    """Burn's ``CompactRecorder``: :class:`NamedMpkGzFileRecorder` with :class:`HalfPrecisionSettings`."""

    default_settings = HalfPrecisionSettings


class SensitiveCompactRecorder(BinGzFileRecorder):
    """Burn's ``SensitiveCompactRecorder``: :class:`BinGzFileRecorder` with :class:`HalfPrecisionSettings`."""

    default_settings = HalfPrecisionSettings
