"""The weights record of a generated module, saved without importing or running the generated file.

The module is built in memory from the fields' construction trees (:mod:`._expr`), the same trees
``model.py``'s ``init(device)`` was written from, in a class with the generated class's field names; the
ONNX weights load into it through the PyTorch layer rules (:class:`~ember_import.ImportedRecord`) and the record
is saved. Its keys are the generated module's, so ``Model.from_record`` loads it.
"""

from __future__ import annotations

import types
from pathlib import Path
from typing import Any

from ember import Bool, Int, Tensor, nn, quantization
from ember.backend import Device
from ember.module import Module, Param
from ember.record import HalfPrecisionSettings

from ..._recorder import ImportedRecord
from .._program import host_device
from ._expr import build
from ._gen import Gen
from ._quant_recognizers import apply_quantized
from ._source import RECORDERS

__all__ = ["build_module", "save_weights"]


def build_module(gen: Gen, class_name: str, device: Device) -> Module:
    """The generated module with fresh weights, as its config's ``init(device)`` builds it, made from the
    generation state alone (a class of the same name and fields; no generated code runs)."""
    names = {
        "nn": nn, "Tensor": Tensor, "Int": Int, "Bool": Bool, "Param": Param, "device": device,
        "quantization": quantization,
    }
    values = {f.name: build(f.ctor, names) for f in gen.fields}
    annotations = {name: type(v) for name, v in values.items()}
    cls: Any = types.new_class(class_name, (Module,),
                               exec_body=lambda ns: ns.update(__annotations__=annotations, __module__=__name__))
    return cls(**values)  # type: ignore[no-any-return]


def save_weights(gen: Gen, class_name: str, record: Path, record_type: str, half: bool, source: str) -> Path:
    """Load the ONNX weights (PyTorch's layout, ``Field.state``) into :func:`build_module`'s module and save
    the record at ``record`` with ``record_type``'s recorder. Returns the path written.

    Raises:
        ModelImportError: a weight that does not fit its layer (a bug in ModelGen's layer recognition).
        RecordError: the record cannot be written.
    """
    import ember.record as rec

    device = host_device()
    net = build_module(gen, class_name, device)
    flat = {}
    for f in gen.fields:
        for key, data in f.state.items():
            flat[f"{f.name}.{key}" if key else f.name] = data
    record_in = ImportedRecord(flat, origins={}, values={}, pytorch=True, adapter=None, device=device, source=source)
    if gen.quantized_state:  # the float weights, then the quantized ones
        loaded, report = net.load_record(record_in, strict=False)
        net = apply_quantized(loaded, report, gen)
    else:
        net = net.load_record(record_in)
    recorder = getattr(rec, RECORDERS[record_type])(HalfPrecisionSettings() if half else None)
    return net.save_file(record, recorder)  # type: ignore[no-any-return]
