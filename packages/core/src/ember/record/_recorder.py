"""Recorder base classes: the envelope, file naming, atomic writes and error translation."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, ClassVar

from .._errors import RecordError
from .._version import __version__
from ._atomic import atomic_write
from ._checksum import DEFAULT_ALGORITHM, check_algorithm
from ._settings import FullPrecisionSettings, PrecisionSettings, settings_by_name

__all__ = ["Recorder", "FileRecorder", "BytesRecorder", "FORMAT_VERSION", "sniff"]

#: version of the on-disk layout described in docs/record-format.md
FORMAT_VERSION = 1
"""The record envelope's format version (``docs/record-format.md``)."""


def _ember_version() -> str:
    return __version__


def sniff(head: bytes) -> str | None:
    """A guess of the format of a file from its first bytes (for error messages)."""
    if head[:2] == b"\x1f\x8b":
        return "gzip-compressed data (a .gz recorder: NamedMpkGzFileRecorder, BinGzFileRecorder or JsonGzFileRecorder)"
    stripped = head.lstrip()
    if stripped[:1] == b"{":
        return "JSON text (PrettyJsonFileRecorder)"
    if len(head) >= 10 and head[8:10] == b'{"':
        return "a safetensors file (SafetensorsFileRecorder)"
    if head[:2] == b"PK":
        return "a zip archive (a torch.save file? use ember-import)"
    if head[:1] in (b"\x82", b"\x81", b"\x83", b"\xde"):
        return "msgpack data (NamedMpkFileRecorder or BinFileRecorder)"
    return None


class Recorder:
    """Base of every recorder: writes records with precision ``settings`` inside the envelope.

    Args:
        settings: the element types floats and ints are written as (default
            :class:`FullPrecisionSettings`). Loading accepts any settings.
        verify: check the file's digests when loading (default ``True``): the whole-stream digest of
            msgpack files, the per-tensor and document digests of JSON and safetensors files (and the sum64
            checksums of files written before digests). XXH3-64 costs one pass at ~30 GB/s; ``False`` trusts
            the file. Gzip's own CRC-32 is always checked.
        digest: the algorithm of the digests written (default ``"xxh3-64"``; ``"blake2b-256"`` and
            ``"sha256"`` are slower; ``None`` writes none). Loading reads the algorithm from the file.

    The envelope is ``{"metadata": {"format", "version", "float", "int", "settings", "ember_version"},
    "item": ..., "digest": "<algorithm>:<hex>"}`` (see ``docs/record-format.md``).

    Raises:
        RecordError: an unknown ``digest`` algorithm.
    """

    #: the ``metadata.format`` written and expected
    format: ClassVar[str] = ""
    #: positional encoding (Bin recorders): loading needs a template record
    positional: ClassVar[bool] = False
    default_settings: ClassVar[type[PrecisionSettings]] = FullPrecisionSettings

    def __init__(
        self, settings: PrecisionSettings | None = None, verify: bool = True, digest: str | None = DEFAULT_ALGORITHM,
    ) -> None:
        if settings is None:
            settings = self.default_settings()
        if isinstance(settings, type) and issubclass(settings, PrecisionSettings):
            settings = settings()
        if not isinstance(settings, PrecisionSettings):
            raise TypeError(f"{type(self).__name__}: settings must be a PrecisionSettings, got {settings!r}")
        self.settings = settings
        self.verify = bool(verify)
        self.digest = check_algorithm(digest)

    def metadata(self) -> dict[str, Any]:
        s = self.settings
        return {
            "format": self.format,
            "version": FORMAT_VERSION,
            "float": s.float_dtype.short,
            "int": s.int_dtype.short,
            "settings": s.name,
            "ember_version": _ember_version(),
        }

    def _check_template(self, template: Any, origin: str) -> None:
        if self.positional and template is None:
            raise RecordError(
                f"{origin}: {type(self).__name__} stores records positionally (without keys); pass "
                "template= a record of the same structure (module.load_file does this for you)."
            )

    def check_envelope(self, envelope: Any, origin: str) -> Any:
        """The ``item`` of a decoded envelope after validating its metadata.

        Raises:
            RecordError: not an envelope, another format, an unknown version or settings.
        """
        if not isinstance(envelope, dict) or set(envelope) - {"checksum", "digest"} != {"metadata", "item"}:
            found = sorted(envelope) if isinstance(envelope, dict) else type(envelope).__name__
            raise RecordError(
                f"{origin}: not an Ember record: expected a map with keys ['item', 'metadata'], found {found}."
            )
        meta = envelope["metadata"]
        if not isinstance(meta, dict):
            raise RecordError(f"{origin}: the metadata must be a map, found {type(meta).__name__}.")
        check_metadata(meta, origin, self.format, type(self).__name__)
        return envelope["item"]

    def __repr__(self) -> str:
        return f"{type(self).__name__}(settings={self.settings!r})"


