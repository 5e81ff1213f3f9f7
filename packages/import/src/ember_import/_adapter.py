"""Adapters: the hook that turns a tensor in the source framework's convention into Ember's.

PyTorch and Ember lay out some parameters differently (Burn's ``PyTorchToBurnAdapter``): ``nn.Linear``
stores ``weight`` as ``[d_output, d_input]`` where Ember's ``Linear`` holds ``[d_input, d_output]``; norm layers
name their parameters ``weight``/``bias`` (Ember/Burn: ``gamma``/``beta``); ``BatchNorm`` s carry a
``num_batches_tracked`` counter Ember has no field for; LSTM/GRU gates are packed in another order.

An :class:`Adapter` sees one :class:`TensorEntry` at a time, after key remapping, and returns it changed,
unchanged, or None to drop it. ``container`` names the Ember module class that will own the tensor
(``"Linear"``, ``"BatchNorm"``); it is filled in when loading into a module and is None when only reading a
file. :class:`IdentityAdapter` is the default. The PyTorch -> Ember layer conversions themselves need the whole
layer (packed gates split into several tensors), so they are not entry adapters: ``PyTorchFileRecorder`` /
``SafetensorsFileRecorder`` apply them when the record meets a module (see ``ember_import._layers``), after any
entry adapter given with ``LoadArgs.with_adapter``.
"""

from __future__ import annotations

import dataclasses
from typing import Protocol, runtime_checkable

from ember import TensorData

__all__ = ["Adapter", "IdentityAdapter", "TensorEntry"]


@dataclasses.dataclass(frozen=True)
class TensorEntry:
    """One tensor on its way from a file into a record.

    Attributes:
        key: its current (remapped) dotted key, e.g. ``"encoder.fc.weight"``.
        data: its elements.
        original_key: its key in the file.
        container: the Ember module class that will hold it (``"Linear"``), or None when unknown.
    """

    key: str
    data: TensorData
    original_key: str
    container: str | None = None

    def with_(self, **changes: object) -> TensorEntry:
        """A copy with some fields replaced (``entry.with_(key=..., data=...)``)."""
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]


@runtime_checkable
class Adapter(Protocol):
    """Converts tensors from a source framework's conventions to Ember's (Burn's ``ModuleAdapter``).

    ``adapt`` returns the entry (possibly with a new key or data) or None to drop the tensor.
    """

    def adapt(self, entry: TensorEntry) -> TensorEntry | None: ...


class IdentityAdapter:
    """The adapter that changes nothing (Burn's ``IdentityAdapter``): for files already in Ember's layout."""

    def adapt(self, entry: TensorEntry) -> TensorEntry | None:
        return entry

    def __repr__(self) -> str:
        return "IdentityAdapter()"
