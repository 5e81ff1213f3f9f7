"""Importing PyTorch ``.pt`` / ``.pth`` files (Burn's ``burn_import::pytorch``).

::

    from ember_import.pytorch import LoadArgs, PyTorchFileRecorder, save_pytorch
    record = PyTorchFileRecorder().load(LoadArgs("model.pt").with_top_level_key("model_state_dict"), device)
    model = NetConfig().init(device).load_record(record)
    save_pytorch(model, "exported.pt")      # torch.nn.Module.load_state_dict accepts it
"""

from __future__ import annotations

from ._adapter import Adapter, IdentityAdapter, TensorEntry
from ._config import config_from_file
from ._errors import ModelImportError
from ._export import save_pytorch, to_pytorch_state_dict
from ._imported import ImportedFile
from ._load import LoadResult, load_tensors
from ._load_args import LoadArgs
from ._pt import read_pytorch
from ._recorder import ImportedRecord, PyTorchFileRecorder
from ._torch_ao import load_dynamic_linears

__all__ = [
    "Adapter",
    "IdentityAdapter",
    "ImportedFile",
    "ImportedRecord",
    "LoadArgs",
    "LoadResult",
    "ModelImportError",
    "PyTorchFileRecorder",
    "TensorEntry",
    "config_from_file",
    "load_dynamic_linears",
    "load_tensors",
    "read_pytorch",
    "save_pytorch",
    "to_pytorch_state_dict",
]
