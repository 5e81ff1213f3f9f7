"""Reader of the zip format written by ``torch.save`` (PyTorch >= 1.6, the default).

Layout (source: ``torch/serialization.py`` ``_save`` and ``caffe2/serialize/inline_container.cc``)::

    <prefix>/data.pkl            the pickled object; storages appear as persistent ids
                                 ("storage", torch.<X>Storage, key, location, numel)
    <prefix>/data/<key>          each storage's raw bytes, stored uncompressed, 64-byte aligned
    <prefix>/byteorder           "little" or "big" (absent in old files: little)
    <prefix>/version, .format_version, .storage_alignment, .data/serialization_id

``<prefix>`` is any directory name (``archive`` by default, the file's stem in older versions). The zip is
only *read*: entry names are checked (no ``..``, no absolute or drive paths, one prefix) but never used as
file-system paths. Storage sizes declared by the pickle must equal their entries' sizes before any byte is
read, and stored entries are read in place (``mmap`` or one ``readinto`` per storage).
"""

from __future__ import annotations

import re
import struct
import zipfile
from pathlib import PurePosixPath
from typing import Any, BinaryIO

from ._errors import ModelImportError
from ._limits import Budget, summary
from ._storage import Storage
from ._torch_types import StorageType
from ._unpickler import SafeUnpickler, safe_load

__all__ = ["read_zip"]

_KEY = re.compile(r"^[A-Za-z0-9_.\-]{1,128}$")
_LOCAL_HEADER = struct.Struct("<4s22xHH")  # signature, (skipped fields), name length, extra length


def check_member_name(name: str, origin: str) -> None:
    """Refuse a zip entry name that could escape a directory if it were ever extracted.

    Raises:
        ModelImportError: ``..`` components, an absolute path, a drive letter, backslashes or NUL.
    """
    parts = PurePosixPath(name).parts
    if (not name or name.startswith(("/", "\\")) or "\\" in name or "\x00" in name or ".." in parts
            or re.match(r"^[A-Za-z]:", name)):
        raise ModelImportError(
            f"{origin}: the zip archive has an entry named {summary(name)} (absolute, with '..' or a drive); a file "
            "written by torch.save never does. Refusing the file."
        )


def _prefix(infos: list[zipfile.ZipInfo], origin: str) -> str:
    tops = {i.filename.split("/", 1)[0] for i in infos}
    if len(tops) != 1:
        raise ModelImportError(
            f"{origin}: the zip archive has entries under several top-level names ({', '.join(sorted(tops)[:5])}); "
            "a torch.save archive has exactly one directory. Is it a PyTorch file?"
        )
    return tops.pop()


def _data_offset(f: BinaryIO, info: zipfile.ZipInfo, file_size: int, origin: str) -> int:
    f.seek(info.header_offset)
    head = f.read(_LOCAL_HEADER.size)
    if len(head) != _LOCAL_HEADER.size:
        raise ModelImportError(f"{origin}: the zip entry {summary(info.filename)} is truncated.")
    sig, name_len, extra_len = _LOCAL_HEADER.unpack(head)
    if sig != b"PK\x03\x04":
        raise ModelImportError(f"{origin}: the zip entry {summary(info.filename)} has a corrupted local header.")
    local_name = f.read(name_len)
    if local_name != info.orig_filename.encode("utf-8" if info.flag_bits & 0x800 else "cp437", "replace"):
        raise ModelImportError(
            f"{origin}: the zip entry {summary(info.filename)} points at the local header of {summary(local_name)}; "
            "the archive's directory is forged (entries sharing one record would read the same bytes many times)."
        )
    offset = info.header_offset + _LOCAL_HEADER.size + name_len + extra_len
    if offset + info.compress_size > file_size:
        raise ModelImportError(
            f"{origin}: the zip entry {summary(info.filename)} ({info.compress_size} bytes at offset "
            f"{offset}) extends past "
            f"the end of the file ({file_size} bytes); the file is truncated."
        )
    return offset


