"""Hostile model files of about a kilobyte that once hung Ember or made it allocate gigabytes (issue 28).

Each builder returns the file's bytes; torch is not needed. Used by ``test_import_hostile_pt.py`` (each file
loaded in a child process under an address-space limit) and by the fault suite's ``tests/fault/corpus_pt.py``.
"""

from __future__ import annotations

import io
import json
import struct
import tempfile
import warnings
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import _import_craft as craft

POP, BINPUT0, BINGET0, TUPLE1, TUPLE2, BININT1_1 = b"0", b"q\x00", b"h\x00", b"\x85", b"\x86", b"K\x01"


def dag(depth: int) -> bytes:
    """Pickle ops leaving ``t_depth`` on the stack: ``t_0 = (1,)``, ``t_{i+1} = (t_i, t_i)`` (one memo slot):
    ``2**depth`` leaves from ``7 * depth`` bytes; its ``repr``, hash and equality take time ``2**depth``."""
    return BININT1_1 + TUPLE1 + BINPUT0 + (POP + BINGET0 + BINGET0 + TUPLE2 + BINPUT0) * depth


def _zip(pkl: bytes, storages: dict[str, bytes] | None = None, **kw: object) -> bytes:
    buf = io.BytesIO()
    craft.write_zip(buf, pkl, storages or {}, **kw)  # type: ignore[arg-type]
    return buf.getvalue()


def _legacy(pkl: bytes, storages: dict[str, tuple[int, bytes]]) -> bytes:
    with tempfile.TemporaryDirectory() as tmp:
        return craft.write_legacy(Path(tmp) / "f.pt", pkl, storages).read_bytes()


def _call(module: str, name: str, *args: bytes) -> bytes:
    return craft.glob(module, name) + craft.MARK + b"".join(args) + craft.TUPLE + craft.REDUCE


def size_dag(depth: int = 40) -> bytes:
    """``{"x": torch.Size(t_depth)}``: the error message once built ``repr(t_depth)``."""
    return _zip(craft.state_dict({"x": _call("torch", "Size", dag(depth))}))


def device_dag(depth: int = 40) -> bytes:
    return _zip(craft.state_dict({"x": _call("torch", "device", dag(depth))}))


def persistent_id_dag(depth: int = 40, legacy: bool = False) -> bytes:
    pkl = craft.state_dict({"x": dag(depth) + b"Q"})  # BINPERSID of the DAG
    return _legacy(pkl, {}) if legacy else _zip(pkl)


def tensor_size_dag(depth: int = 40) -> bytes:
    """A tensor whose size tuple holds the DAG."""
    args = [craft.storage_ref("0", 1), craft.num(0), craft.MARK + dag(depth) + craft.TUPLE,
            craft.tup([craft.num(1)]), b"\x89", craft.glob("collections", "OrderedDict") + b")" + craft.REDUCE]
    rebuild = craft.glob("torch._utils", "_rebuild_tensor_v2") + craft.tup(args) + craft.REDUCE
    return _zip(craft.state_dict({"x": rebuild}), {"0": b"\x00" * 4})


def dict_key_dag(depth: int = 40) -> bytes:
    """``{t_depth: 1}``: CPython hashes the key inside the unpickler (no callback can stop it)."""
    return _zip(craft.PROTO2 + craft.EMPTY_DICT + dag(depth) + BININT1_1 + craft.SETITEM + craft.STOP)


def shared_dicts(depth: int = 40) -> bytes:
    """``d_0 = {"w": tensor}``, ``d_{i+1} = {"a": d_i, "b": d_i}``: 2**depth dotted keys from one tensor."""
    body = craft.EMPTY_DICT + craft.st("w") + craft.tensor("0", 1, 0, (1,), (1,)) + craft.SETITEM + BINPUT0
    for _ in range(depth):
        pair = craft.st("a") + BINGET0 + craft.SETITEM + craft.st("b") + BINGET0 + craft.SETITEM
        body += POP + craft.EMPTY_DICT + pair + BINPUT0
    return _zip(craft.PROTO2 + body + craft.STOP, {"0": b"\x00" * 4})


def long_keys(levels: int = 150, key_bytes: int = 1 << 20) -> bytes:
    """``levels`` nested dicts each keyed by the same 1 MiB string (memoised): one dotted key of 150 MiB."""
    get = b"j\x01\x00\x00\x00"  # LONG_BINGET 1
    body = craft.EMPTY_DICT + get + b"K\x07" + craft.SETITEM
    for _ in range(levels - 2):
        body = craft.EMPTY_DICT + get + body + craft.SETITEM
    put = craft.st("k" * key_bytes) + b"r\x01\x00\x00\x00"  # LONG_BINPUT 1
    return _zip(craft.PROTO2 + craft.EMPTY_DICT + put + body + craft.SETITEM + craft.STOP)


