"""``SafetensorsFileRecorder``: records as ``.safetensors`` files (Hugging Face format).

Each tensor is stored under its dotted path (``encoder.layers.0.weight``; a parameter's tensor under the
parameter's path, without ``.param``), so other tools (``safetensors.numpy.load_file``, PyTorch, JAX)
read the weights directly. The header's ``__metadata__`` holds the envelope's metadata fields as strings
plus ``"item"``: the record's named JSON tree in which each tensor is ``{"$type": "tensor", "key": <name>,
"dtype", "shape", "digest"}`` (so ids, scalars, lists and None survive). Files written by other tools
(no ``"item"``) load as nested dicts split on dots.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from .._errors import RecordError
from .._tensor_data import TensorData
from ._atomic import atomic_path
from ._checksum import digest_of, format_digest, legacy, mismatch, new_hasher, parse_digest
from ._codec import MAX_DEPTH, TYPE_KEY, decode_named, encode
from ._recorder import FileRecorder, check_metadata, sniff
from ._safetensors_format import read_header, read_into, short_repr

__all__ = ["SafetensorsFileRecorder"]


def _tensor_key(path: str) -> str:
    return path[: -len(".param")] if path.endswith(".param") else path


class SafetensorsFileRecorder(FileRecorder):
    """Safetensors files (``.safetensors``) with dotted keys and the Ember metadata in the header.

    Writes with the ``safetensors`` library's numpy API; loads with the library's validation of the header
    and reads each tensor into its own read-only array (the file is not mapped, so memory holds the data
    once). Precision settings apply as for other recorders.

    Raises (load):
        RecordError: not a safetensors file, a truncated or corrupted header or data.
    """

    format = "safetensors"
    extension = "safetensors"

    def _encode_item(self, record: Any) -> Any:
        arrays: dict[str, np.ndarray] = {}

        def put(data: TensorData, path: str) -> str:
            key = _tensor_key(path)
            if not key:
                raise RecordError("SafetensorsFileRecorder: the record's root must be a dict, not a tensor.")
            if key in arrays:
                raise RecordError(
                    f"SafetensorsFileRecorder: two tensors map to the key {key!r} (dict keys containing "
                    "'.' collide with nesting); rename the keys."
                )
            arrays[key] = np.ascontiguousarray(data.as_bits())
            return key

        item = encode(record, self.settings, put, digest=self.digest)
        meta = {k: str(v) for k, v in self.metadata().items()}
        meta["item"] = json.dumps(_refs(item), allow_nan=True)
        if self.digest:
            meta["digest"] = digest_of(_meta_body(meta), self.digest)
        return arrays, meta

    def _write(self, f: Any, item: Any) -> None:  # pragma: no cover - record() is overridden
        raise NotImplementedError

    def record(self, record: Any, path: Any) -> Path:
        from safetensors.numpy import save_file

        final = self.file_path(path)
        arrays, meta = self._encode_item(record)
        with atomic_path(final) as tmp:
            save_file(arrays, str(tmp), metadata=meta)
        return final

    def _read(self, path: Path, origin: str, template: Any) -> Any:
        with open(path, "rb", buffering=0) as f:
            head = f.read(16)
            if len(head) < 8:
                raise RecordError(f"{origin}: the file is empty or truncated (no safetensors header).")
            try:
                header, data_start = read_header(f, os.fstat(f.fileno()).st_size, origin, _NUMPY)
            except RecordError as exc:
                guess = sniff(head)
                hint = f" It looks like {guess}." if guess and "safetensors" not in guess else ""
                raise RecordError(f"{exc}{hint}") from None
            meta = header.get("__metadata__") or {}
            item = self._item(meta, origin) if _EMBER_KEYS & set(meta) else None
            digests = _stored_digests(item, origin) if self.verify and item is not None else {}
            arrays = _read_arrays(f, header, data_start, origin, digests)
        if item is None:
            return _nest(arrays, origin)  # written by another tool

        used: set[str] = set()

        def resolve(body: Any, p: str) -> Any:
            if not isinstance(body, str) or body not in arrays:
                raise RecordError(f"{origin}: the tensor at {short_repr(p)} names a missing entry {short_repr(body)}.")
            used.add(body)
            return arrays[body]

        record = decode_named(item, origin, False, resolve=resolve)  # (tensor digests: checked while reading)
        extra = sorted(set(arrays) - used)
        if extra:
            raise RecordError(
                f"{origin}: {len(extra)} tensors ({short_repr(extra)}) are not referenced by the record's metadata."
            )
        return record

    def _item(self, meta: dict[str, str], origin: str) -> Any:
        """The record's item tree in an Ember header's metadata (after its digest and fields are checked), with
        each tensor's ``bytes`` naming its entry."""
        if "item" not in meta:
            raise RecordError(f"{origin}: the header metadata has no 'item' entry (corrupted header).")
        if self.verify:
            _verify_metadata(meta, origin)
        check_metadata(meta, origin, self.format, type(self).__name__)
        unknown = sorted(set(meta) - _EMBER_KEYS)
        if unknown:  # e.g. a damaged 'digest' key, which would otherwise turn the metadata's check off
            raise RecordError(
                f"{origin}: the header metadata has entries this Ember never writes ({short_repr(unknown)}); "
                f"expected only {sorted(_EMBER_KEYS)}. The file is corrupted or was changed; re-save it from "
                "its source."
            )
        try:
            return _unrefs(json.loads(meta["item"]))
        except (ValueError, RecursionError) as exc:
            raise RecordError(
                f"{origin}: the header's 'item' is not valid JSON or nests too deeply ({type(exc).__name__}: "
                f"{str(exc)[:200]})."
            ) from None


