"""``config_from_file``: the config dict stored in a checkpoint (Burn's ``burn_import::pytorch::config_from_file``)."""

from __future__ import annotations

import os
from typing import Any, TypeVar

from ember import TensorData

from ._errors import ModelImportError
from ._limits import summary
from ._load import read_file

__all__ = ["config_from_file"]

T = TypeVar("T")


def config_from_file(path: str | os.PathLike[str], top_level_key: str | None = None, into: type[T] | None = None
                     ) -> dict[str, Any] | T:
    """Read the dict stored under ``top_level_key`` (or the whole file's dict) of a ``.pt`` checkpoint.

    Checkpoints often save the model's hyper-parameters next to its weights
    (``torch.save({"config": {"d_model": 512}, "model": model.state_dict()}, path)``). The file is memory-mapped,
    so its tensors are not read.

    Args:
        path: the ``.pt`` file (a safetensors file has no config: its header metadata is returned instead).
        top_level_key: the entry holding the config, e.g. ``"config"``; None for the whole top-level dict.
        into: an Ember ``@config`` class to fill (``into.from_dict(d)``); None returns the plain dict.

    Returns:
        a dict of plain Python values (``OrderedDict`` s as dicts, tensors as ``TensorData``), or an ``into``.

    Raises:
        ModelImportError: the file cannot be read, the key is missing (the keys present are listed), or the
            entry is not a dict.
        ember.ConfigError: ``into`` rejects the dict (unknown, missing or mistyped field).
    """
    file = read_file(path, mmap=True)
    root: Any = file.root if file.format != "safetensors" else file.metadata.get("metadata", {})
    if top_level_key is not None:
        if not isinstance(root, dict) or top_level_key not in root:
            keys = sorted(summary(k, 60) for k in root)[:20] if isinstance(root, dict) else []
            raise ModelImportError(
                f"'{path}': no top-level key {top_level_key!r}; the top-level keys are "
                f"{', '.join(keys) or '(none)'}{' ...' if isinstance(root, dict) and len(root) > 20 else ''}."
            )
        root = root[top_level_key]
    if not isinstance(root, dict):
        raise ModelImportError(f"'{path}': the config entry is a {type(root).__name__}, expected a dict.")
    root = {str(k): v for k, v in root.items()}
    if into is None:
        return root
    if any(isinstance(v, TensorData) for v in root.values()):
        raise ModelImportError(f"'{path}': the config entry holds tensors; cannot fill {into.__name__}.")
    return into.from_dict(root)  # type: ignore[attr-defined, no-any-return]