def check_metadata(meta: dict[str, Any], origin: str, expected: str, recorder: str) -> None:
    fmt = meta.get("format")
    if fmt != expected:
        hint = _RECORDER_OF.get(fmt, "another recorder") if isinstance(fmt, str) else "another tool"
        raise RecordError(
            f"{origin}: the file holds format {fmt!r}, but {recorder} reads {expected!r}; load it with {hint}."
        )
    version = meta.get("version")
    if isinstance(version, str) and version.isdigit():
        version = int(version)
    if not isinstance(version, int) or isinstance(version, bool):
        raise RecordError(f"{origin}: the metadata has no integer 'version' (found {version!r}).")
    if version != FORMAT_VERSION:
        raise RecordError(
            f"{origin}: record format version {version} is not supported; this Ember ({_ember_version()}) reads "
            f"version {FORMAT_VERSION}. Load it with the Ember version that wrote it "
            f"({meta.get('ember_version', 'unknown')}) and re-save."
        )
    name = meta.get("settings")
    if not isinstance(name, str) or settings_by_name(name) is None:
        raise RecordError(f"{origin}: unknown precision settings {name!r} in the metadata.")


_RECORDER_OF = {
    "named-mpk": "NamedMpkFileRecorder / NamedMpkGzFileRecorder / NamedMpkBytesRecorder",
    "bin": "BinFileRecorder / BinGzFileRecorder / BinBytesRecorder",
    "json": "PrettyJsonFileRecorder / JsonGzFileRecorder",
    "safetensors": "SafetensorsFileRecorder",
}


class FileRecorder(Recorder):
    """A recorder writing files; the extension is added to the path when it is missing.

    ``record(record, path)`` returns the final path; ``load(path, template=None)`` returns the record.
    """

    extension: ClassVar[str] = ""

    def file_path(self, path: str | os.PathLike[str]) -> Path:
        """``path`` with this recorder's extension appended unless it already ends with it."""
        p = Path(path)
        return p if p.name.endswith("." + self.extension) else p.with_name(f"{p.name}.{self.extension}")

    def record(self, record: Any, path: str | os.PathLike[str]) -> Path:
        """Write ``record`` atomically to ``path`` (+ extension) and return the final path.

        Raises:
            RecordError: the record holds unsupported values (names the path in the record).
        """
        final = self.file_path(path)
        item = self._encode_item(record)
        atomic_write(final, lambda f: self._write(f, item))
        return final

    def load(self, path: str | os.PathLike[str], template: Any = None) -> Any:
        """The record stored at ``path`` (+ extension).

        Args:
            template: for positional recorders, a record of the same structure.

        Raises:
            FileNotFoundError: no such file.
            RecordError: wrong format, truncated or corrupted data, unknown version (names the file).
        """
        final = self.file_path(path)
        if not final.exists() and Path(path).exists():
            final = Path(path)
        origin = f"record file '{final}'"
        self._check_template(template, origin)
        if not final.exists():
            raise FileNotFoundError(f"{origin} does not exist")
        return self._read(final, origin, template)

    # subclass hooks
    def _encode_item(self, record: Any) -> Any:
        raise NotImplementedError

    def _write(self, f: Any, item: Any) -> None:
        raise NotImplementedError

    def _read(self, path: Path, origin: str, template: Any) -> Any:
        raise NotImplementedError


class BytesRecorder(Recorder):
    """A recorder to and from in-memory ``bytes`` (Burn's ``BinBytesRecorder``/``NamedMpkBytesRecorder``)."""

    def record(self, record: Any) -> bytes:
        raise NotImplementedError

    def load(self, data: bytes | bytearray | memoryview, template: Any = None) -> Any:
        raise NotImplementedError
