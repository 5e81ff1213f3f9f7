"""Records <-> the serializable ``item`` tree stored in files (see ``docs/record-format.md``).

A *record* is a plain tree: ``dict`` (``str`` keys), ``list``/``tuple``, ``None``, ``bool``, ``int``,
``float``, ``str``, :class:`~ember.TensorData` and :class:`~ember.ParamId` leaves (an ``ember.Tensor`` or
a numpy array is accepted and stored as its data).

The *named* encoding keeps dict keys; tensors become ``{"$type": "tensor", "dtype", "shape", "bytes"}``
maps (plus ``"digest"``, ``"<algorithm>:<hex>"`` of the bytes, in formats without a whole-file digest;
files written before digests carry ``"checksum"``, the sum64 of the bytes) and ids
``{"$type": "param_id", "id": "<decimal>"}``. The *positional* encoding (Bin recorders) drops keys: a
dict becomes the list of its values in sorted key order, a tensor the list ``[dtype, shape, bytes]``, an
id its string; decoding needs a template of the same structure.
"""

from __future__ import annotations

import base64
import binascii
import math
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from .._data import TensorData
from .._dtype import DType
from .._errors import RecordError
from ..module._param_id import ParamId
from ._checksum import digest_of, legacy, mismatch, parse_digest
from ._safetensors_format import short_repr as _short
from ._settings import PrecisionSettings

__all__ = [
    "TYPE_KEY", "TENSOR", "ExactTensorData", "encode", "decode_named", "decode_positional", "tensor_bytes",
    "flatten_keys",
]

TYPE_KEY = "$type"
_SCALARS = (bool, int, float, str)
_LITTLE = sys.byteorder == "little"
_DTYPES = {d.value: d for d in DType}


class _TensorSlot:
    """Template leaf standing for "a tensor goes here" (used for positional decoding)."""

    def __repr__(self) -> str:
        return "TENSOR"


TENSOR = _TensorSlot()
"""The placeholder of a tensor in a record template (``Module.record_template``)."""


class ExactTensorData(TensorData):
    """A :class:`~ember.TensorData` that recorders store with its own element type, whatever the precision
    settings (quantized tensors' int8/uint8 values and their scales: widening them to the settings' int32/float
    types would undo the saving, narrowing them would change the numbers). It loads back as a plain TensorData."""

    __slots__ = ()

    @classmethod
    def of(cls, data: TensorData) -> ExactTensorData:
        """``data``'s array, marked to be stored as it is (no copy)."""
        return cls.from_bits(data.as_bits(), data.dtype)  # type: ignore[return-value]


def tensor_bytes(data: TensorData) -> memoryview:
    """The little-endian bytes of ``data`` as a flat memoryview (no copy on little-endian hosts)."""
    arr = data.as_bits()
    if not _LITTLE or not arr.flags.c_contiguous:  # pragma: no cover - big-endian hosts
        return memoryview(data.bytes)
    return memoryview(arr.reshape(-1)).cast("B") if arr.size else memoryview(b"")  # type: ignore[arg-type]


def _as_data(node: Any) -> TensorData | None:
    if isinstance(node, TensorData):
        return node
    if isinstance(node, np.ndarray):
        return TensorData(node)
    if hasattr(node, "primitive") and hasattr(node, "to_data"):
        return node.into_data()  # type: ignore[no-any-return]
    return None


def _where(path: str) -> str:
    if len(path) > 200:  # keys come from the file: never an attacker-sized message
        return f"{path[:90]}...{path[-90:]}"
    return path or "<root>"


def encode(
    record: Any,
    settings: PrecisionSettings,
    tensor: Callable[[TensorData, str], Any],
    positional: bool = False,
    digest: str | None = None,
    path: str = "",
) -> Any:
    """The item tree of ``record``: tensors converted by ``settings`` and passed to ``tensor(data, path)``.

    ``tensor`` returns what stands for the tensor's bytes (a memoryview for msgpack, base64 text for
    JSON, a key for safetensors). With ``digest`` (an algorithm name) each tensor also carries the digest
    of its bytes.

    Raises:
        RecordError: a non-``str`` dict key, a reserved ``"$type"`` key, an int outside 64 bits, or a
            value of an unsupported type (the message names its path).
    """
    if node_is_scalar(record):
        if isinstance(record, int) and not isinstance(record, bool) and not -(1 << 63) <= record < 1 << 64:
            raise RecordError(f"record: the int at {_where(path)!r} does not fit in 64 bits.")
        return record
    if isinstance(record, np.generic):
        return encode(record.item(), settings, tensor, positional, digest, path)
    if isinstance(record, dict):
        for k in record:
            if not isinstance(k, str):
                raise RecordError(
                    f"record: dict keys must be str, found {type(k).__name__} key {k!r} at {_where(path)!r}; "
                    "convert keys with str() (ParamId keys: str(param_id))."
                )
            if k == TYPE_KEY:
                raise RecordError(f"record: the key {TYPE_KEY!r} at {_where(path)!r} is reserved by the format.")
        if positional:
            return [encode(record[k], settings, tensor, True, digest, _join(path, k)) for k in sorted(record)]
        return {k: encode(v, settings, tensor, False, digest, _join(path, k)) for k, v in record.items()}
    if isinstance(record, (list, tuple)):
        return [encode(v, settings, tensor, positional, digest, _join(path, str(i))) for i, v in enumerate(record)]
    if isinstance(record, ParamId):
        s = record.serialize()
        return s if positional else {TYPE_KEY: "param_id", "id": s}
    data = _as_data(record)
    if data is None:
        raise RecordError(
            f"record: unsupported value of type {type(record).__name__} at {_where(path)!r}; records hold "
            "dicts, lists, None, bool, int, float, str, TensorData (or tensors / numpy arrays) and ParamId."
        )
    if not isinstance(data, ExactTensorData):
        data = settings.convert(data, path)
    body = tensor(data, path)
    if positional:
        out: Any = [data.dtype.value, list(data.shape), body]
        if digest:
            out.append(digest_of(tensor_bytes(data), digest))
        return out
    node = {TYPE_KEY: "tensor", "dtype": data.dtype.value, "shape": list(data.shape), "bytes": body}
    if digest:
        node["digest"] = digest_of(tensor_bytes(data), digest)
    return node


