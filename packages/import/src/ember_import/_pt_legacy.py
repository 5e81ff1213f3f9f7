"""Reader of the legacy (non-zip) format: ``torch.save(obj, f, _use_new_zipfile_serialization=False)``.

Layout (source: ``torch/serialization.py`` ``_legacy_save`` / ``_legacy_load``), five things in a row::

    pickle  MAGIC_NUMBER (0x1950A86A20F9469CFC6C)
    pickle  PROTOCOL_VERSION (1001)
    pickle  sys_info {"protocol_version", "little_endian", "type_sizes"}
    pickle  the object; storages appear as persistent ids
            ("storage", torch.<X>Storage, root_key, location, numel, view_metadata)
    pickle  the sorted list of storage keys
    then, for each key in that order: int64 element count (little-endian), then the raw elements

Every pickle goes through :class:`SafeUnpickler`. Declared storage sizes must equal the counts in the file and
fit in what remains of it before anything is read.
"""

from __future__ import annotations

import re
import struct
from typing import Any, BinaryIO

from ._errors import ModelImportError
from ._limits import Budget, summary
from ._storage import Storage
from ._torch_types import StorageType
from ._unpickler import SafeUnpickler, safe_load

__all__ = ["read_legacy", "MAGIC_NUMBER", "PROTOCOL_VERSION"]

MAGIC_NUMBER = 0x1950A86A20F9469CFC6C
PROTOCOL_VERSION = 1001
_KEY = re.compile(r"^[A-Za-z0-9_.\-]{1,128}$")


