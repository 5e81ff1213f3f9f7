"""Downloading files from mirrors with urllib and checking their SHA-256."""

from __future__ import annotations

import gzip
import hashlib
import os
import shutil
import tempfile
import urllib.error
import urllib.request
import zlib
from collections.abc import Sequence
from pathlib import Path

__all__ = ["download_verified", "sha256_file"]

_CHUNK = 1 << 20


def sha256_file(path: Path, *, gunzip: bool = False) -> str:
    """The hex SHA-256 of the file's bytes (of its decompressed content with ``gunzip``)."""
    h = hashlib.sha256()
    opener = gzip.open if gunzip else open
    with opener(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def _matches(path: Path, sha256: str, sha256_content: str | None) -> bool:
    if sha256_file(path) == sha256:
        return True
    if sha256_content is None:
        return False
    try:
        return sha256_file(path, gunzip=True) == sha256_content
    except (OSError, EOFError, zlib.error):
        return False


def download_verified(name: str, urls: Sequence[str], dest: Path, sha256: str, sha256_content: str | None = None,
                      timeout: float = 60.0) -> list[str]:
    """Download ``name`` to ``dest`` from the first of ``urls`` that serves it with the right checksum.

    A file is accepted when the SHA-256 of its bytes is ``sha256`` or, for a gzip file, the SHA-256 of
    its decompressed content is ``sha256_content`` (mirrors sometimes recompress). The download goes to a
    temporary directory of the system (``tempfile``), so a failed download creates nothing at ``dest``, not even
    its directory; a verified file is then copied beside ``dest`` and renamed into place (atomic), the missing
    directories of ``dest`` being created only then.

    Returns the list of failures (one line per URL tried) when no URL succeeded, else ``[]``.

    Raises:
        OSError: the verified file cannot be written at ``dest`` (the directory cannot be created or written).
    """
    failures = []
    with tempfile.TemporaryDirectory(prefix="ember-download-") as scratch:
        tmp = Path(scratch) / dest.name
        for url in urls:
            try:
                with open(tmp, "wb") as out, urllib.request.urlopen(url, timeout=timeout) as resp:
                    while chunk := resp.read(_CHUNK):
                        out.write(chunk)
            except (urllib.error.URLError, OSError, ValueError) as exc:
                reason = getattr(exc, "reason", None) or exc
                failures.append(f"{url}: {reason}")
                continue
            if not _matches(tmp, sha256, sha256_content):
                failures.append(f"{url}: SHA-256 mismatch (got {sha256_file(tmp)}, expected {sha256})")
                continue
            _place(tmp, dest)
            return []
    return failures


def _place(verified: Path, dest: Path) -> None:
    """Copy ``verified`` to a temporary file beside ``dest`` (creating ``dest``'s directories), fsync it and
    rename it into place; the temporary file is removed when anything fails."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, part_name = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".part", dir=dest.parent)
    part = Path(part_name)
    try:
        with os.fdopen(fd, "wb") as out, open(verified, "rb") as src:
            shutil.copyfileobj(src, out, _CHUNK)
            out.flush()
            os.fsync(out.fileno())
        os.replace(part, dest)
    finally:
        part.unlink(missing_ok=True)