def int_key(digits: int = 5000) -> bytes:
    """``{10**5000: 1}``: printing the key as a dotted-key part raised a bare ValueError (Python refuses to
    convert ints of more than 4300 digits to text)."""
    import pickle

    return _zip(pickle.dumps({10**digits: 1}, protocol=2))


def stride0_views(count: int = 12, elements: int = 12_500_000) -> bytes:
    """``count`` tensors of ``elements`` float32 (50 MB each by default), every one a stride-0 view of a 4-byte
    storage: 600 MB materialised from a 1 KB file."""
    entries = {f"v{i}": craft.tensor("0", 1, 0, (elements - i,), (0,)) for i in range(count)}
    return _zip(craft.state_dict(entries), {"0": b"\x00\x00\x80\x3f"})


def memo_index(index: int = 2**28) -> bytes:
    """``LONG_BINPUT 2**28``: CPython's unpickler grows its memo array to ``index * 2`` pointers (4 GiB)."""
    return _zip(craft.PROTO2 + craft.EMPTY_DICT + b"r" + struct.pack("<I", index) + craft.STOP)


def frame_legacy(size: int = 2**40) -> bytes:
    """A legacy file whose first pickle declares a 1 TiB protocol-4 frame."""
    return b"\x80\x04\x95" + struct.pack("<Q", size) + b"K\x01."


HALF = ("torch", "HalfStorage")


def f16_shared(keys: int = 400, elements: int = 1 << 20) -> bytes:
    """One 2 MiB float16 storage declared again (same view) under ``keys`` keys: converting each key to float32
    once made 1.6 GB from a 2 MB file. The values are ``arange(elements) % 2048`` as float16."""
    import numpy as np

    data = (np.arange(elements) % 2048).astype("<f2").tobytes()
    entries = {f"k{i}": craft.tensor("0", elements, 0, (elements,), (1,), storage=HALF) for i in range(keys)}
    return _zip(craft.state_dict(entries), {"0": data})


def f16_offset_views(keys: int = 400, elements: int = 1 << 20) -> bytes:
    """Like :func:`f16_shared`, but each key views the storage at its own offset: distinct overlapping views."""
    data = b"\x00" * (2 * elements)
    n = elements - keys
    entries = {f"k{i}": craft.tensor("0", elements, i, (n,), (1,), storage=HALF) for i in range(keys)}
    return _zip(craft.state_dict(entries), {"0": data})


def zip_duplicate() -> bytes:
    """``archive/data/0`` twice, with different bytes: torch and zipfile read different copies."""
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns "Duplicate name"
        with zipfile.ZipFile(buf, "w") as z:
            z.writestr("archive/data.pkl", craft.state_dict({"x": craft.tensor("0", 1, 0, (1,), (1,))}))
            z.writestr("archive/byteorder", b"little")
            z.writestr("archive/data/0", b"\x00\x00\x80\x3f")
            z.writestr("archive/data/0", b"\x00\x00\x00\x40")
    return buf.getvalue()


def zip_size_mismatch() -> bytes:
    """A stored entry whose central-directory size (uncompressed) disagrees with its stored size."""
    raw = bytearray(_zip(craft.state_dict({"x": craft.tensor("0", 1, 0, (1,), (1,))}), {"0": b"\x00\x00\x80\x3f"}))
    name = b"archive/data/0"
    cd = raw.index(b"PK\x01\x02")
    while True:  # find the central-directory record of `name`
        n_len = struct.unpack_from("<H", raw, cd + 28)[0]
        if raw[cd + 46 : cd + 46 + n_len] == name:
            break
        cd = raw.index(b"PK\x01\x02", cd + 4)
    struct.pack_into("<I", raw, cd + 24, 4096)  # uncompressed size
    return bytes(raw)


