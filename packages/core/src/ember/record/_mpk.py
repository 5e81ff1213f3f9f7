"""msgpack recorders: named (``.mpk``, ``.mpk.gz``, bytes) and positional Bin (``.bin``, ``.bin.gz``, bytes).

Writing streams the item through ``msgpack.Packer`` one node at a time, so a tensor is copied once (into
the packer's buffer, written without a further copy) and the whole file is never held in memory.
Reading maps the file (``mmap``), checks the whole-stream checksum, and unpacks it with
``msgpack.unpackb`` (one copy of the tensor bytes, into the record). Gzip files are decompressed in
memory first (so loading a ``.gz`` record needs its uncompressed size once more). Container sizes are
bounded, so corrupted length fields raise instead of allocating or waiting for data that never comes.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import mmap
import os
import zlib
from pathlib import Path
from typing import Any, ClassVar

import msgpack

from .._errors import RecordError
from ._checksum import Sum64, sum64
from ._codec import decode_named, decode_positional, encode
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


_TRAILER_KEY = msgpack.packb("checksum")
_TRAILER_LEN = len(_TRAILER_KEY) + 2 + 8  # "checksum" then bin8 header (c4 08) and 8 bytes


def _pack_envelope(write: Any, envelope: dict[str, Any]) -> None:
    """Write ``{"metadata", "item", "checksum"}``; the checksum is the sum64 of every byte before its key.

    The packer appends to its own buffer (``autoreset=False``), which is handed to ``write`` without a
    copy after each tensor (``getbuffer``) and then reset: a tensor is copied once, into that buffer.
    """
    packer = msgpack.Packer(use_bin_type=True, autoreset=False)
    acc = Sum64()

    def flush() -> None:
        buf = packer.getbuffer()
        try:
            if len(buf):
                acc.update(buf)
                write(buf)
        finally:
            buf.release()
        packer.reset()

    packer.pack_map_header(3)
    for key in ("metadata", "item"):
        packer.pack(key)
        _pack(packer, envelope[key], flush)
    flush()
    write(_TRAILER_KEY)
    write(msgpack.packb(acc.digest().to_bytes(8, "little"), use_bin_type=True))


def _verify(buf: Any, origin: str) -> None:
    """Check the whole-stream checksum of an uncompressed envelope (skipped when it has none)."""
    n = len(buf)
    if n == 0 or buf[0] != 0x83:
        return  # a 2-entry envelope (written by another tool) carries no checksum
    tail = bytes(buf[n - _TRAILER_LEN:]) if n >= _TRAILER_LEN else b""
    if tail[: len(_TRAILER_KEY) + 2] != _TRAILER_KEY + b"\xc4\x08":
        raise RecordError(f"{origin}: the checksum trailer is missing: the data is truncated or corrupted.")
    stored = int.from_bytes(tail[-8:], "little")
    if sum64(memoryview(buf)[: n - _TRAILER_LEN]) != stored:
        raise RecordError(f"{origin}: checksum mismatch: the data is corrupted (altered or truncated bytes).")


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


def _unpack_buffer(buf: Any, origin: str) -> Any:
    n = len(buf)
    try:
        return msgpack.unpackb(buf, raw=False, strict_map_key=True, use_list=True, **_limits(max(n, 1)))
    except RecordError:
        raise
    except Exception as exc:
        head = bytes(buf[:16])
        guess = sniff(head)
        hint = f" The data looks like {guess}." if guess and "msgpack" not in guess else ""
        raise RecordError(
            f"{origin}: not a valid msgpack record ({type(exc).__name__}: {exc}); the file is truncated, "
            f"corrupted or of another format.{hint}"
        ) from None


def _check_gzip_magic(head: bytes, origin: str) -> None:
    if head[:2] != b"\x1f\x8b":
        guess = sniff(head)
        raise RecordError(
            f"{origin}: not gzip-compressed (magic bytes {head[:2].hex() or 'none'}, expected 1f8b)"
            + (f"; it looks like {guess}." if guess else "; the file is corrupted or of another format.")
        )


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
                _pack_envelope(gz.write, item)
        else:
            _pack_envelope(f.write, item)

    def _read(self, path: Path, origin: str, template: Any) -> Any:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size == 0:
                raise RecordError(f"{origin}: the file is empty.")
            head = f.read(16)
            f.seek(0)
            if self.gzip:
                _check_gzip_magic(head, origin)
                try:
                    with gzip.GzipFile(filename="", fileobj=f, mode="rb") as gz:
                        data = gz.read()
                except (OSError, EOFError, zlib.error) as exc:
                    raise RecordError(
                        f"{origin}: corrupted gzip data ({type(exc).__name__}: {exc}); the file is truncated or "
                        "altered."
                    ) from None
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
                with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
                    with contextlib.suppress(AttributeError, OSError):
                        m.madvise(mmap.MADV_SEQUENTIAL)
                    if self.verify:
                        _verify(m, origin)
                    envelope = _unpack_buffer(m, origin)
        return self._decode(envelope, origin, template)


class _MsgpackBytes(_Msgpack, BytesRecorder):
    def record(self, record: Any) -> bytes:
        """The record as bytes (the content of the matching ``.mpk``/``.bin`` file).

        Raises:
            RecordError: the record holds unsupported values.
        """
        buf = io.BytesIO()
        _pack_envelope(buf.write, self._encode_item(record))
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
