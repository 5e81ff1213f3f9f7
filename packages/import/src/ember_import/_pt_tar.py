"""Reader of the tar format that PyTorch < 0.4 wrote (``torch.save`` before 2018; torch still reads it).

Layout (source: ``torch/serialization.py``, ``_legacy_load`` / ``legacy_load``, and the old ``_save``): a tar
archive (PAX format) of four regular members, each a file of pickles (protocol 2) and raw bytes::

    sys_info   pickle {"protocol_version": 1000, "little_endian", "type_sizes"}   (torch never reads it)
    storages   pickle count, then per storage: pickle (key, location, torch.<X>Storage), int64 element
               count, the raw elements; then pickle [(view_key, root_key, offset, numel), ...]
    tensors    pickle count, then per tensor: pickle (key, storage_key, torch.<X>Tensor), int32 ndim,
               4 padding bytes, ndim int64 sizes, ndim int64 strides, int64 storage offset
    pickle     the object; each tensor or storage is a persistent id, ``str(key)``

Burn's own tar fixtures (built by hand, like Ember's tests) have another layout that torch does not read: no
``tensors`` member and no view list, and a ``pickle`` of ``_rebuild_tensor_v2`` calls on zip-style storage
references ``("storage", torch.<X>Storage, key, location, numel)``. Ember reads it too (Burn does), with the same
checks: each reference must name a stored storage of the same type and size.

Keys are integers (the saving process's ``_cdata`` pointers). Numbers are little-endian (what torch assumes);
a ``sys_info`` that declares a big-endian writer switches both the metadata and the elements to big-endian.

The same guarantees as the zip format (ARCHITECTURE.md, "Trust"): every pickle goes through
:class:`SafeUnpickler` (no code runs); nothing is extracted to disk and member data is never read whole: the
small pickles are read through a window bounded by their member, storages are located (their bytes read later,
or mapped, by :func:`fill_storages`); every tar member is checked first (regular files only: no links,
devices or directories; no absolute or ``..`` names; no duplicates; data inside the file); every declared
size and view is checked against its member and the tensors count against the load's :class:`Budget`.
"""

from __future__ import annotations

import re
import struct
import tarfile
from collections.abc import Callable, Iterator
from typing import Any, BinaryIO

from ._errors import ModelImportError
from ._limits import Budget, summary
from ._storage import Storage
from ._torch_types import STORAGE_TYPES, StorageType
from ._unpickler import SafeUnpickler, TensorType, safe_load
from ._views import PendingTensor, make_view

__all__ = ["read_tar", "is_tar"]

#: the members torch reads (``sys_info`` is optional: torch ignores it)
REQUIRED = ("storages", "pickle")
MAX_MEMBERS = 64
_MAX_SYS_INFO = 1 << 16
_MAX_NDIM = 64
_NAME = re.compile(r"^[A-Za-z0-9_.\-]+(/[A-Za-z0-9_.\-]+)*$")
_DIGITS = re.compile(r"^-?[0-9]{1,40}$")

#: ``torch.<X>Tensor`` classes named by the ``tensors`` member (torch ignores them; so does Ember)
_TENSOR_TYPES: dict[tuple[str, str], TensorType] = {}
for (_module, _storage), _marker in STORAGE_TYPES.items():
    if _storage.endswith("Storage") and _storage != "UntypedStorage":
        _name = _storage[: -len("Storage")] + "Tensor"
        _TENSOR_TYPES[(_module, _name)] = TensorType(f"{_module}.{_name}")
_TENSOR_TYPES[("torch.autograd.variable", "Variable")] = TensorType("torch.autograd.Variable")


def is_tar(head: bytes) -> bool:
    """Whether the first 512 bytes of a file are a ustar/PAX/GNU tar header (magic ``ustar`` at 257)."""
    return len(head) >= 262 and head[257:262] == b"ustar"


class _Window:
    """A read-only file over ``[start, start + size)`` of ``f``: a pickle can never read past its member."""

    __slots__ = ("_f", "_start", "_end", "_pos")

    def __init__(self, f: BinaryIO, start: int, size: int) -> None:
        self._f, self._start, self._end, self._pos = f, start, start + size, start

    def read(self, n: int | None = -1) -> bytes:
        left = self._end - self._pos
        n = left if n is None or n < 0 else min(n, left)
        self._f.seek(self._pos)
        data = self._f.read(n)
        self._pos += len(data)
        return data

    def readinto(self, buf: Any) -> int:
        data = self.read(len(buf))
        buf[: len(data)] = data
        return len(data)

    def readline(self, limit: int = -1) -> bytes:
        left = self._end - self._pos
        self._f.seek(self._pos)
        line = self._f.readline(left if limit < 0 else min(limit, left))
        self._pos += len(line)
        return line

    def seek(self, offset: int, whence: int = 0) -> int:
        base = {0: self._start, 1: self._pos, 2: self._end}[whence]
        self._pos = min(max(base + offset, self._start), self._end)
        return self._pos - self._start

    def tell(self) -> int:
        return self._pos - self._start

    def exact(self, n: int, what: str, origin: str) -> bytes:
        data = self.read(n)
        if len(data) != n:
            raise ModelImportError(f"{origin}: the tar member ends inside {what} (truncated or forged).")
        return data


