"""Records and recorders (Burn's ``burn::record``).

A *record* is a plain tree mirroring a module: dicts keyed by field name, lists by index, with
:class:`~ember.TensorData` and :class:`~ember.ParamId` leaves (plus ``None``, bools, ints, floats and
strings, so optimizer state round-trips too). ``module.into_record()`` builds one;
``module.load_record(record)`` applies one.

A *recorder* writes records with precision settings inside the envelope
``{"metadata": {format, version, float, int, settings, ember_version}, "item": ...}``:

=============================  ===============  ==========================================
recorder                       extension        notes
=============================  ===============  ==========================================
NamedMpkFileRecorder           ``.mpk``         msgpack with names; DefaultFileRecorder
NamedMpkGzFileRecorder         ``.mpk.gz``      gzip of the above; CompactRecorder (half)
BinFileRecorder                ``.bin``         positional msgpack (needs a template)
BinGzFileRecorder              ``.bin.gz``      SensitiveCompactRecorder (half)
PrettyJsonFileRecorder         ``.json``        indented JSON, base64 tensor bytes
JsonGzFileRecorder             ``.json.gz``     compact JSON, gzip
SafetensorsFileRecorder        ``.safetensors`` dotted keys, metadata in the header
NamedMpkBytesRecorder          (bytes)          in memory
BinBytesRecorder               (bytes)          in memory, positional
=============================  ===============  ==========================================

Writes are atomic (temporary file in the same directory, fsync, ``os.replace``); extension packages write
their own files the same way with :func:`atomic_write` / :func:`atomic_path` (and :func:`remove_stale_temps`
clears what a killed writer left). :func:`read_safetensors_header` and :func:`read_safetensors_into` are the
checked safetensors reader that :class:`SafetensorsFileRecorder` and ``ember_import.safetensors`` share.
Loading problems raise :class:`~ember.RecordError` naming the file and the problem. The byte layout is specified in
``docs/record-format.md``.

>>> import ember
>>> from ember.record import NamedMpkBytesRecorder
>>> rec = NamedMpkBytesRecorder()
>>> out = rec.load(rec.record({"step": 3, "w": ember.TensorData([1.0, 2.0])}))
>>> out["step"], out["w"].to_list()
(3, [1.0, 2.0])
"""

from __future__ import annotations

from ._atomic import atomic_path, atomic_write, remove_stale_temps
from ._codec import TENSOR, ExactTensorData
from ._json import JsonGzFileRecorder, PrettyJsonFileRecorder
from ._mpk import (
    BinBytesRecorder,
    BinFileRecorder,
    BinGzFileRecorder,
    CompactRecorder,
    DefaultFileRecorder,
    NamedMpkBytesRecorder,
    NamedMpkFileRecorder,
    NamedMpkGzFileRecorder,
    SensitiveCompactRecorder,
)
from ._recorder import FORMAT_VERSION, BytesRecorder, FileRecorder, Recorder
from ._safetensors import SafetensorsFileRecorder
from ._safetensors_format import read_header as read_safetensors_header
from ._safetensors_format import read_into as read_safetensors_into
from ._settings import DoublePrecisionSettings, FullPrecisionSettings, HalfPrecisionSettings, PrecisionSettings

__all__ = [
    "FORMAT_VERSION",
    "TENSOR",
    "ExactTensorData",
    "BinBytesRecorder",
    "BinFileRecorder",
    "BinGzFileRecorder",
    "BytesRecorder",
    "CompactRecorder",
    "DefaultFileRecorder",
    "DoublePrecisionSettings",
    "FileRecorder",
    "FullPrecisionSettings",
    "HalfPrecisionSettings",
    "JsonGzFileRecorder",
    "NamedMpkBytesRecorder",
    "NamedMpkFileRecorder",
    "NamedMpkGzFileRecorder",
    "PrecisionSettings",
    "PrettyJsonFileRecorder",
    "Recorder",
    "SafetensorsFileRecorder",
    "SensitiveCompactRecorder",
    "atomic_path",
    "atomic_write",
    "read_safetensors_header",
    "read_safetensors_into",
    "remove_stale_temps",
]
