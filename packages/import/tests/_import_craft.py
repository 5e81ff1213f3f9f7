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


# --- the tar format of PyTorch < 0.4 (torch/serialization.py ``legacy_load``; the old ``_save``) ---

SYS_INFO = {"protocol_version": 1000, "little_endian": True, "type_sizes": {"short": 2, "int": 4, "long": 8}}


def _p2(body: bytes) -> bytes:
    return PROTO2 + body + STOP


def tar_storages(storages: list[tuple[int, str, int, bytes]], views: list[tuple[int, int, int, int]] = (),
                 order: str = "<") -> bytes:
    """The ``storages`` member: the count; per ``(key, "FloatStorage", numel, raw bytes)`` a pickle
    ``(key, "cpu", torch.FloatStorage)``, int64 numel, the bytes; then the list of ``(view, root, offset, numel)``."""
    out = [_p2(num(len(storages)))]
    for key, stype, numel, raw in storages:
        out.append(_p2(tup([num(key), st("cpu"), glob("torch", stype)])))
        out.append(struct.pack(order + "q", numel) + raw)
    out.append(_p2(b"]" + (MARK + b"".join(tup([num(v) for v in item]) for item in views) + b"e" if views else b"")))
    return b"".join(out)


def tar_tensors(tensors: list[tuple[int, int, tuple[int, ...], tuple[int, ...], int, str]], order: str = "<") -> bytes:
    """The ``tensors`` member: the count; per ``(key, storage_key, size, stride, offset, "FloatTensor")`` a pickle
    ``(key, storage_key, torch.FloatTensor)``, int32 ndim, 4 padding bytes, sizes, strides, offset (int64)."""
    out = [_p2(num(len(tensors)))]
    for key, skey, size, stride, offset, ttype in tensors:
        out.append(_p2(tup([num(key), num(skey), glob("torch", ttype)])))
        n = len(size)
        out.append(struct.pack(f"{order}i4x{n}q{n}qq", n, *size, *stride, offset))
    return b"".join(out)


def tar_object(entries: dict[str, int | bytes], ordered: bool = True) -> bytes:
    """The ``pickle`` member: a protocol-2 ``OrderedDict`` (or dict) ``{name: tensor}``; an int value is the
    persistent id ``str(key)`` of a tensor, bytes are pickled as they are."""
    head = glob("collections", "OrderedDict") + EMPTY_TUPLE + REDUCE if ordered else EMPTY_DICT
    body = b"".join(st(k) + (st(str(v)) + BINPERSID if isinstance(v, int) else v) + SETITEM
                    for k, v in entries.items())
    return _p2(head + body)


def write_tar(path: Path | io.BytesIO, members: list[tuple[str, bytes]], *, kinds: dict[str, bytes] | None = None,
              sizes: dict[str, int] | None = None) -> Path | io.BytesIO:
    """A PAX tar archive of ``members`` (name, bytes) in order, as torch < 0.4 wrote it with ``tarfile``;
    ``kinds`` forces a member's type (``tarfile.SYMTYPE``...), ``sizes`` forges its declared size."""
    import tarfile

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:", format=tarfile.PAX_FORMAT) as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mtime = 1500000000
            kind = (kinds or {}).get(name)
            if kind is not None:
                info.type = kind
                info.linkname = "/etc/passwd" if kind in (tarfile.SYMTYPE, tarfile.LNKTYPE) else ""
                if kind != tarfile.REGTYPE:
                    info.size = 0
                tar.addfile(info, io.BytesIO(data) if info.size else None)
                continue
            tar.addfile(info, io.BytesIO(data))
    raw = buf.getvalue()
    for name, forged in (sizes or {}).items():  # rewrite the size field (octal, 12 bytes at 124) and checksum
        at = raw.find(name.encode() + b"\0")
        header = bytearray(raw[at : at + 512])
        header[124:136] = b"%011o\0" % forged
        header[148:156] = b" " * 8
        header[148:156] = b"%06o\0 " % sum(header)
        raw = raw[:at] + bytes(header) + raw[at + 512 :]
    if isinstance(path, io.BytesIO):
        path.write(raw)
    else:
        path.write_bytes(raw)
    return path


