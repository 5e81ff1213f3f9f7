"""JSON recorders: ``PrettyJsonFileRecorder`` (``.json``, indented) and ``JsonGzFileRecorder`` (``.json.gz``).

Tensor bytes are base64 text (RFC 4648, standard alphabet, padded). Readable and diff-able, but about
4/3 the size of the data before compression and slow for large models: use msgpack for those.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any, ClassVar

from .._errors import RecordError
from ._checksum import digest_of, legacy, mismatch, parse_digest
from ._codec import b64, decode_named, encode, unb64
from ._gunzip import gunzip, open_head
from ._recorder import FileRecorder, sniff

__all__ = ["PrettyJsonFileRecorder", "JsonGzFileRecorder"]


class _JsonFile(FileRecorder):
    format = "json"
    gzip: ClassVar[bool] = False
    indent: ClassVar[int | None] = None

    def _encode_item(self, record: Any) -> Any:
        return {"metadata": self.metadata(), "item": encode(record, self.settings, b64, digest=self.digest)}

    def _write(self, f: Any, item: Any) -> None:
        text = json.dumps(item, indent=self.indent, ensure_ascii=False, allow_nan=True).encode("utf-8")
        if self.digest:  # close the object with a "digest" entry: the digest of every byte before its key
            cut = text.rindex(b"}")
            head = text[:cut].rstrip() + (b",\n  " if self.indent else b",")
            tail = f'"digest": "{digest_of(head, self.digest)}"'.encode("ascii")
            text = head + tail + (b"\n}" if self.indent else b"}")
        if self.gzip:
            with gzip.GzipFile(filename="", fileobj=f, mode="wb", compresslevel=6, mtime=0) as gz:
                gz.write(text)
        else:
            f.write(text)

    def _read(self, path: Path, origin: str, template: Any) -> Any:
        with open(path, "rb") as f:
            size, head = open_head(f, origin)
            if self.gzip:
                raw: Any = gunzip(f, size, head, origin)
            elif head[:2] == b"\x1f\x8b":
                raise RecordError(f"{origin}: the file is gzip-compressed; load it with JsonGzFileRecorder.")
            else:
                raw = f.read()
        try:
            envelope = json.loads(raw)
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            guess = sniff(bytes(raw[:16]))
            hint = f" It looks like {guess}." if guess and "JSON" not in guess else ""
            problem = f"{type(exc).__name__}: {str(exc)[:200]}"
            raise RecordError(
                f"{origin}: not valid JSON ({problem}); the file is truncated or corrupted.{hint}"
            ) from None
        if self.verify and isinstance(envelope, dict):
            _verify_document(raw, envelope, origin)
        item = self.check_envelope(envelope, origin)
        return decode_named(item, origin, self.verify, resolve=unb64(origin))


def _verify_document(raw: Any, envelope: dict[str, Any], origin: str) -> None:
    """Check the document digest: ``"digest"`` (or an old file's ``"checksum"``) hashes every byte before its
    (last) key."""
    if "digest" in envelope:
        stored = envelope["digest"]
        algorithm = parse_digest(stored, origin)
        cut = raw.rfind(b'"digest"')
    elif "checksum" in envelope:
        value = envelope["checksum"]
        if not isinstance(value, int) or isinstance(value, bool):
            raise RecordError(f"{origin}: the checksum must be an integer, found {type(value).__name__}; the file "
                              "is corrupted or was changed.")
        stored, algorithm = legacy(value), "sum64"
        cut = raw.rfind(b'"checksum"')
    else:
        return
    actual = digest_of(memoryview(raw)[:cut], algorithm)
    if actual != stored:
        raise mismatch(origin, stored, actual)


class PrettyJsonFileRecorder(_JsonFile):
    """Indented JSON (``.json``); Burn's ``PrettyJsonFileRecorder``."""

    extension = "json"
    indent = 2


class JsonGzFileRecorder(_JsonFile):
    """Compact gzip-compressed JSON (``.json.gz``); Burn's ``JsonGzFileRecorder``."""

    extension = "json.gz"
    gzip = True
