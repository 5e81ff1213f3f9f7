"""``HuggingfaceDatasetLoader``: a Hugging Face dataset converted to an ``SqliteDataset`` (Burn's
``HuggingfaceDatasetLoader``). Needs the optional ``datasets`` library
(``pip install 'ember-core[huggingface]'``)."""

from __future__ import annotations

import datetime
import hashlib
import importlib
import json
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from ._errors import DatasetError
from ._sqlite import SqliteDataset
from ._sqlite_writer import SqliteDatasetWriter

__all__ = ["HuggingfaceDatasetLoader", "write_huggingface_dataset"]

I = TypeVar("I")  # noqa: E741


def _default_base_dir() -> Path:
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache).expanduser() / "ember" / "huggingface"


def _plain(value: Any) -> Any:
    """A Hugging Face value as something the SQLite codec stores: PIL images become uint8 arrays
    ``[height, width]`` or ``[height, width, channels]``, dates and times ISO 8601 strings; nested
    dicts and lists are converted too."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "__array_interface__") and not isinstance(value, np.ndarray):  # PIL.Image
        return np.asarray(value)
    if isinstance(value, (datetime.date, datetime.time)):  # timestamp columns
        return value.isoformat()
    return value


def write_huggingface_dataset(dataset: Any, path: str | os.PathLike[str], *, overwrite: bool = False) -> Path:
    """Write a ``datasets.DatasetDict`` (every split) or a ``datasets.Dataset`` (as split ``"train"``) to an
    SQLite dataset file at ``path``, one row per example; returns ``path``.

    Raises:
        DatasetError: ``path`` exists and ``overwrite`` is false, or a split name is not valid.
    """
    splits: Mapping[str, Any] = dataset if isinstance(dataset, Mapping) else {"train": dataset}
    with SqliteDatasetWriter(path, overwrite=overwrite) as writer:
        for split, ds in splits.items():
            for row in ds:
                writer.write(str(split), _plain(row))
    return Path(path)


class HuggingfaceDatasetLoader:
    """Downloads a dataset with Hugging Face ``datasets`` and stores it as an SQLite dataset file, once.

    .. code-block:: python

        train = HuggingfaceDatasetLoader("mnist").dataset("train")          # SqliteDataset of dicts
        local = (HuggingfaceDatasetLoader("csv").with_data_files({"train": "train.csv"})
                 .dataset("train"))

    Mirrors Burn's builder (``new(name)``, ``with_subset``, ``with_base_dir``, ``with_huggingface_token``,
    ``with_huggingface_cache_dir``, ``with_huggingface_data_dir``, ``dataset(split)``, ``db_file``); Burn
    runs a Python script for the conversion, here ``datasets`` is called in process. ``with_data_files``
    passes ``data_files`` to ``datasets.load_dataset`` (local CSV / JSON / Parquet files need no network).

    The file is ``<base_dir>/<name>[-<subset>][-<hash of data_files/data_dir>].db`` with ``base_dir``
    defaulting to ``$XDG_CACHE_HOME/ember/huggingface`` (``~/.cache/ember/huggingface``); an existing
    file is reused (delete it, or call :meth:`db_file` with ``refresh=True``, to convert again).
    Examples are stored as dicts of their columns; images become uint8 numpy arrays.
    """

    __slots__ = ("_name", "_subset", "_base_dir", "_token", "_cache_dir", "_data_dir", "_data_files")

    def __init__(self, name: str) -> None:
        if not isinstance(name, str) or not name:
            raise DatasetError(f"HuggingfaceDatasetLoader: expected a dataset name such as 'mnist', got {name!r}.")
        self._name = name
        self._subset: str | None = None
        self._base_dir: Path | None = None
        self._token: str | None = None
        self._cache_dir: str | None = None
        self._data_dir: str | None = None
        self._data_files: Any = None

    @classmethod
    def new(cls, name: str) -> HuggingfaceDatasetLoader:
        """Burn's constructor name."""
        return cls(name)

    def with_subset(self, subset: str) -> HuggingfaceDatasetLoader:
        """The configuration name (``load_dataset``'s ``name``)."""
        self._subset = subset
        return self

    def with_base_dir(self, base_dir: str | os.PathLike[str]) -> HuggingfaceDatasetLoader:
        """Where the ``.db`` file is written."""
        self._base_dir = Path(base_dir)
        return self

    def with_huggingface_token(self, token: str) -> HuggingfaceDatasetLoader:
        self._token = token
        return self

    def with_huggingface_cache_dir(self, cache_dir: str | os.PathLike[str]) -> HuggingfaceDatasetLoader:
        self._cache_dir = os.fspath(cache_dir)
        return self

    def with_huggingface_data_dir(self, data_dir: str | os.PathLike[str]) -> HuggingfaceDatasetLoader:
        self._data_dir = os.fspath(data_dir)
        return self

    def with_data_files(self, data_files: str | Sequence[str] | Mapping[str, Any]) -> HuggingfaceDatasetLoader:
        """``load_dataset``'s ``data_files``: a path, a list, or a dict ``{split: path(s)}``."""
        if isinstance(data_files, Mapping):
            self._data_files = {k: _fspaths(v) for k, v in data_files.items()}
        else:
            self._data_files = _fspaths(data_files)
        return self

    def db_file(self, *, refresh: bool = False) -> Path:
        """The SQLite file, converted from Hugging Face first if absent (or if ``refresh``).

        Raises:
            DatasetError: ``datasets`` is not installed, or loading the dataset failed (with its message).
        """
        stem = self._name.replace("/", "_")
        if self._subset:
            stem += f"-{self._subset}"
        if self._data_files is not None or self._data_dir is not None:
            key = json.dumps([self._data_files, self._data_dir, _stats(self._data_files)], sort_keys=True)
            stem += "-" + hashlib.sha256(key.encode()).hexdigest()[:12]
        path = (self._base_dir or _default_base_dir()) / f"{stem}.db"
        if path.exists() and not refresh:
            return path
        try:
            datasets = importlib.import_module("datasets")
        except ImportError:
            from .._install import install_command

            raise DatasetError(
                f"HuggingfaceDatasetLoader needs the 'datasets' library, which is not installed: "
                f"{install_command('ember-core', 'huggingface')} (or pip install datasets)."
            ) from None
        kwargs: dict[str, Any] = {}
        for key, value in (("name", self._subset), ("token", self._token), ("cache_dir", self._cache_dir),
                           ("data_dir", self._data_dir), ("data_files", self._data_files)):
            if value is not None:
                kwargs[key] = value
        try:
            loaded = datasets.load_dataset(self._name, **kwargs)
        except Exception as exc:
            shown = {k: ("***" if k == "token" else v) for k, v in kwargs.items()}
            raise DatasetError(
                f"HuggingfaceDatasetLoader: datasets.load_dataset({self._name!r}, **{shown}) failed: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        return write_huggingface_dataset(loaded, path, overwrite=True)

    def dataset(self, split: str, item_type: Callable[..., I] | None = None) -> SqliteDataset[I]:
        """The split as an :class:`SqliteDataset` (items are dicts, or ``item_type(**row)``)."""
        return SqliteDataset(self.db_file(), split, item_type)


def _stats(data_files: Any) -> list[Any]:
    """Size and modification time of the local data files, so that an edited file is converted again."""
    if data_files is None:
        return []
    paths = data_files.values() if isinstance(data_files, Mapping) else [data_files]
    out = []
    for group in paths:
        for p in [group] if isinstance(group, str) else group:
            try:
                st = os.stat(p)
                out.append([p, st.st_size, st.st_mtime_ns])
            except OSError:
                pass
    return out


def _fspaths(value: Any) -> Any:
    if isinstance(value, (str, os.PathLike)):
        return os.fspath(value)
    return [os.fspath(v) for v in value]