def read_legacy(f: BinaryIO, *, origin: str, file_size: int, max_tensor_bytes: int,
                budget: Budget | None = None) -> tuple[Any, list[Storage], bool]:
    """Unpickle a legacy-format file. Returns ``(root, storages, big_endian)``; storages are located, not read.

    Raises:
        ModelImportError: wrong magic number or protocol, a refused global, a pickled ``nn.Module``, storage
            records that do not match their declarations or run past the end of the file, tensors beyond
            ``budget``.
    """
    budget = budget if budget is not None else Budget(max_tensor_bytes, origin)
    f.seek(0)

    def plain(what: str) -> Any:
        return safe_load(SafeUnpickler(f, origin=origin, max_tensor_bytes=max_tensor_bytes), origin, what)

    magic = plain("the magic number")
    if magic != MAGIC_NUMBER:
        raise ModelImportError(
            f"{origin}: starts with a pickle but not PyTorch's magic number (found {summary(magic, 60)}); not "
            f"a .pt file."
        )
    proto = plain("the protocol version")
    if proto != PROTOCOL_VERSION:
        raise ModelImportError(f"{origin}: legacy protocol version {summary(proto, 40)}, expected {PROTOCOL_VERSION}.")
    sys_info = plain("the system info")
    big_endian = isinstance(sys_info, dict) and sys_info.get("little_endian", True) is False

    roots: dict[str, Storage] = {}
    views: dict[str, Storage] = {}

    def persistent_load(pid: Any) -> Storage:
        if not isinstance(pid, tuple) or not pid:
            raise ModelImportError(f"{origin}: unexpected persistent id {summary(pid, 200)}.")
        typename = pid[0].decode("ascii", "replace") if isinstance(pid[0], bytes) else pid[0]
        if typename == "module":
            raise ModelImportError(
                f"{origin}: the file pickles a whole nn.Module (class {summary(pid[1], 80)}), which needs its "
                f"code to load. "
                "Save `model.state_dict()` instead."
            )
        if typename != "storage" or len(pid) != 6:
            raise ModelImportError(f"{origin}: unexpected persistent id {summary(pid, 200)}.")
        _, stype, key, _location, numel, view = pid
        if isinstance(key, bytes):
            key = key.decode("ascii", "replace")
        if not isinstance(stype, StorageType):
            raise ModelImportError(f"{origin}: storage {summary(key, 80)} has type {summary(stype, 80)}, "
                                   f"expected a torch storage.")
        if stype.unsupported:
            raise ModelImportError(
                f"{origin}: storage {summary(key, 80)} holds {stype.unsupported} elements, which Ember does "
                f"not support."
            )
        if not isinstance(key, str) or not _KEY.match(key):
            raise ModelImportError(f"{origin}: a storage key is {summary(key, 80)}, expected a short name.")
        if isinstance(numel, bool) or not isinstance(numel, int) or numel < 0:
            raise ModelImportError(f"{origin}: storage '{key}' declares {summary(numel, 40)} elements, "
                                   f"expected an int >= 0.")
        itemsize = stype.dtype.itemsize if stype.dtype is not None else 1
        root = roots.get(key)
        if root is None:
            root = roots[key] = Storage(key, numel * itemsize, stype.dtype, f"storage {key}")
        if view is None:
            return root
        if not (isinstance(view, tuple) and len(view) == 3):
            raise ModelImportError(f"{origin}: storage '{key}' has malformed view metadata {summary(view, 80)}.")
        view_key, offset, size = view
        if isinstance(view_key, bytes):
            view_key = view_key.decode("ascii", "replace")
        if not isinstance(view_key, str):  # (and never hash an attacker's tuple: exponential for a DAG)
            raise ModelImportError(f"{origin}: storage '{key}' has a view key {summary(view_key, 40)}, "
                                   f"expected a string.")
        if view_key in views:
            return views[view_key]
        if any(isinstance(v, bool) or not isinstance(v, int) or v < 0 for v in (offset, size)) or \
                (offset + size) * itemsize > root.nbytes:
            raise ModelImportError(
                f"{origin}: storage view {summary(view_key, 40)} (offset {summary(offset, 20)}, size "
                f"{summary(size, 20)}) lies outside its "
                f"storage '{key}' of {root.nbytes // itemsize} elements; corrupted or malicious file."
            )
        child = Storage(str(view_key), size * itemsize, stype.dtype, f"storage {key} view {view_key}")
        child.set(parent=root, parent_offset=offset * itemsize)
        views[str(view_key)] = child
        return child

    unpickler = SafeUnpickler(f, origin=origin, persistent_load=persistent_load, max_tensor_bytes=max_tensor_bytes,
                              budget=budget)
    root_obj = safe_load(unpickler, origin, "the pickled object")
    keys = plain("the storage key list")
    if not isinstance(keys, list) or any(not isinstance(k, (str, bytes)) for k in keys):
        raise ModelImportError(f"{origin}: the storage key list is malformed ({type(keys).__name__}).")
    offset = f.tell()
    for k in keys:
        k = k.decode("ascii", "replace") if isinstance(k, bytes) else k
        st = roots.get(k)
        if st is None:
            raise ModelImportError(f"{origin}: the file stores storage {summary(k, 80)}, which the pickle "
                                   f"never declared.")
        if offset + 8 > file_size:
            raise ModelImportError(f"{origin}: the file ends before storage '{k}' (truncated).")
        f.seek(offset)
        (count,) = struct.unpack("<q", f.read(8))
        if count < 0 or count * _itemsize(st) != st.nbytes:
            raise ModelImportError(
                f"{origin}: storage '{k}' declares {st.nbytes} bytes in the pickle but {count} elements in the file; "
                "corrupted or malicious file."
            )
        start = offset + 8
        if start + st.nbytes > file_size:
            raise ModelImportError(
                f"{origin}: storage '{k}' ({st.nbytes} bytes at offset {start}) runs past the end of the file "
                f"({file_size} bytes); the file is truncated or its sizes are forged."
            )
        st.set(file_offset=start)
        offset = start + st.nbytes
    missing = [k for k, s in roots.items() if s.file_offset is None]
    if missing:
        raise ModelImportError(f"{origin}: the pickle uses storages {missing[:5]} that the file does not contain.")
    return root_obj, list(roots.values()) + list(views.values()), big_endian


def _itemsize(st: Storage) -> int:
    return st.dtype.itemsize if st.dtype is not None else 1
