"""Export: an Ember module as a PyTorch ``state_dict`` (safetensors file or ``.pt`` file), no torch needed.

:func:`to_pytorch_state_dict` walks the module; each layer with a rule in :mod:`ember_import._layers` writes
its tensors in PyTorch's names and layout (``Linear.weight`` transposed to ``[d_output, d_input]``, norm
``gamma``/``beta`` as ``weight``/``bias`` plus ``num_batches_tracked``, LSTM/GRU gates packed, attention
projections packed into ``in_proj_weight``); other parameters keep their dotted paths. The files load with
``torch.nn.Module.load_state_dict`` (``safetensors.torch.load_file`` / ``torch.load``).
"""

from __future__ import annotations

import json
import logging
import os
import struct
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ember import TensorData
from ember.module import Module, Param, RunningState
from ember.record import PrecisionSettings, atomic_write

from ._errors import ModelImportError
from ._filter import ApplyResult, as_filter
from ._keys import compile_remap, remap_key
from ._layers import rule_for
from ._pt_writer import write_pytorch

__all__ = ["to_pytorch_state_dict", "save_pytorch", "save_safetensors"]

logger = logging.getLogger("ember_import")

_ST_NAMES = {"float64": "F64", "float32": "F32", "float16": "F16", "bfloat16": "BF16", "int64": "I64",
             "int32": "I32", "int16": "I16", "int8": "I8", "uint8": "U8", "uint16": "U16", "uint32": "U32",
             "uint64": "U64",
             "bool": "BOOL"}


def to_pytorch_state_dict(module: Any, *, settings: PrecisionSettings | None = None,
                          key_remap: Sequence[tuple[str, str]] = (), pytorch: bool = True, filter: Any = None,
                          report: ApplyResult | None = None) -> dict[str, TensorData]:
    """``module``'s parameters and running states as a PyTorch-convention ``state_dict`` (dotted key -> data).

    Args:
        module: any Ember module.
        settings: convert floats/ints to these precisions (default: the backend's dtypes, unchanged).
        key_remap: ``(regex, replacement)`` rules applied in order to the final keys (e.g. to re-insert the
            indices of a PyTorch ``Sequential``'s parameter-free layers: ``(r"^layers\\.1\\.", "layers.2.")``).
        pytorch: False writes Ember's own names and layouts.
        filter: keep only the final keys (after ``key_remap``) it matches (Burn's store filters): a
            :class:`~ember_import.PathFilter`, a regex (``re.search``), a predicate ``fn(key) -> bool``, or a
            list of these (OR-ed); None keeps everything. What it leaves out is logged (``ember_import`` logger).
        report: an :class:`~ember_import.ApplyResult` to fill in: ``applied`` (keys written), ``skipped``.

    Raises:
        ModelImportError: two tensors end up with the same key, an invalid remap rule or filter.
    """
    rules = [compile_remap(p, r) for p, r in key_remap]
    keep = None if filter is None else as_filter(filter)
    out: dict[str, TensorData] = {}
    skipped: list[str] = []

    def emit(key: str, data: TensorData) -> None:
        key = remap_key(key, rules)
        if key in out or key in skipped:
            raise ModelImportError(f"export: two tensors map to {key!r}; fix the key remaps.")
        if keep is not None and not keep.matches(key):
            skipped.append(key)
            return
        out[key] = settings.convert(data, key) if settings is not None else data

    def walk(v: Any, p: str) -> None:
        if isinstance(v, Param):
            emit(p, v.val().to_data())
        elif isinstance(v, RunningState):
            emit(p, v.value().to_data())
        elif isinstance(v, Module):
            rule = rule_for(v) if pytorch else None
            if rule is not None:
                rule.to_torch(v, p, emit)
                return
            for name in type(v).__ember_fields__:
                walk(getattr(v, name), f"{p}.{name}" if p else name)
        elif isinstance(v, dict):
            for k, x in v.items():
                walk(x, f"{p}.{k}" if p else str(k))
        elif isinstance(v, (list, tuple)):
            for i, x in enumerate(v):
                walk(x, f"{p}.{i}" if p else str(i))

    walk(module, "")
    if keep is not None:
        logger.info("export: %s kept %d tensors, skipped %d: %s", keep, len(out), len(skipped),
                    ", ".join(skipped[:20]) + (" ..." if len(skipped) > 20 else ""))
    if report is not None:
        report.applied[:] = list(out)
        report.skipped[:] = skipped
    return out


def save_pytorch(module: Any, path: str | os.PathLike[str], **kwargs: Any) -> Path:
    """Write ``module`` as a ``torch.save``-format ``.pt`` state_dict (see :func:`to_pytorch_state_dict` for
    ``kwargs``: ``settings``, ``key_remap``, ``pytorch``, ``filter``, ``report``);
    ``model.load_state_dict(torch.load(path, weights_only=True))`` accepts it. Torch is not used.
    """
    return write_pytorch(to_pytorch_state_dict(module, **kwargs), path)


def write_safetensors(tensors: dict[str, TensorData], path: str | os.PathLike[str],
                      metadata: dict[str, str] | None = None) -> Path:
    """Write ``tensors`` as a safetensors file (8-byte header length, JSON header, aligned data), atomically."""
    header: dict[str, Any] = {}
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    blobs = []
    offset = 0
    for name, t in tensors.items():
        arr = np.ascontiguousarray(t.as_bits())
        if arr.dtype.byteorder == ">":
            arr = arr.astype(arr.dtype.newbyteorder("<"))
        raw = arr.astype(np.uint8).tobytes() if t.dtype.value == "bool" else arr.tobytes()
        header[name] = {"dtype": _ST_NAMES[t.dtype.value], "shape": [int(s) for s in t.shape],
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    head = json.dumps(header, separators=(",", ":")).encode("utf-8")
    head += b" " * ((-len(head)) % 8)

    def write(f: Any) -> None:
        f.write(struct.pack("<Q", len(head)))
        f.write(head)
        for b in blobs:
            f.write(b)

    return atomic_write(path, write)


def save_safetensors(module: Any, path: str | os.PathLike[str], *, metadata: dict[str, str] | None = None,
                     **kwargs: Any) -> Path:
    """Write ``module`` as a PyTorch-convention safetensors file (see :func:`to_pytorch_state_dict` for
    ``kwargs``: ``settings``, ``key_remap``, ``pytorch``, ``filter``, ``report``);
    ``model.load_state_dict(safetensors.torch.load_file(path))`` accepts it. bfloat16 included."""
    return write_safetensors(to_pytorch_state_dict(module, **kwargs), path, {"format": "pt", **(metadata or {})})
