"""JSON recorders: ``PrettyJsonFileRecorder`` (``.json``, indented) and ``JsonGzFileRecorder`` (``.json.gz``).

Tensor bytes are base64 text (RFC 4648, standard alphabet, padded). Readable and diff-able, but about
4/3 the size of the data before compression and slow for large models: use msgpack for those.
"""

from __future__ import annotations

import gzip
import json
import zlib
from pathlib import Path
from typing import Any, ClassVar

from .._errors import RecordError
from ._checksum import sum64
from ._codec import b64, decode_named, encode, unb64
from ._recorder import FileRecorder, sniff

__all__ = ["PrettyJsonFileRecorder", "JsonGzFileRecorder"]


class _JsonFile(FileRecorder):
    format = "json"
    gzip: ClassVar[bool] = False
    indent: ClassVar[int | None] = None

    def _encode_item(self, record: Any) -> Any:
        return {"metadata": self.metadata(), "item": encode(record, self.settings, b64, checksum=True)}

    def _write(self, f: Any, item: Any) -> None:
        text = json.dumps(item, indent=self.indent, ensure_ascii=False, allow_nan=True).encode("utf-8")
        # close the object with a "checksum" entry: the sum64 of every byte before its key
        cut = text.rindex(b"}")
        head = text[:cut].rstrip() + (b",\n  " if self.indent else b",")
        text = head + b'"checksum": ' + str(sum64(head)).encode("ascii") + (b"\n}" if self.indent else b"}")
        if self.gzip:
            with gzip.GzipFile(filename="", fileobj=f, mode="wb", compresslevel=6, mtime=0) as gz:
                gz.write(text)
        else:
            f.write(text)

    def _read(self, path: Path, origin: str, template: Any) -> Any:
        raw = path.read_bytes()
        if not raw:
            raise RecordError(f"{origin}: the file is empty.")
        if self.gzip:
            if raw[:2] != b"\x1f\x8b":
                guess = sniff(raw[:16])
                raise RecordError(
                    f"{origin}: not gzip-compressed (magic bytes {raw[:2].hex()}, expected 1f8b)"
                    + (f"; it looks like {guess}." if guess else ".")
                )
            try:
                raw = gzip.decompress(raw)
            except (OSError, EOFError, zlib.error) as exc:
                raise RecordError(f"{origin}: corrupted gzip data ({type(exc).__name__}: {exc}).") from None
        elif raw[:2] == b"\x1f\x8b":
            raise RecordError(f"{origin}: the file is gzip-compressed; load it with JsonGzFileRecorder.")
        try:
            envelope = json.loads(raw)
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            guess = sniff(raw[:16])
            hint = f" It looks like {guess}." if guess and "JSON" not in guess else ""
            raise RecordError(
                f"{origin}: not valid JSON ({type(exc).__name__}: {exc}); the file is truncated or corrupted.{hint}"
            ) from None
        if self.verify and isinstance(envelope, dict) and "checksum" in envelope:
            cut = raw.rfind(b'"checksum"')
            if not isinstance(envelope["checksum"], int) or sum64(raw[:cut]) != envelope["checksum"]:
                raise RecordError(f"{origin}: checksum mismatch: the file is corrupted (altered bytes).")
        item = self.check_envelope(envelope, origin)
        return decode_named(item, origin, self.verify, resolve=unb64(origin))


class PrettyJsonFileRecorder(_JsonFile):
    """Indented JSON (``.json``); Burn's ``PrettyJsonFileRecorder``."""

    extension = "json"
    indent = 2


class JsonGzFileRecorder(_JsonFile):
    """Compact gzip-compressed JSON (``.json.gz``); Burn's ``JsonGzFileRecorder``."""

    extension = "json.gz"
    gzip = True