def node_is_scalar(node: Any) -> bool:
    return node is None or type(node) in _SCALARS or isinstance(node, _SCALARS)


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


# ---------------------------------------------------------------------------------------- decoding
def _fail(origin: str, path: str, problem: str) -> RecordError:
    return RecordError(f"{origin}: corrupted or invalid record at {_where(path)!r}: {problem}")


def _tensor(
    origin: str, path: str, dtype: Any, shape: Any, body: Any, crc: Any, verify: bool,
    resolve: Callable[[Any, str], Any] | None,
) -> TensorData:
    if not isinstance(dtype, str) or dtype not in _DTYPES:
        raise _fail(origin, path, f"unknown tensor dtype {_short(dtype)}")
    d = _DTYPES[dtype]
    if not isinstance(shape, list) or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in shape):
        raise _fail(origin, path, f"tensor shape must be a list of non-negative ints, found {_short(shape)}")
    if resolve is not None:
        body = resolve(body, path)
    if isinstance(body, np.ndarray):
        # (safetensors stores rank-0 tensors as shape [1]: compare element counts, then reshape)
        if body.size != math.prod(shape) or body.dtype != d.to_numpy():
            raise _fail(origin, path, f"tensor is {body.dtype}{list(body.shape)}, metadata says {d}{shape}")
        body = body.reshape(shape)
        flat: Any = np.ascontiguousarray(body).reshape(-1)
        raw: Any = memoryview(flat).cast("B") if body.size else b""
    else:
        raw = body
    if not isinstance(raw, (bytes, bytearray, memoryview)):
        raise _fail(origin, path, f"tensor bytes must be binary, found {type(raw).__name__}")
    count = math.prod(shape)
    if len(raw) != count * d.itemsize:
        raise _fail(
            origin, path,
            f"{len(raw)} bytes for a {d} tensor of shape {shape} (expected {count * d.itemsize}); the file is "
            "truncated or corrupted",
        )
    if verify and crc is not None:
        _check_tensor_digest(origin, path, crc, raw)
    if isinstance(body, np.ndarray):
        return TensorData.from_bits(body, d)
    arr = np.frombuffer(raw, dtype=d.to_numpy().newbyteorder("<")).reshape(shape)
    if not _LITTLE:  # pragma: no cover
        arr = arr.astype(d.to_numpy())
    return TensorData.from_bits(arr, d)


def _check_tensor_digest(origin: str, path: str, stored: Any, raw: Any) -> None:
    """Verify a tensor's stored digest (``"<algorithm>:<hex>"``, or an old file's sum64 int) against ``raw``."""
    if isinstance(stored, int) and not isinstance(stored, bool):
        stored, algorithm = legacy(stored), "sum64"
    else:
        algorithm = parse_digest(stored, origin, _where(path))
    actual = digest_of(raw, algorithm)
    if actual != stored:
        raise mismatch(origin, stored, actual, _where(path))


#: deepest nesting of maps/lists decoded (records are a few levels deep; this keeps far from Python's recursion
#: limit whatever the file holds)
MAX_DEPTH = 256


def _too_deep(origin: str, path: str) -> RecordError:
    return _fail(origin, path, f"maps/lists nested deeper than {MAX_DEPTH} levels")