def zip_bomb(nbytes: int = 280 << 20) -> bytes:
    """A deflated storage of ``nbytes`` zeros (about 1000 times smaller in the file)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as z:
        z.writestr("archive/data.pkl", craft.state_dict({"x": craft.tensor("0", nbytes // 4, 0, (nbytes // 4,), (1,))}))
        z.writestr("archive/byteorder", b"little")
        with z.open("archive/data/0", "w", force_zip64=True) as w:
            chunk = b"\x00" * (1 << 22)
            for _ in range(nbytes // len(chunk)):
                w.write(chunk)
    return buf.getvalue()


def zip_forged_directory(count: int = 4000, nbytes: int = 1 << 18) -> bytes:
    """``count`` central-directory entries ``archive/data/<i>`` all pointing at the one local record of
    ``archive/data/0`` (256 KiB): read one by one, 1 GB from a 0.5 MB file."""
    entries = {f"s{i}": craft.storage_ref(str(i), nbytes // 4) for i in range(count)}
    raw = _zip(craft.state_dict(entries), {"0": b"\x00" * nbytes})
    eocd = raw.rindex(b"PK\x05\x06")
    n_total, cd_size, cd_offset = struct.unpack_from("<HII", raw, eocd + 10)
    cd = raw[cd_offset : cd_offset + cd_size]
    at = cd.index(b"PK\x01\x02")
    records = []
    while at < len(cd):  # split the directory into records
        n_len, e_len, c_len = struct.unpack_from("<HHH", cd, at + 28)
        end = at + 46 + n_len + e_len + c_len
        records.append(cd[at:end])
        at = end
    zero = next(r for r in records if r[46:].startswith(b"archive/data/0"))
    clones = []
    for i in range(1, count):
        name = f"archive/data/{i}".encode()
        clones.append(zero[:28] + struct.pack("<H", len(name)) + zero[30:46] + name)  # no extra, no comment
    new_cd = cd + b"".join(clones)
    tail = struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, n_total + count - 1, n_total + count - 1, len(new_cd),
                       cd_offset, 0)
    return raw[:cd_offset] + new_cd + tail


def zip_byteorder_bomb(nbytes: int = 300 << 20) -> bytes:
    """A deflated ``byteorder`` record of 300 MB (it holds "little" or "big")."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as z:
        z.writestr("archive/data.pkl", craft.state_dict({}))
        with z.open("archive/byteorder", "w", force_zip64=True) as w:
            chunk = b"\x00" * (1 << 22)
            for _ in range(nbytes // len(chunk)):
                w.write(chunk)
    return buf.getvalue()


def zip_traversal() -> bytes:
    return _zip(craft.state_dict({}), {}, extra={"archive/../../evil": b"x"})


def numel_mismatch() -> bytes:
    """The pickle declares 1000 float32 elements; the record holds 8 bytes."""
    return _zip(craft.state_dict({"x": craft.tensor("0", 1000, 0, (2,), (1,))}), {"0": b"\x00" * 8})


def safetensors_overlap(count: int = 2000, nbytes: int = 1 << 20) -> bytes:
    """``count`` BF16 entries all pointing at the same 1 MiB: read one by one, 2 GB from a 1 MB file."""
    entry = {"dtype": "BF16", "shape": [nbytes // 2], "data_offsets": [0, nbytes]}
    header = json.dumps({f"t{i}": entry for i in range(count)}).encode()
    return struct.pack("<Q", len(header)) + header + b"\x00" * nbytes


def safetensors_deep_json(depth: int = 100_000) -> bytes:
    header = b"[" * depth + b"]" * depth
    return struct.pack("<Q", len(header)) + header


def _tar(members: list[tuple[str, bytes]], **kw: object) -> bytes:
    buf = io.BytesIO()
    craft.write_tar(buf, members, **kw)  # type: ignore[arg-type]
    return buf.getvalue()


def _tar_good() -> list[tuple[str, bytes]]:
    import numpy as np

    return craft.tar_checkpoint({"w": np.arange(4, dtype=np.float32)})


def _tar_swap(name: str, data: bytes) -> list[tuple[str, bytes]]:
    return [(n, data if n == name else d) for n, d in _tar_good()]


def tar_link() -> bytes:
    """A PyTorch < 0.4 tar checkpoint with a symlink to /etc/passwd named like a member."""
    import tarfile

    return _tar([("sys_info", b"")] + _tar_good()[1:], kinds={"sys_info": tarfile.SYMTYPE})


def tar_traversal() -> bytes:
    return _tar(_tar_good() + [("../../../tmp/ember-owned", b"x")])


def tar_duplicate() -> bytes:
    """``pickle`` twice: tarfile's lookup would take the second, another reader the first."""
    return _tar(_tar_good() + [("pickle", craft.tar_object({"w": 31337}))])


def tar_size_past_end() -> bytes:
    return _tar(_tar_good(), sizes={"storages": 1 << 30})


def tar_many_members(count: int = 5000) -> bytes:
    return _tar(_tar_good() + [(f"m{i}", b"") for i in range(count)])


def tar_forged_numel() -> bytes:
    return _tar(_tar_swap("storages", craft.tar_storages([(1000, "FloatStorage", 1 << 40, b"\0" * 16)])))


def tar_stride0(count: int = 12, elements: int = 12_500_000) -> bytes:
    """12 stride-0 tensors of 50 MB each over one 16-byte storage: 600 MB materialised from a 10 KB file."""
    tensors = [(2000 + i, 1000, (elements,), (0,), 0, "FloatTensor") for i in range(count)]
    obj = craft.tar_object({f"t{i}": 2000 + i for i in range(count)})
    return _tar([(n, obj if n == "pickle" else craft.tar_tensors(tensors) if n == "tensors" else d)
                 for n, d in _tar_good()])


def tar_pid_dag(depth: int = 40) -> bytes:
    return _tar(_tar_swap("pickle", craft.state_dict({"x": dag(depth) + b"Q"})))


@dataclass(frozen=True)
class Hostile:
    """One hostile file: what to call it, its bytes, how to load it and a word its error must contain."""

    name: str
    filename: str
    build: Callable[[], bytes]
    loader: str = "ember_import:read_pytorch"
    match: str = ""
    fast: bool = True


#: every hostile file; ``loader`` is ``module:function`` called with the path
HOSTILE: tuple[Hostile, ...] = (
    Hostile("size-dag", "size-dag.pt", size_dag, match="shared references"),
    Hostile("device-dag", "device-dag.pt", device_dag, match="shared references"),
    Hostile("persistent-id-dag", "pid-dag.pt", persistent_id_dag, match="shared references"),
    Hostile("persistent-id-dag-legacy", "pid-dag-legacy.pt", lambda: persistent_id_dag(legacy=True),
            match="shared references"),
    Hostile("tensor-size-dag", "tensor-size-dag.pt", tensor_size_dag, match="shared references"),
    Hostile("dict-key-dag", "dict-key-dag.pt", dict_key_dag, match="shared references"),
    Hostile("size-dag-small", "size-dag-small.pt", lambda: size_dag(18), match="torch.Size"),
    Hostile("pid-dag-small", "pid-dag-small.pt", lambda: persistent_id_dag(18), match="persistent id"),
    Hostile("shared-dicts", "shared-dicts.pt", shared_dicts, match="leaves"),
    Hostile("long-keys", "long-keys.pt", long_keys, match="shared-reference bomb", fast=False),
    Hostile("int-key", "int-key.pt", int_key, match="integer of"),
    Hostile("stride0-views", "stride0-views.pt", stride0_views, match="budget"),
    Hostile("memo-index", "memo-index.pt", memo_index, match="memo entry"),
    Hostile("frame-legacy", "frame-legacy.pt", frame_legacy, match="frame"),
    Hostile("f16-offset-views", "f16-offset-views.pt", f16_offset_views, match="budget"),
    Hostile("zip-duplicate", "zip-duplicate.pt", zip_duplicate, match="more than once"),
    Hostile("zip-size-mismatch", "zip-size-mismatch.pt", zip_size_mismatch, match="declares"),
    Hostile("zip-bomb", "zip-bomb.pt", zip_bomb, match="budget", fast=False),
    Hostile("zip-forged-directory", "zip-forged.pt", zip_forged_directory, match="forged"),
    Hostile("zip-byteorder-bomb", "zip-byteorder.pt", zip_byteorder_bomb, match="byteorder", fast=False),
    Hostile("zip-traversal", "zip-traversal.pt", zip_traversal, match="'..'"),
    Hostile("numel-mismatch", "numel-mismatch.pt", numel_mismatch, match="declares"),
    Hostile("tar-link", "tar-link.pt", tar_link, match="a link"),
    Hostile("tar-traversal", "tar-traversal.pt", tar_traversal, match="'..'"),
    Hostile("tar-duplicate", "tar-duplicate.pt", tar_duplicate, match="more than once"),
    Hostile("tar-size-past-end", "tar-size.pt", tar_size_past_end, match="past the end"),
    Hostile("tar-many-members", "tar-many.pt", tar_many_members, match="more than 64"),
    Hostile("tar-forged-numel", "tar-numel.pt", tar_forged_numel, match="declares"),
    Hostile("tar-stride0", "tar-stride0.pt", tar_stride0, match="budget"),
    Hostile("tar-pid-dag", "tar-pid-dag.pt", tar_pid_dag, match="shared references"),
    Hostile("safetensors-overlap", "overlap.safetensors", safetensors_overlap,
            loader="ember_import.safetensors:read_safetensors", match="overlap"),
    Hostile("safetensors-deep-json", "deep.safetensors", safetensors_deep_json,
            loader="ember_import.safetensors:read_safetensors", match="JSON"),
)