def tar_checkpoint(arrays: dict[str, object], *, order: str = "<", sys_info: dict[str, object] | None = None,
                   share: bool = True) -> list[tuple[str, bytes]]:
    """The four members of a PyTorch < 0.4 ``torch.save(state_dict)`` of numpy ``arrays`` (float32/64,
    int64/32/16/8, uint8 and float16), one storage per array (keys 1000, 1001, ...), tensors keyed 2000, 2001...
    (``2**40 + i`` beyond 1000 arrays),
    C-contiguous. With ``share``, a name ending in ``".T"`` is the transpose of the array before it (same storage)."""
    import numpy as np

    stypes = {"float32": ("FloatStorage", "FloatTensor"), "float64": ("DoubleStorage", "DoubleTensor"),
              "float16": ("HalfStorage", "HalfTensor"), "int64": ("LongStorage", "LongTensor"),
              "int32": ("IntStorage", "IntTensor"), "int16": ("ShortStorage", "ShortTensor"),
              "int8": ("CharStorage", "CharTensor"), "uint8": ("ByteStorage", "ByteTensor")}
    storages: list[tuple[int, str, int, bytes]] = []
    tensors: list[tuple[int, int, tuple[int, ...], tuple[int, ...], int, str]] = []
    entries: dict[str, int | bytes] = {}
    last: tuple[int, tuple[int, ...], tuple[int, ...], str] | None = None
    for i, (name, value) in enumerate(arrays.items()):
        a = np.asarray(value)
        stype, ttype = stypes[a.dtype.name]
        tkey = (2000 if len(arrays) <= 1000 else 1 << 40) + i  # (torch shares one key space for both)
        if share and name.endswith(".T") and last is not None:
            skey, size, stride, ttype = last
            tensors.append((tkey, skey, size[::-1], stride[::-1], 0, ttype))
        else:
            skey = 1000 + i
            c = a.copy(order="C")  # (ascontiguousarray would make a scalar 1-d)
            raw = c.astype(a.dtype.newbyteorder(">" if order == ">" else "<")).tobytes()
            storages.append((skey, stype, a.size, raw))
            stride = tuple(int(np.prod(a.shape[d + 1 :], dtype=np.int64)) for d in range(a.ndim))
            tensors.append((tkey, skey, tuple(a.shape), stride, 0, ttype))
            last = (skey, tuple(a.shape), stride, ttype)
        entries[name] = tkey
    info = dict(SYS_INFO, little_endian=order == "<") if sys_info is None else sys_info
    return [("sys_info", pickle.dumps(info, protocol=2)), ("pickle", tar_object(entries)),
            ("tensors", tar_tensors(tensors, order)), ("storages", tar_storages(storages, order=order))]


def burn_tar(arrays: dict[str, object], *, persistent: bool = False, numel_delta: int = 0) -> list[tuple[str, bytes]]:
    """The layout of Burn's hand-made tar fixtures (``burn-store``'s ``tar_*.tar``; torch does not read it): no
    ``tensors`` member, a ``storages`` member without the view list (keys ``"0"``, ``"1"``...), and a ``pickle``
    of ``_rebuild_tensor_v2(("storage", torch.FloatStorage, key, "cpu", numel), 0, size, stride, False, {})``
    calls: the storage tuple plain, as Burn writes it, or (``persistent``) a persistent id."""
    import numpy as np

    stypes = {"float32": "FloatStorage", "float64": "DoubleStorage", "int64": "LongStorage", "int32": "IntStorage"}
    storages = [_p2(num(len(arrays)))]
    entries = []
    for i, (name, value) in enumerate(arrays.items()):
        a = np.asarray(value)
        c = a.copy(order="C")
        storages.append(_p2(tup([st(str(i)), st("cpu"), glob("torch", stypes[a.dtype.name])])))
        storages.append(struct.pack("<q", a.size) + c.astype(a.dtype.newbyteorder("<")).tobytes())
        stype = glob("torch", stypes[a.dtype.name])
        ref = tup([st("storage"), stype, st(str(i)), st("cpu"), num(a.size + numel_delta)])
        stride = [int(np.prod(a.shape[d + 1 :], dtype=np.int64)) for d in range(a.ndim)]
        args = [ref + (BINPERSID if persistent else b""), num(0), tup([num(x) for x in a.shape]),
                tup([num(x) for x in stride]), NEWFALSE, glob("collections", "OrderedDict") + EMPTY_TUPLE + REDUCE]
        entries.append(st(name) + glob("torch._utils", "_rebuild_tensor_v2") + tup(args) + REDUCE + SETITEM)
    obj = _p2(glob("collections", "OrderedDict") + EMPTY_TUPLE + REDUCE + b"".join(entries))
    return [("sys_info", pickle.dumps(SYS_INFO, protocol=2)), ("pickle", obj), ("storages", b"".join(storages))]