def read_zip(
    f: BinaryIO, *, origin: str, file_size: int, max_tensor_bytes: int, budget: Budget | None = None
) -> tuple[Any, list[Storage], bool]:
    """Unpickle a torch.save zip archive. Returns ``(root, storages, big_endian)``; storages are not read yet.

    Raises:
        ModelImportError: not a valid zip, unsafe or duplicate entry names, a TorchScript archive, a missing or
            oversized ``data.pkl``, storage declarations that do not match the archive, a refused global, tensors
            or decompressed storages beyond ``budget``.
    """
    budget = budget if budget is not None else Budget(max_tensor_bytes, origin)
    try:
        zf = zipfile.ZipFile(f)
        infos = zf.infolist()
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        raise ModelImportError(
            f"{origin}: not a valid zip archive ({exc}); the file is truncated or corrupted."
        ) from None
    if not infos:
        raise ModelImportError(f"{origin}: the zip archive is empty; not a torch.save file.")
    for info in infos:
        check_member_name(info.filename, origin)
    prefix = _prefix(infos, origin)
    by_name = {i.filename: i for i in infos}
    if len(by_name) != len(infos):
        seen: set[str] = set()
        dup = next(i.filename for i in infos if i.filename in seen or seen.add(i.filename))  # type: ignore[func-returns-value]
        raise ModelImportError(
            f"{origin}: the zip archive holds the entry {summary(dup)} more than once; readers disagree on which copy "
            "counts (torch reads one, Python's zipfile another), so Ember refuses the file. Re-save it with "
            "torch.save."
        )
    for info in infos:
        if info.compress_type == zipfile.ZIP_STORED and info.compress_size != info.file_size:
            raise ModelImportError(
                f"{origin}: the stored (uncompressed) zip entry {summary(info.filename)} declares "
                f"{info.file_size} bytes "
                f"but occupies {info.compress_size}; the file is corrupted or malicious."
            )
    if f"{prefix}/constants.pkl" in by_name or any(n.startswith(f"{prefix}/code/") for n in by_name):
        raise ModelImportError(
            f"{origin}: this is a TorchScript archive (torch.jit.save), which holds code. Load it in PyTorch and "
            "save `model.state_dict()` with torch.save, then import that."
        )
    pkl = by_name.get(f"{prefix}/data.pkl")
    if pkl is None:
        raise ModelImportError(f"{origin}: the zip archive has no '{prefix}/data.pkl'; not a torch.save file.")
    limit = max(64 * file_size, 1 << 26)  # a compressed pickle may expand, but not absurdly
    if pkl.file_size > limit:
        raise ModelImportError(
            f"{origin}: '{pkl.filename}' declares {pkl.file_size} bytes (file: {file_size}); refusing to expand it."
        )
    order_info = by_name.get(f"{prefix}/byteorder")
    if order_info is not None and order_info.file_size > 16:
        raise ModelImportError(
            f"{origin}: '{order_info.filename}' declares {order_info.file_size} bytes, expected 'little' or 'big'."
        )
    try:
        data = zf.read(pkl)
        order = zf.read(order_info) if order_info is not None else b"little"
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, NotImplementedError, RuntimeError) as exc:
        raise ModelImportError(f"{origin}: cannot read the archive's pickle ({exc}); the file is corrupted.") from None
    if order not in (b"little", b"big"):
        raise ModelImportError(f"{origin}: the byteorder record is {order[:16]!r}, expected 'little' or 'big'.")

    storages: dict[str, Storage] = {}

    def persistent_load(pid: Any) -> Storage:
        if not isinstance(pid, tuple) or len(pid) != 5:
            raise ModelImportError(
                f"{origin}: unexpected persistent id {summary(pid, 200)} (expected a storage reference)."
            )
        typename, stype, key, _location, numel = pid
        if isinstance(typename, bytes):
            typename = typename.decode("ascii", "replace")
        if typename != "storage" or not isinstance(stype, StorageType):
            raise ModelImportError(
                f"{origin}: unexpected persistent id {summary(pid, 200)} (expected a storage reference)."
            )
        if isinstance(key, bytes):
            key = key.decode("ascii", "replace")
        if not isinstance(key, str) or not _KEY.match(key) or ".." in key:
            raise ModelImportError(f"{origin}: a storage key is {summary(key)}, expected a short name such as '0'.")
        if stype.unsupported:
            raise ModelImportError(
                f"{origin}: storage '{key}' holds {stype.unsupported} elements, which Ember does not support; "
                "convert the tensor in PyTorch before saving (e.g. t.float())."
            )
        if isinstance(numel, bool) or not isinstance(numel, int) or numel < 0:
            raise ModelImportError(f"{origin}: storage '{key}' declares {summary(numel)} elements, expected "
                                   f"an int >= 0.")
        if key in storages:
            return storages[key]
        name = f"{prefix}/data/{key}"
        info = by_name.get(name)
        if info is None:
            raise ModelImportError(f"{origin}: the pickle refers to storage '{key}' but the archive has no '{name}'.")
        itemsize = stype.dtype.itemsize if stype.dtype is not None else 1
        nbytes = numel * itemsize
        if info.file_size != nbytes:
            raise ModelImportError(
                f"{origin}: storage '{key}' declares {numel} elements ({nbytes} bytes) but '{name}' holds "
                f"{info.file_size} bytes; the file is corrupted or malicious."
            )
        st = Storage(key, nbytes, stype.dtype, name)
        if info.compress_type == zipfile.ZIP_STORED:
            if info.compress_size != nbytes:
                raise ModelImportError(
                    f"{origin}: '{name}' is stored with {info.compress_size} bytes, expected {nbytes}."
                )
            st.set(file_offset=_data_offset(f, info, file_size, origin))
        else:  # torch never compresses; other zip tools might. Read (and bound) it now.
            if nbytes > max_tensor_bytes:
                raise ModelImportError(
                    f"{origin}: compressed entry '{name}' declares {nbytes} bytes, above the {max_tensor_bytes}-byte "
                    "limit."
                )
            budget.take(nbytes, f"decompressing '{name}'")
            import numpy as np

            try:
                st.set(array=np.frombuffer(bytearray(zf.read(info)), dtype=np.uint8))
            except (zipfile.BadZipFile, OSError, ValueError, EOFError, NotImplementedError, RuntimeError) as exc:
                raise ModelImportError(f"{origin}: cannot read '{name}' ({exc}); the file is corrupted.") from None
        storages[key] = st
        return st

    import io

    unpickler = SafeUnpickler(io.BytesIO(data), origin=origin, persistent_load=persistent_load,
                              max_tensor_bytes=max_tensor_bytes, budget=budget)
    root = safe_load(unpickler, origin, f"'{pkl.filename}'")
    _check_disjoint(storages.values(), origin)
    return root, list(storages.values()), order == b"big"


def _check_disjoint(storages: Any, origin: str) -> None:
    """Refuse stored storages whose bytes overlap in the file: each would be read (and count) separately, so a
    small archive whose directory points many entries at one region reads as many copies of it."""
    spans = sorted((s.file_offset, s.file_offset + s.nbytes, s.name) for s in storages
                   if s.file_offset is not None and s.nbytes)
    for (_, end_a, a), (begin_b, _, b) in zip(spans, spans[1:]):
        if begin_b < end_a:
            raise ModelImportError(
                f"{origin}: the zip entries {summary(a)} and {summary(b)} share bytes in the file; a torch.save "
                "archive stores each storage once. The file is corrupted or malicious."
            )
