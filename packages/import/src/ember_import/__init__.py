"""Ember's model importers: PyTorch ``.pt`` and safetensors weights, safely (Burn's ``burn-import``).

- :func:`read_pytorch` reads a ``torch.save`` file (zip or legacy format) without importing torch and without
  running code from the file: its pickle may only name what a ``state_dict`` needs; everything else, and any
  size or view outside its buffer, raises :class:`ModelImportError`.
- :func:`read_safetensors` reads ``.safetensors`` files, bfloat16 included.
- :class:`LoadArgs` + :func:`load_tensors` select, rename (regex remaps, contiguous ``Sequential`` indices)
  and adapt the tensors; :func:`config_from_file` returns a config dict stored in a checkpoint.
- :class:`PyTorchFileRecorder` / :class:`SafetensorsFileRecorder` turn a file into a record that
  ``module.load_record`` accepts, converting PyTorch's layouts to Ember's layer by layer.
- :func:`save_pytorch` / :func:`save_safetensors` export a module as a PyTorch ``state_dict``.
- ``ember-import inspect FILE`` lists a file's keys, shapes and dtypes.

Torch is never imported by this package.
"""

from __future__ import annotations

from ._adapter import Adapter, IdentityAdapter, TensorEntry
from ._config import config_from_file
from ._errors import ModelImportError
from ._export import save_pytorch, save_safetensors, to_pytorch_state_dict
from ._filter import ApplyResult, PathFilter
from ._imported import ImportedFile
from ._keys import map_indices_contiguous
from ._load import LoadResult, detect_format, load_tensors, read_file, unflatten
from ._load_args import LoadArgs
from ._pt import read_pytorch
from ._recorder import ImportedRecord, PyTorchFileRecorder, SafetensorsFileRecorder
from ._safetensors_read import read_safetensors

__version__ = "0.1.0"

__all__ = [
    "Adapter",
    "ApplyResult",
    "IdentityAdapter",
    "ImportedFile",
    "ImportedRecord",
    "LoadArgs",
    "LoadResult",
    "ModelImportError",
    "PathFilter",
    "PyTorchFileRecorder",
    "SafetensorsFileRecorder",
    "TensorEntry",
    "config_from_file",
    "detect_format",
    "load_tensors",
    "map_indices_contiguous",
    "read_file",
    "read_pytorch",
    "read_safetensors",
    "save_pytorch",
    "save_safetensors",
    "to_pytorch_state_dict",
    "unflatten",
]