_EMBER_KEYS = {"format", "version", "float", "int", "settings", "ember_version", "item", "checksum", "digest"}

#: safetensors dtype -> numpy dtype: Ember's element types (bfloat16, which numpy lacks, is read by
#: ``ember_import``; float8 and other types Ember lacks are refused by name when the header is checked)
_NUMPY = {
    "F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4", "I16": "<i2", "I8": "i1",
    "U8": "u1", "U16": "<u2", "U32": "<u4", "U64": "<u8", "BOOL": "?",
}


_PIECE = 1 << 20  # bytes read, then hashed while in cache, at a time


def _read_arrays(
    f: Any, header: dict[str, Any], data_start: int, origin: str, digests: dict[str, tuple[str, str, str]],
) -> dict[str, np.ndarray]:
    """Each tensor of the checked ``header`` (:func:`read_header`) read with ``readinto`` into its own read-only
    array, from the handle the header was read from; a tensor with an entry in ``digests`` (key -> stored
    digest, algorithm, record path) is hashed piece by piece as it is read and checked.

    Reading each tensor once, instead of through a memory map of the file, keeps the file's pages out of the
    process's memory next to the loaded tensors; the arrays are read-only (their buffers too), which the numpy
    backend adopts without a copy.
    """
    out: dict[str, np.ndarray] = {}
    for key, info in header.items():
        if key == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        n = end - begin
        buf = np.empty(n, dtype=np.uint8)
        f.seek(data_start + begin)
        check = digests.get(key)
        hasher = new_hasher(check[1]) if check else None
        got = 0
        while got < n:
            piece = buf.data[got:got + _PIECE]
            k = read_into(f, piece)
            if k != len(piece):
                raise RecordError(f"{origin}: the data of tensor {short_repr(key)} ends early (the file was "
                                  "truncated while reading).")
            if hasher is not None:
                hasher.update(piece)
            got += k
        if check and hasher is not None:
            actual = format_digest(check[1], hasher)
            if actual != check[0]:
                raise mismatch(origin, check[0], actual, check[2])
        buf.flags.writeable = False
        out[key] = buf.view(_NUMPY[info["dtype"]]).reshape(info["shape"])
    return out