def decode_named(
    node: Any, origin: str, verify: bool = True, path: str = "",
    resolve: Callable[[Any, str], Any] | None = None, depth: int = 0,
) -> Any:
    """The record of a named ``item`` tree.

    Args:
        origin: names the file (or "bytes") in error messages.
        verify: check each tensor's ``digest`` (or an old file's ``checksum``) when it has one.
        resolve: maps a tensor's ``bytes`` field to its bytes or array (base64 text for JSON, a key for
            safetensors); ``None`` when the field already holds the bytes.

    Raises:
        RecordError: malformed nodes, truncated or altered tensor data (names the path).
    """
    if node_is_scalar(node):
        return node
    if depth > MAX_DEPTH:
        raise _too_deep(origin, path)
    if isinstance(node, list):
        return [decode_named(v, origin, verify, _join(path, str(i)), resolve, depth + 1) for i, v in enumerate(node)]
    if isinstance(node, dict):
        tag = node.get(TYPE_KEY)
        if tag is None:
            out = {}
            for k, v in node.items():
                if not isinstance(k, str):
                    raise _fail(origin, path, f"dict key {_short(k)} is not a string")
                out[k] = decode_named(v, origin, verify, _join(path, k), resolve, depth + 1)
            return out
        if tag == "tensor":
            if set(node) - {TYPE_KEY, "dtype", "shape", "bytes", "checksum", "digest"} or "bytes" not in node:
                raise _fail(origin, path, f"tensor node has keys {sorted(node)[:20]}")
            crc = node["digest"] if "digest" in node else node.get("checksum")
            return _tensor(origin, path, node.get("dtype"), node.get("shape"), node["bytes"], crc, verify, resolve)
        if tag == "param_id":
            ident = node.get("id")
            if not isinstance(ident, str) or len(node) != 2:
                raise _fail(origin, path, f"param_id node must be {{'$type', 'id': str}}, found {_short(node)}")
            return ParamId(ident)
        raise _fail(origin, path, f"unknown node type {_short(tag)}")
    raise _fail(origin, path, f"unexpected value of type {type(node).__name__}")


def decode_positional(
    node: Any, template: Any, origin: str, verify: bool = True, path: str = "", depth: int = 0,
) -> Any:
    """The record of a positional ``item`` tree, with the keys and leaf kinds of ``template``.

    ``template`` is a record of the same structure (e.g. ``module.into_record()``); its tensor leaves
    may be :data:`TENSOR`.

    Raises:
        RecordError: the file's structure does not match the template, or malformed/altered data.
    """
    if depth > MAX_DEPTH:
        raise _too_deep(origin, path)
    if isinstance(template, dict):
        keys = sorted(template)
        if not isinstance(node, list) or len(node) != len(keys):
            found = f"{len(node)} values" if isinstance(node, list) else type(node).__name__
            raise RecordError(
                f"{origin}: the positional record at {_where(path)!r} does not match the template: expected "
                f"{len(keys)} values for keys {keys}, found {found}. Load with the module (or record) it was "
                "saved from."
            )
        return {
            k: decode_positional(v, template[k], origin, verify, _join(path, k), depth + 1) for k, v in zip(keys, node)
        }
    if isinstance(template, (list, tuple)):
        if not isinstance(node, list) or len(node) != len(template):
            found = f"{len(node)} items" if isinstance(node, list) else type(node).__name__
            raise RecordError(
                f"{origin}: the positional record at {_where(path)!r} does not match the template: expected "
                f"a list of {len(template)} items, found {found}."
            )
        return [
            decode_positional(v, t, origin, verify, _join(path, str(i)), depth + 1)
            for i, (v, t) in enumerate(zip(node, template))
        ]
    if isinstance(template, ParamId):
        if not isinstance(node, str):
            raise _fail(origin, path, f"expected a param id string, found {type(node).__name__}")
        return ParamId(node)
    if template is TENSOR or _as_data(template) is not None:
        if not isinstance(node, list) or len(node) not in (3, 4):
            raise _fail(origin, path, "expected a tensor [dtype, shape, bytes]")
        return _tensor(origin, path, node[0], node[1], node[2], node[3] if len(node) == 4 else None, verify, None)
    if not node_is_scalar(node):
        raise _fail(
            origin, path, f"expected a scalar like the template's {_short(template)}, found {type(node).__name__}"
        )
    return node


def flatten_keys(item: Any, path: str = "", out: dict[str, Any] | None = None) -> dict[str, Any]:
    """Dotted key -> leaf of a nested dict/list tree (used to name safetensors entries)."""
    out = {} if out is None else out
    if isinstance(item, dict):
        for k, v in item.items():
            flatten_keys(v, _join(path, k), out)
    elif isinstance(item, list):
        for i, v in enumerate(item):
            flatten_keys(v, _join(path, str(i)), out)
    else:
        out[path] = item
    return out


def b64(data: TensorData, path: str) -> str:
    return base64.b64encode(tensor_bytes(data)).decode("ascii")


def unb64(origin: str) -> Callable[[Any, str], bytes]:
    def resolve(body: Any, path: str) -> bytes:
        if not isinstance(body, str):
            raise _fail(origin, path, f"tensor bytes must be base64 text, found {type(body).__name__}")
        try:
            return base64.b64decode(body, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise _fail(origin, path, f"invalid base64 tensor bytes ({exc})") from None

    return resolve