class _TarUnpickler(SafeUnpickler):
    """The safe unpickler, plus the ``torch.<X>Tensor`` classes the ``tensors`` member names (inert markers)."""

    def __init__(self, file: Any, *, storage_ref: Callable[[tuple[Any, ...]], Storage] | None = None,
                 **kw: Any) -> None:
        self._storage_ref = storage_ref
        super().__init__(file, **kw)
        self._allowed.update(_TENSOR_TYPES)

    def _rebuild_v2(self, storage: Any, *args: Any) -> PendingTensor:
        """Also takes the plain ``("storage", ...)`` tuple of Burn's fixtures in place of a storage."""
        if self._storage_ref is not None and isinstance(storage, tuple) and storage and \
                storage[0] in ("storage", b"storage"):
            storage = self._storage_ref(storage)
        return super()._rebuild_v2(storage, *args)


def _kind(m: tarfile.TarInfo) -> str:
    if m.issym() or m.islnk():
        return "a link"
    if m.ischr() or m.isblk():
        return "a device"
    if m.isdir():
        return "a directory"
    if m.isfifo():
        return "a fifo"
    return "a sparse or special member" if m.sparse is not None or m.isreg() else f"a member of type {m.type!r}"


def _members(f: BinaryIO, origin: str, file_size: int) -> dict[str, tuple[int, int]]:
    """Every member's ``(data offset, size)``, each checked; nothing is extracted."""
    found: dict[str, tuple[int, int]] = {}
    f.seek(0)
    try:
        tar = tarfile.open(fileobj=f, mode="r:")  # type: ignore[call-overload]
        while True:
            m = tar.next()
            if m is None:
                break
            if len(found) >= MAX_MEMBERS:
                raise ModelImportError(
                    f"{origin}: the tar archive holds more than {MAX_MEMBERS} members; a PyTorch < 0.4 checkpoint "
                    "has four (sys_info, pickle, storages, tensors). Refused."
                )
            name = m.name
            parts = name.split("/")
            if not _NAME.match(name) or ".." in parts or len(name) > 255:
                raise ModelImportError(
                    f"{origin}: the tar member {summary(name, 80)} has an absolute, '..' or unusual path; refused "
                    "(nothing is extracted, but such a name is never part of a checkpoint)."
                )
            if m.type not in (tarfile.REGTYPE, tarfile.AREGTYPE) or m.sparse is not None:
                raise ModelImportError(
                    f"{origin}: the tar member '{name}' is {_kind(m)}; a checkpoint holds only regular files. Refused."
                )
            if name in found:
                raise ModelImportError(f"{origin}: the tar member '{name}' appears more than once; refused.")
            if m.size < 0 or m.offset_data < 0 or m.offset_data + m.size > file_size:
                raise ModelImportError(
                    f"{origin}: the tar member '{name}' declares {m.size} bytes at offset {m.offset_data}, past the "
                    f"end of the file ({file_size} bytes); the file is truncated or its sizes are forged."
                )
            found[name] = (m.offset_data, m.size)
    except ModelImportError:
        raise
    except (tarfile.TarError, EOFError, ValueError, OverflowError, UnicodeError, KeyError) as exc:
        raise ModelImportError(
            f"{origin}: a malformed tar archive ({type(exc).__name__}: {str(exc)[:200]}); the file is corrupted or "
            "not a PyTorch < 0.4 checkpoint."
        ) from None
    missing = [n for n in REQUIRED if n not in found]
    if missing:
        raise ModelImportError(
            f"{origin}: a tar archive without the member(s) {missing} that a PyTorch < 0.4 checkpoint holds "
            f"({', '.join(REQUIRED)}); not a PyTorch file, or truncated."
        )
    return found


def _key(value: Any, what: str, origin: str) -> int:
    """A storage or tensor key: an int, or its decimal text (the pickle's persistent ids are ``str(key)``)."""
    if isinstance(value, bytes):
        value = value.decode("ascii", "replace")
    if isinstance(value, str) and _DIGITS.match(value):
        return int(value)
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() <= 128:
        return value
    raise ModelImportError(f"{origin}: {what} is {summary(value, 60)}, expected an integer key.")