def _stored_digests(item: Any, origin: str, path: str = "") -> dict[str, tuple[str, str, str]]:
    """Entry name -> ``(stored digest, algorithm, record path)`` of each tensor node in ``item`` that has a
    ``digest`` (or an old file's sum64 ``checksum``). ``item`` nests at most ``MAX_DEPTH`` levels (:func:`_unrefs`).

    Raises:
        RecordError: a malformed digest, an unknown algorithm, two tensors naming one entry.
    """
    out: dict[str, tuple[str, str, str]] = {}
    nodes = [(item, path)]
    while nodes:
        node, where = nodes.pop()
        if isinstance(node, list):
            nodes += [(v, f"{where}.{i}" if where else str(i)) for i, v in enumerate(node)]
        elif isinstance(node, dict) and node.get(TYPE_KEY) != "tensor":
            nodes += [(v, f"{where}.{k}" if where else str(k)) for k, v in node.items()]
        elif isinstance(node, dict):
            key, stored = node.get("bytes"), node.get("digest", node.get("checksum"))
            if not isinstance(key, str) or stored is None:
                continue  # (decoding reports a missing or malformed key)
            if key in out:
                raise RecordError(f"{origin}: two tensors of the record name the entry {short_repr(key)}.")
            shown = where if len(where) <= 200 else f"{where[:90]}...{where[-90:]}"  # (paths come from the file)
            if isinstance(stored, int) and not isinstance(stored, bool):
                out[key] = (legacy(stored), "sum64", shown)
            else:
                out[key] = (stored, parse_digest(stored, origin, shown), shown)
    return out


def _meta_body(meta: dict[str, str]) -> bytes:
    """What the metadata digest hashes: the UTF-8 JSON of the metadata without ``digest`` and ``checksum``
    (sorted keys, no spaces)."""
    body = {k: v for k, v in meta.items() if k not in ("checksum", "digest")}
    return json.dumps(body, sort_keys=True, separators=(",", ":")).encode("utf-8")


def _verify_metadata(meta: dict[str, str], origin: str) -> None:
    """Check the metadata's ``digest`` (or an old file's sum64 ``checksum``, a decimal string)."""
    if "digest" in meta:
        stored = meta["digest"]
        algorithm = parse_digest(stored, origin, "__metadata__")
    elif "checksum" in meta:
        value = meta["checksum"]
        if not value.isdigit() or len(value) > 20:
            raise RecordError(f"{origin}: the header metadata's checksum is not a decimal number; the file is "
                              "corrupted or was changed.")
        stored, algorithm = legacy(int(value)), "sum64"
    else:
        return
    actual = digest_of(_meta_body(meta), algorithm)
    if actual != stored:
        raise mismatch(origin, stored, actual, "__metadata__")


def _refs(node: Any) -> Any:
    """The item with each tensor's ``bytes`` field renamed ``key`` (it names the safetensors entry)."""
    if isinstance(node, dict):
        if node.get(TYPE_KEY) == "tensor":
            out = {k: v for k, v in node.items() if k != "bytes"}
            out["key"] = node["bytes"]
            return out
        return {k: _refs(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_refs(v) for v in node]
    return node


def _unrefs(node: Any, depth: int = 0) -> Any:
    """Inverse of :func:`_refs` (tensor nodes get their ``bytes`` field back, holding the key).

    Raises:
        RecursionError: nesting deeper than ``MAX_DEPTH`` (reported by the caller, naming the file).
    """
    if depth > MAX_DEPTH:
        raise RecursionError(f"maps/lists nested deeper than {MAX_DEPTH} levels")
    if isinstance(node, dict):
        if node.get(TYPE_KEY) == "tensor" and "key" in node and "bytes" not in node:
            out = {k: v for k, v in node.items() if k != "key"}
            out["bytes"] = node["key"]
            return out
        return {k: _unrefs(v, depth + 1) for k, v in node.items()}
    if isinstance(node, list):
        return [_unrefs(v, depth + 1) for v in node]
    return node


def _nest(arrays: dict[str, np.ndarray], origin: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, arr in arrays.items():
        parts = key.split(".")
        node = out
        for p in parts[:-1]:
            nxt = node.setdefault(p, {})
            if not isinstance(nxt, dict):
                raise RecordError(f"{origin}: the key {short_repr(key)} nests under the tensor {short_repr(p)}.")
            node = nxt
        if isinstance(node.get(parts[-1]), dict):
            raise RecordError(f"{origin}: tensors nest under the tensor {short_repr(key)} (keys split on '.').")
        node[parts[-1]] = TensorData(arr)
    return out
