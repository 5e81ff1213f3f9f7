"""Item serialization for ``SqliteDataset``: msgpack with a numpy-array extension type.

An item is encoded as msgpack (as Burn stores items with ``rmp_serde``). Supported values: ``None``,
bools, ints (64-bit), floats, strings, bytes, lists/tuples (read back as lists), dicts, dataclass
instances (stored as dicts of their fields; read back as dicts, or as the dataclass when the dataset
is given ``item_type``), numpy scalars (stored as Python numbers) and numpy arrays of numeric, bool
or fixed-width string dtypes (extension type 1: ``[dtype.str, shape, raw bytes]``, read back as a
writable C-contiguous array of the same dtype and shape). Nothing is ever unpickled.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import msgpack
import numpy as np

__all__ = ["encode_item", "decode_item", "NDARRAY_EXT"]

NDARRAY_EXT = 1
_ARRAY_KINDS = frozenset("biufcUSmM")


def _default(obj: Any) -> Any:
    if isinstance(obj, np.ndarray):
        if obj.dtype.kind not in _ARRAY_KINDS or obj.dtype.fields is not None:
            raise TypeError(
                f"cannot store a numpy array of dtype {obj.dtype}; use numeric, bool or fixed-width string dtypes."
            )
        arr = np.ascontiguousarray(obj)
        payload = msgpack.packb([arr.dtype.str, list(arr.shape), arr.tobytes()], use_bin_type=True)
        return msgpack.ExtType(NDARRAY_EXT, payload)
    if isinstance(obj, np.generic):
        return obj.item()
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}
    if isinstance(obj, Mapping):
        return dict(obj)
    if isinstance(obj, (set, frozenset)):
        return sorted(obj)
    if hasattr(obj, "to_numpy") and callable(obj.to_numpy):  # TensorData, Tensor
        return np.asarray(obj.to_numpy())
    raise TypeError(
        f"cannot store a value of type {type(obj).__name__}; items may hold None, bools, ints, floats, "
        "strings, bytes, lists, dicts, dataclasses and numpy arrays."
    )


def _ext_hook(code: int, data: bytes) -> Any:
    if code != NDARRAY_EXT:
        raise ValueError(f"unknown msgpack extension type {code} (this file needs a newer Ember?)")
    dtype_str, shape, raw = msgpack.unpackb(data, raw=False)
    dtype = np.dtype(dtype_str)
    if dtype.kind not in _ARRAY_KINDS:
        raise ValueError(f"stored array has unsupported dtype {dtype_str!r}")
    return np.frombuffer(raw, dtype=dtype).reshape(shape).copy()


def encode_item(item: Any) -> bytes:
    """The msgpack bytes of ``item``. Raises ``TypeError`` for values that cannot be stored."""
    return msgpack.packb(item, default=_default, use_bin_type=True, strict_types=False)


def decode_item(blob: bytes) -> Any:
    """The item stored in ``blob`` (see the module docstring for the types read back).

    Raises ``ValueError`` (msgpack's errors derive from it) for malformed bytes.
    """
    return msgpack.unpackb(blob, ext_hook=_ext_hook, raw=False, strict_map_key=False)
