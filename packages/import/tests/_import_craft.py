"""Hand-written pickles and archives for the tests: torch's layout, byte by byte, without torch."""

from __future__ import annotations

import io
import pickle
import struct
import zipfile
from pathlib import Path

MARK, TUPLE, REDUCE, BINPERSID, STOP = b"(", b"t", b"R", b"Q", b"."
EMPTY_DICT, EMPTY_TUPLE, SETITEM, NEWFALSE = b"}", b")", b"s", b"\x89"
PROTO2 = b"\x80\x02"


def glob(module: str, name: str) -> bytes:
    """GLOBAL opcode (protocol 0-3 form)."""
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n"


def stack_glob(module: str, name: str) -> bytes:
    """STACK_GLOBAL (protocol 4 form): two SHORT_BINUNICODE strings then \\x93."""
    return s8(module) + s8(name) + b"\x93"


def s8(text: str) -> bytes:
    b = text.encode()
    return b"\x8c" + bytes([len(b)]) + b


def st(text: str) -> bytes:
    b = text.encode()
    return b"X" + struct.pack("<I", len(b)) + b


def num(n: int) -> bytes:
    if -(2**31) <= n < 2**31:
        return b"J" + struct.pack("<i", n)
    enc = pickle.encode_long(n)
    return b"\x8a" + bytes([len(enc)]) + enc


def tup(items: list[bytes] | tuple[bytes, ...]) -> bytes:
    return MARK + b"".join(items) + TUPLE


def storage_ref(
    key: str, numel: int, storage: tuple[str, str] = ("torch", "FloatStorage"), legacy: bool = False
) -> bytes:
    items = [st("storage"), glob(*storage), st(key), st("cpu"), num(numel)]
    if legacy:
        items.append(b"N")
    return tup(items) + BINPERSID


def tensor(key: str, numel: int, offset: int, size: tuple[int, ...], stride: tuple[int, ...],
           storage: tuple[str, str] = ("torch", "FloatStorage"), legacy: bool = False) -> bytes:
    """``_rebuild_tensor_v2(storage, offset, size, stride, False, OrderedDict())``."""
    args = [
        storage_ref(key, numel, storage, legacy),
        num(offset),
        tup([num(x) for x in size]),
        tup([num(x) for x in stride]),
        NEWFALSE,
        glob("collections", "OrderedDict") + EMPTY_TUPLE + REDUCE,
    ]
    return glob("torch._utils", "_rebuild_tensor_v2") + tup(args) + REDUCE


def state_dict(entries: dict[str, bytes]) -> bytes:
    """A protocol-2 pickle of a dict ``{name: <pickled value bytes>}``."""
    body = b"".join(st(k) + v + SETITEM for k, v in entries.items())
    return PROTO2 + EMPTY_DICT + body + STOP


def write_zip(path: Path, pkl: bytes, storages: dict[str, bytes], prefix: str = "archive",
              extra: dict[str, bytes] | None = None, byteorder: bytes | None = b"little") -> Path:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as z:
        z.writestr(f"{prefix}/data.pkl", pkl)
        if byteorder is not None:
            z.writestr(f"{prefix}/byteorder", byteorder)
        for k, data in storages.items():
            z.writestr(f"{prefix}/data/{k}", data)
        for name, data in (extra or {}).items():
            z.writestr(name, data)
    return path


def write_legacy(path: Path, pkl: bytes, storages: dict[str, tuple[int, bytes]]) -> Path:
    """Legacy layout: magic, protocol, sys_info, the object pickle, the key list, then (count, bytes) records."""
    buf = io.BytesIO()
    pickle.dump(0x1950A86A20F9469CFC6C, buf, protocol=2)
    pickle.dump(1001, buf, protocol=2)
    pickle.dump({"protocol_version": 1001, "little_endian": True, "type_sizes": {"short": 2, "int": 4, "long": 4}},
                buf, protocol=2)
    buf.write(pkl)
    pickle.dump(sorted(storages), buf, protocol=2)
    for k in sorted(storages):
        count, data = storages[k]
        buf.write(struct.pack("<q", count))
        buf.write(data)
    path.write_bytes(buf.getvalue())
    return path
