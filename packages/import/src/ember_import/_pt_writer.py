"""Writing a ``state_dict`` in ``torch.save``'s zip format without torch.

The archive (PyTorch's ``caffe2/serialize/inline_container.cc``, ``torch/serialization.py``): stored (not
compressed) entries ``<name>/data.pkl`` (the pickle), ``<name>/data/<key>`` (one raw little-endian storage per
tensor, 64-byte aligned through the local header's extra field, as PyTorch pads), ``<name>/byteorder``,
``<name>/version`` (``3``), ``<name>/.format_version`` and ``<name>/.storage_alignment``.

The pickle (protocol 2) is what ``torch.save(model.state_dict())`` writes: a ``collections.OrderedDict`` whose
values are ``torch._utils._rebuild_tensor_v2(storage, 0, size, stride, False, OrderedDict())`` REDUCE calls,
``storage`` being the persistent id ``("storage", torch.<X>Storage, "<key>", "cpu", numel)``. Python's
picklers check every global by importing its module; :class:`_StatePickler` (on the pure-Python
``pickle._Pickler``) instead writes the ``GLOBAL`` opcode of the :class:`TorchGlobal` markers directly, so torch
is neither needed nor imported. ``torch.load(weights_only=True)`` accepts the result.
"""

from __future__ import annotations

import collections
import io
import os
import pickle
import struct
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from ember import DType, TensorData
from ember.record import atomic_path

from ._errors import ModelImportError

__all__ = ["TorchGlobal", "write_pytorch", "pickle_state_dict"]

_STORAGE = {
    DType.FLOAT64: "DoubleStorage", DType.FLOAT32: "FloatStorage", DType.FLOAT16: "HalfStorage",
    DType.BFLOAT16: "BFloat16Storage", DType.INT64: "LongStorage", DType.INT32: "IntStorage",
    DType.INT16: "ShortStorage", DType.INT8: "CharStorage", DType.UINT8: "ByteStorage", DType.BOOL: "BoolStorage",
}
ALIGN = 64


class TorchGlobal:
    """A marker pickled as ``GLOBAL module name`` (e.g. ``torch._utils _rebuild_tensor_v2``); never resolved."""

    __slots__ = ("module", "name")

    def __init__(self, module: str, name: str) -> None:
        self.module = module
        self.name = name

    def __call__(self, *args: Any) -> Any:  # callable only so that pickle accepts it as a REDUCE function
        raise TypeError(f"{self!r} is a pickling marker, not the PyTorch function.")

    def __repr__(self) -> str:
        return f"{self.module}.{self.name}"


_REBUILD = TorchGlobal("torch._utils", "_rebuild_tensor_v2")
_STORAGE_GLOBALS = {dt: TorchGlobal("torch", name) for dt, name in _STORAGE.items()}


class _StorageRef:
    __slots__ = ("key", "dtype", "numel")

    def __init__(self, key: str, dtype: DType, numel: int) -> None:
        self.key, self.dtype, self.numel = key, dtype, numel


class _TensorRef:
    __slots__ = ("storage", "shape")

    def __init__(self, storage: _StorageRef, shape: tuple[int, ...]) -> None:
        self.storage, self.shape = storage, shape

    def __reduce__(self) -> Any:
        stride, acc = [], 1
        for n in reversed(self.shape):
            stride.append(acc)
            acc *= n
        return (_REBUILD, (self.storage, 0, tuple(self.shape), tuple(reversed(stride)), False,
                           collections.OrderedDict()))


class _StatePickler(pickle._Pickler):  # type: ignore[misc, name-defined]
    """Protocol-2 pickler writing :class:`TorchGlobal` markers as ``GLOBAL`` opcodes and storages as
    persistent ids (PyTorch's ``torch.save`` layout), with no import of the named modules."""

    dispatch = dict(pickle._Pickler.dispatch)  # type: ignore[attr-defined]

    def save_torch_global(self, obj: TorchGlobal) -> None:
        self.write(pickle.GLOBAL + f"{obj.module}\n{obj.name}\n".encode("ascii"))  # type: ignore[attr-defined]
        self.memoize(obj)  # type: ignore[attr-defined]

    dispatch[TorchGlobal] = save_torch_global  # type: ignore[assignment]

    def persistent_id(self, obj: Any) -> Any:
        if isinstance(obj, _StorageRef):
            return ("storage", _STORAGE_GLOBALS[obj.dtype], obj.key, "cpu", obj.numel)
        return None


def pickle_state_dict(tensors: dict[str, TensorData]) -> tuple[bytes, list[tuple[str, bytes]]]:
    """The ``data.pkl`` bytes and the ``(storage key, raw little-endian bytes)`` list of a state_dict.

    Raises:
        ModelImportError: a dtype PyTorch's storages cannot hold.
    """
    state: collections.OrderedDict[str, _TensorRef] = collections.OrderedDict()
    blobs: list[tuple[str, bytes]] = []
    for i, (name, t) in enumerate(tensors.items()):
        if t.dtype not in _STORAGE:
            raise ModelImportError(f"cannot write {name!r} of dtype {t.dtype} to a .pt file.")
        arr = np.ascontiguousarray(t.as_bits())
        if arr.dtype.byteorder == ">":
            arr = arr.astype(arr.dtype.newbyteorder("<"))
        key = str(i)
        state[name] = _TensorRef(_StorageRef(key, t.dtype, int(arr.size)), tuple(int(s) for s in t.shape))
        blobs.append((key, arr.tobytes()))
    buf = io.BytesIO()
    _StatePickler(buf, protocol=2).dump(state)
    return buf.getvalue(), blobs


def _aligned_info(zf: zipfile.ZipFile, name: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_STORED
    offset = zf.start_dir + 30 + len(name.encode("utf-8")) + 4  # local header, name, extra-field header
    pad = (-offset) % ALIGN
    info.extra = struct.pack("<HH", 0x4246, pad) + b"Z" * pad  # PyTorch's "FB" padding record
    return info


def write_pytorch(tensors: dict[str, TensorData], path: str | os.PathLike[str], archive: str = "archive") -> Path:
    """Write ``tensors`` as a ``torch.save``-format ``state_dict`` (zip, storages 64-byte aligned), atomically.

    Returns:
        the path written.

    Raises:
        ModelImportError: a dtype PyTorch's storages cannot hold.
    """
    pkl, blobs = pickle_state_dict(tensors)
    out = Path(path)
    with atomic_path(out) as tmp, zipfile.ZipFile(tmp, "w", zipfile.ZIP_STORED) as zf:
        entries = [("data.pkl", pkl), (".format_version", b"1"), (".storage_alignment", str(ALIGN).encode()),
                   ("byteorder", b"little")]
        entries += [(f"data/{k}", b) for k, b in blobs]
        entries.append(("version", b"3\n"))
        for name, data in entries:
            zf.writestr(_aligned_info(zf, f"{archive}/{name}"), data)
    return out
