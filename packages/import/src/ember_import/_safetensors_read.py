"""Reading ``.safetensors`` files (Hugging Face) into Ember values, bfloat16 included.

Tensors of numpy-representable types are read with the ``safetensors`` library's numpy API
(``safe_open(path, framework="numpy")``). numpy has no bfloat16, so for ``BF16`` entries the header is parsed
here and the raw 16-bit patterns are kept as :class:`~ember.TensorData` bfloat16 bits (lossless). With
``mmap=True`` every tensor is a slice of one copy-on-write memory map of the file.

Format (https://github.com/huggingface/safetensors): an 8-byte little-endian header length ``N``, ``N`` bytes
of JSON ``{name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {...}}``, then the data;
offsets are relative to the end of the header.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from ember import DType, RecordError, TensorData
from ember.record import read_safetensors_header as read_checked_header
from ember.record import read_safetensors_into as read_into

from ._errors import ModelImportError
from ._imported import ImportedFile

__all__ = ["read_safetensors", "read_header", "SAFETENSORS_DTYPES"]

#: safetensors dtype names Ember reads, and their element types.
SAFETENSORS_DTYPES: dict[str, DType] = {
    "F64": DType.FLOAT64, "F32": DType.FLOAT32, "F16": DType.FLOAT16, "BF16": DType.BFLOAT16,
    "I64": DType.INT64, "I32": DType.INT32, "I16": DType.INT16, "I8": DType.INT8, "U8": DType.UINT8,
    "U16": DType.UINT16, "U32": DType.UINT32, "U64": DType.UINT64, "BOOL": DType.BOOL,
}
"""safetensors dtype names -> Ember element types."""


def read_header(path: str | os.PathLike[str]) -> tuple[dict[str, Any], int]:
    """Parse and check a safetensors header. Returns ``(header, data_start)``.

    Every entry is checked (:func:`ember.record._safetensors_format.read_header`, shared with Ember's own
    ``SafetensorsFileRecorder``): a dtype of :data:`SAFETENSORS_DTYPES`, a shape of non-negative ints, offsets
    inside the file whose length equals ``numel * itemsize``.

    Raises:
        FileNotFoundError: no such file.
        ModelImportError: truncated file, header length beyond the file, invalid JSON, bad entries,
            unsupported dtypes (named).
    """
    p = Path(path)
    with open(p, "rb", buffering=0) as f:
        return _header_of(f, f"'{p}'")


def _header_of(f: Any, origin: str) -> tuple[dict[str, Any], int]:
    try:
        return read_checked_header(f, os.fstat(f.fileno()).st_size, origin, SAFETENSORS_DTYPES)
    except RecordError as exc:
        raise ModelImportError(str(exc)) from None


def read_safetensors(path: str | os.PathLike[str], *, mmap: bool = False) -> ImportedFile:
    """Read a ``.safetensors`` file. Tensors keep their dotted names and dtypes (bfloat16 as bits).

    Args:
        path: the file.
        mmap: slice one copy-on-write memory map instead of reading each tensor.

    Returns:
        an :class:`ImportedFile` of format ``"safetensors"``: ``tensors`` in header order, ``metadata`` the
        header's ``__metadata__`` strings.

    Raises:
        FileNotFoundError: no such file.
        ModelImportError: see :func:`read_header`; the library's own validation errors are wrapped too.
    """
    p = Path(path)
    with open(p, "rb", buffering=0) as f:
        header, data_start = _header_of(f, f"'{p}'")
    names = [k for k in header if k != "__metadata__"]
    names.sort(key=lambda k: header[k]["data_offsets"][0])
    tensors: dict[str, TensorData] = {}
    whole = np.memmap(p, dtype=np.uint8, mode="c") if mmap and names else None
    need_lib = [k for k in names if header[k]["dtype"] != "BF16"] if whole is None else []
    arrays: dict[str, np.ndarray] = {}
    if need_lib:
        from safetensors import safe_open

        try:
            with safe_open(str(p), framework="numpy") as st:
                for k in need_lib:
                    arrays[k] = st.get_tensor(k)
        except Exception as exc:  # the library raises its own SafetensorError
            raise ModelImportError(f"'{p}': not a valid safetensors file ({type(exc).__name__}: {exc}).") from None
    with open(p, "rb", buffering=0) as f:
        for k in names:
            entry = header[k]
            dt = SAFETENSORS_DTYPES[entry["dtype"]]
            shape = tuple(entry["shape"])
            begin, end = entry["data_offsets"]
            if k in arrays:
                arr = np.asarray(arrays[k], dtype=dt.to_numpy(), order="C")  # ascontiguousarray makes rank 0 rank 1
            else:
                if whole is not None:
                    raw = np.asarray(whole[data_start + begin : data_start + end])
                else:
                    raw = np.empty(end - begin, dtype=np.uint8)
                    f.seek(data_start + begin)
                    if read_into(f, raw.data) != end - begin:
                        raise ModelImportError(f"'{p}': tensor {k!r} is truncated (the file changed while reading?).")
                arr = raw.view(dt.to_numpy().newbyteorder("<")).reshape(shape)
                if dt is DType.BOOL:
                    arr = arr.view(np.uint8) != 0
            tensors[k] = TensorData.from_bits(arr, dt)
    meta = header.get("__metadata__") or {}
    return ImportedFile(p, "safetensors", tensors, {"metadata": dict(meta) if isinstance(meta, dict) else {}})
