"""The safetensors container, read from an open file: header parsing and checks, and exact reads.

Shared by :class:`~ember.record.SafetensorsFileRecorder` and ``ember_import``'s safetensors reader, so that both
check an untrusted header the same way and read it from the same handle as the data (no second open that a
concurrent atomic save could swap underneath).

Format (https://github.com/huggingface/safetensors): an 8-byte little-endian header length ``N``, ``N`` bytes
of JSON ``{name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {str: str}}``, then the data;
offsets are relative to the end of the header.
"""

from __future__ import annotations

import json
import reprlib
import struct
from collections.abc import Mapping
from typing import Any

from .._errors import RecordError

__all__ = ["ITEMSIZE", "MAX_HEADER_BYTES", "read_header", "read_into", "short_repr"]

#: every safetensors dtype name with its element size in bytes (readers choose which they support)
ITEMSIZE: dict[str, int] = {
    "F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1,
    "U64": 8, "U32": 4, "U16": 2, "U8": 1, "BOOL": 1,
}
#: the largest header accepted (the safetensors library's own limit is 100 MB)
MAX_HEADER_BYTES = 100 * 1024 * 1024
_REPR = reprlib.Repr()
_REPR.maxlist = _REPR.maxdict = _REPR.maxtuple = 8
_REPR.maxstring = _REPR.maxother = 80
_REPR.maxlevel = 3


def short_repr(value: Any) -> str:
    """A bounded repr of a value read from a file: error messages never hold an attacker-sized object."""
    return _REPR.repr(value)


def read_header(f: Any, size: int, origin: str, supported: Mapping[str, Any]) -> tuple[dict[str, Any], int]:
    """Parse and check the header of the safetensors file open as ``f`` (binary, ``size`` bytes long).

    Every tensor entry is checked: its dtype is a key of ``supported``, its shape a list of non-negative ints,
    its ``data_offsets`` inside the file with ``end - begin == numel * itemsize``, and no two entries' data
    overlap (so reading every entry materialises at most the file's size). ``__metadata__``, when present,
    must be an object of strings.

    Args:
        f: the file, opened in binary mode (read from offset 0).
        size: its length in bytes.
        origin: how errors name the file (e.g. ``"'model.safetensors'"``).
        supported: the dtype names the caller reads (``ITEMSIZE`` gives their sizes).

    Returns:
        ``(header, data_start)``: the JSON header (``__metadata__`` included) and the file offset of the data.

    Raises:
        RecordError: truncated file, header length beyond the file, invalid or too deeply nested JSON, malformed
            entries, overlapping data, a dtype not in ``supported`` (named, with the supported list).
    """
    f.seek(0)
    head = f.read(8)
    if len(head) < 8:
        raise RecordError(f"{origin}: too short for a safetensors file ({size} bytes).")
    (n,) = struct.unpack("<Q", head)
    if n > size - 8 or n > MAX_HEADER_BYTES:
        raise RecordError(
            f"{origin}: the safetensors header claims {n} bytes but the file has {size}; not a safetensors file "
            "or truncated."
        )
    raw = f.read(n)
    try:
        header = json.loads(raw)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise RecordError(
            f"{origin}: the safetensors header is not valid JSON ({type(exc).__name__}: {str(exc)[:200]})."
        ) from None
    if not isinstance(header, dict):
        raise RecordError(f"{origin}: the safetensors header is not a JSON object.")
    data_start = 8 + n
    meta = header.get("__metadata__")
    if meta is not None and not (isinstance(meta, dict) and all(isinstance(v, str) for v in meta.values())):
        raise RecordError(f"{origin}: the safetensors header's __metadata__ is not an object of strings.")
    spans: list[tuple[int, int, str]] = []
    for key, entry in header.items():
        if key == "__metadata__":
            continue
        name = short_repr(key)  # names come from the file: quoted, bounded
        if not isinstance(entry, dict):
            raise RecordError(f"{origin}: header entry {name} is not an object.")
        dtype = entry.get("dtype")
        if not isinstance(dtype, str) or dtype not in supported or dtype not in ITEMSIZE:
            raise RecordError(
                f"{origin}: tensor {name} has dtype {short_repr(dtype)}, which this reader does not support "
                f"(supported: {', '.join(k for k in supported if k in ITEMSIZE)})."
            )
        shape = entry.get("shape")
        offs = entry.get("data_offsets")
        if (not isinstance(shape, list) or any(isinstance(s, bool) or not isinstance(s, int) or s < 0 for s in shape)
                or not isinstance(offs, list) or len(offs) != 2
                or any(isinstance(o, bool) or not isinstance(o, int) or o < 0 for o in offs)):
            raise RecordError(f"{origin}: header entry {name} has a malformed shape or data_offsets.")
        numel = 1
        for s in shape:
            numel *= s
        begin, end = offs
        if end < begin or end - begin != numel * ITEMSIZE[dtype] or data_start + end > size:
            raise RecordError(
                f"{origin}: tensor {name} of shape {short_repr(shape)} ({dtype}) has data_offsets "
                f"{short_repr(offs)}, which do not match its size or run past the end of the file ({size} bytes)."
            )
        if end > begin:  # (empty tensors take no bytes and may sit anywhere)
            spans.append((begin, end, name))
    spans.sort(key=lambda s: (s[0], s[1]))
    reach, a = 0, ""
    for begin_b, end_b, b in spans:
        if begin_b < reach:
            raise RecordError(
                f"{origin}: the data of tensors {a} and {b} overlap (data_offsets); a safetensors file stores each "
                "tensor's bytes once, and overlapping entries would make a small file load as many copies of the "
                "same data. The file is corrupted or was crafted."
            )
        if end_b > reach:
            reach, a = end_b, b
    return header, data_start


def read_into(f: Any, view: memoryview) -> int:
    """Fill ``view`` from ``f``'s current position; returns the bytes read (fewer only at the end of the file).

    One ``readinto`` may return less than asked (Linux caps a read at 0x7ffff000 bytes, about 2 GiB), so this
    loops until ``view`` is full or the file ends.
    """
    got, n = 0, len(view)
    while got < n:
        k = f.readinto(view[got:])
        if not k:
            break
        got += k
    return got