def _count(value: Any, what: str, room: int, origin: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= room:
        raise ModelImportError(
            f"{origin}: {what} is {summary(value, 40)}, expected an int from 0 to {room} (what the member can hold)."
        )
    return value


def _storage_ref(pid: tuple[Any, ...], roots: dict[int, Storage], origin: str) -> Storage:
    """A zip-style storage reference ``("storage", torch.<X>Storage, key, location, numel)`` to a storage of the
    ``storages`` member: the layout of Burn's hand-made tar fixtures (a pickle of ``_rebuild_tensor_v2`` calls and
    no ``tensors`` member), which torch itself does not read. Type and size must match the stored storage."""
    if len(pid) not in (5, 6) or (len(pid) == 6 and pid[5] is not None):
        raise ModelImportError(f"{origin}: unexpected persistent id {summary(pid, 120)}.")
    stype, key, numel = pid[1], _key(pid[2], "a storage reference", origin), pid[4]
    root = roots.get(key)
    if root is None:
        raise ModelImportError(f"{origin}: the pickle refers to storage {key}, which the file does not hold.")
    if not isinstance(stype, StorageType) or stype.dtype is None or stype.dtype is not root.dtype or \
            isinstance(numel, bool) or not isinstance(numel, int) or numel * stype.dtype.itemsize != root.nbytes:
        raise ModelImportError(
            f"{origin}: the pickle refers to storage {key} as {summary(stype, 40)} of {summary(numel, 20)} "
            f"elements, but the file stores {root.nbytes} bytes of {root.dtype}; corrupted or malicious file."
        )
    return root


def read_tar(f: BinaryIO, *, origin: str, file_size: int, max_tensor_bytes: int,
             budget: Budget | None = None) -> tuple[Any, list[Storage], bool]:
    """Read a tar-format checkpoint. Returns ``(root, storages, big_endian)``; storages are located, not read.

    Raises:
        ModelImportError: a malformed tar or a refused member (link, device, directory, absolute or ``..``
            name, duplicate, data past the end of the file), a missing member, a refused global, a pickled
            ``nn.Module``, counts, sizes, views or tensors outside their member or storage, an unknown key,
            tensors beyond ``budget``.
    """
    budget = budget if budget is not None else Budget(max_tensor_bytes, origin)
    members = _members(f, origin, file_size)

    def plain(w: _Window, what: str) -> Any:
        return safe_load(_TarUnpickler(w, origin=origin, max_tensor_bytes=max_tensor_bytes, budget=budget),
                         origin, what)

    def records(w: _Window, size: int, what: str, fields: str, least: int) -> Iterator[tuple[Any, ...]]:
        """Each record's header, a tuple of three ``fields``, after the count (a record takes ``least`` bytes)."""
        count = _count(plain(w, f"the {what} count"), f"the {what} count", size // least, origin)
        for _ in range(count):
            head = plain(w, f"a {what} header")
            if not (isinstance(head, tuple) and len(head) == 3):
                raise ModelImportError(f"{origin}: a {what} header is {summary(head, 80)}, expected ({fields}).")
            yield head

    big_endian = False
    if "sys_info" in members:
        start, size = members["sys_info"]
        if size <= _MAX_SYS_INFO:
            info = plain(_Window(f, start, size), "the sys_info member")
            big_endian = isinstance(info, dict) and info.get("little_endian", True) is False
    order = ">" if big_endian else "<"

    # --- storages: located in the file, never read here ---
    roots: dict[int, Storage] = {}
    start, size = members["storages"]
    w = _Window(f, start, size)
    for head in records(w, size, "storage", "key, location, storage type", 9):
        key = _key(head[0], "a storage key", origin)
        stype = head[2]
        if not isinstance(stype, StorageType) or stype.dtype is None:
            what = stype.unsupported if isinstance(stype, StorageType) and stype.unsupported else None
            raise ModelImportError(
                f"{origin}: storage {key} holds {what} elements, which Ember does not support." if what else
                f"{origin}: storage {key} has type {summary(stype, 80)}, expected a typed torch storage."
            )
        if key in roots:
            raise ModelImportError(f"{origin}: storage {key} is stored more than once; corrupted or malicious file.")
        (numel,) = struct.unpack(order + "q", w.exact(8, f"storage {key}'s element count", origin))
        nbytes = numel * stype.dtype.itemsize
        if numel < 0 or w.tell() + nbytes > size:
            raise ModelImportError(
                f"{origin}: storage {key} declares {numel} elements ({nbytes} bytes) but its tar member has "
                f"{size - w.tell()} bytes left; the file is truncated or its sizes are forged."
            )
        st = roots[key] = Storage(str(key), nbytes, stype.dtype, f"storage {key}")
        st.set(file_offset=start + w.tell())
        w.seek(nbytes, 1)
    # (the view list ends the member; Burn's hand-made fixtures leave it out: no views)
    views_raw = plain(w, "the storage view list") if w.tell() < size else []
    if not isinstance(views_raw, list):
        raise ModelImportError(f"{origin}: the storage view list is a {type(views_raw).__name__}, expected a list.")
    objects: dict[int, Storage | PendingTensor] = dict(roots)
    views: list[Storage] = []
    for item in views_raw:
        if not (isinstance(item, tuple) and len(item) == 4):
            raise ModelImportError(f"{origin}: a storage view is {summary(item, 80)}, expected (key, root, offset, "
                                   "numel).")
        vkey, rkey = _key(item[0], "a storage view key", origin), _key(item[1], "a view's root key", origin)
        root = roots.get(rkey)
        if root is None or vkey in objects:
            raise ModelImportError(
                f"{origin}: storage view {vkey} " + (f"views storage {rkey}, which the file does not hold."
                                                     if root is None else "reuses a key; corrupted file.")
            )
        isz = root.dtype.itemsize if root.dtype is not None else 1
        offset, numel = item[2], item[3]
        if any(isinstance(v, bool) or not isinstance(v, int) or v < 0 for v in (offset, numel)) or \
                (offset + numel) * isz > root.nbytes:
            raise ModelImportError(
                f"{origin}: storage view {vkey} (offset {summary(offset, 20)}, numel {summary(numel, 20)}) lies "
                f"outside storage {rkey} of {root.nbytes // isz} elements; corrupted or malicious file."
            )
        child = Storage(str(vkey), numel * isz, root.dtype, f"storage {rkey} view {vkey}")
        child.set(parent=root, parent_offset=offset * isz)
        objects[vkey] = child
        views.append(child)

    # --- tensors: views into the storages, checked and counted ---
    w = _Window(f, *members.get("tensors", (0, 0)))
    for head in records(w, members["tensors"][1], "tensor", "key, storage key, tensor type", 28) \
            if "tensors" in members else ():
        key = _key(head[0], "a tensor key", origin)
        skey = _key(head[1], f"tensor {key}'s storage key", origin)
        storage = objects.get(skey)
        if not isinstance(storage, Storage):
            raise ModelImportError(f"{origin}: tensor {key} views storage {skey}, which the file does not hold.")
        if isinstance(objects.get(key), PendingTensor):  # (a storage's key it may take over, as in torch)
            raise ModelImportError(f"{origin}: tensor {key} is declared twice; corrupted or malicious file.")
        (ndim,) = struct.unpack(order + "i", w.exact(4, f"tensor {key}'s rank", origin))
        if not 0 <= ndim <= _MAX_NDIM:
            raise ModelImportError(f"{origin}: tensor {key} declares rank {ndim}, expected 0 to {_MAX_NDIM}.")
        w.exact(4, f"tensor {key}'s padding", origin)
        dims = struct.unpack(f"{order}{2 * ndim + 1}q", w.exact(8 * (2 * ndim + 1), f"tensor {key}'s sizes", origin))
        t = make_view(storage, dims[-1], dims[:ndim], dims[ndim:-1], None, origin=origin, max_bytes=max_tensor_bytes)
        budget.take(t.nbytes, f"tensor {key} of size {list(t.shape)} ({t.dtype})")
        objects[key] = t

    # --- the object: every tensor or storage is a persistent id ---
    def persistent_load(pid: Any) -> Storage | PendingTensor:
        if isinstance(pid, tuple) and pid and pid[0] in ("storage", b"storage"):
            return _storage_ref(pid, roots, origin)
        if isinstance(pid, tuple):  # (module class, source file, source): a pickled nn.Module
            raise ModelImportError(
                f"{origin}: the file pickles a whole nn.Module, which needs its code to load. Save "
                "`model.state_dict()` instead."
            )
        key = _key(pid, "a persistent id", origin)
        obj = objects.get(key)
        if obj is None:
            raise ModelImportError(f"{origin}: the pickle refers to tensor or storage {key}, which the file does "
                                   "not hold.")
        return obj

    start, size = members["pickle"]
    unpickler = _TarUnpickler(_Window(f, start, size), origin=origin, persistent_load=persistent_load,
                              max_tensor_bytes=max_tensor_bytes, budget=budget,
                              storage_ref=lambda ref: _storage_ref(ref, roots, origin))
    root_obj = safe_load(unpickler, origin, "the pickled object")
    return root_obj, list(roots.values()) + views, big_endian
