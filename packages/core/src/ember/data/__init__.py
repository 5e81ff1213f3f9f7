"""``ember.data``: datasets, transforms, SQLite storage, batchers and data loaders (Burn's ``burn::data``).

.. code-block:: python

    from ember.data import DataLoaderBuilder
    from ember.data.vision import MnistDataset

    loader = (DataLoaderBuilder(MnistBatcher()).batch_size(64).shuffle(42).num_workers(4)
              .build(MnistDataset.train()))
    for batch in loader:            # an epoch; len(loader) batches
        ...

- Datasets: :class:`Dataset` (``get(index) -> item | None``, ``len``), :class:`InMemDataset`,
  :class:`SqliteDataset` / :class:`SqliteDatasetWriter`, ``ember.data.vision.MnistDataset``,
  :class:`HuggingfaceDatasetLoader` (optional ``datasets`` library).
- Lazy transforms: :class:`SamplerDataset`, :class:`ShuffledDataset`, :class:`PartialDataset`,
  :class:`MapperDataset`, :class:`ComposedDataset`, :class:`WindowsDataset`, :class:`SelectionDataset`.
- Loading: :class:`Batcher`, :class:`DataLoaderBuilder`, :class:`DataLoader`,
  :class:`DataLoaderIterator` (``progress()``), :func:`split_dataloader`.
"""

from __future__ import annotations

from ._batcher import Batcher
from ._dataloader import DataLoader
from ._dataloader_builder import DataLoaderBuilder
from ._dataloader_iter import DataLoaderIterator
from ._dataset import Dataset
from ._errors import DataLoaderError, DatasetError
from ._huggingface import HuggingfaceDatasetLoader
from ._in_memory import InMemDataset
from ._progress import Progress
from ._split import split_dataloader
from ._sqlite import SqliteDataset
from ._sqlite_writer import SqliteDatasetWriter
from ._transform_composed import ComposedDataset
from ._transform_mapper import Mapper, MapperDataset
from ._transform_partial import PartialDataset
from ._transform_sampler import SamplerDataset
from ._transform_selection import SelectionDataset
from ._transform_shuffle import ShuffledDataset
from ._transform_window import WindowsDataset

__all__ = [
    "Batcher",
    "ComposedDataset",
    "DataLoader",
    "DataLoaderBuilder",
    "DataLoaderError",
    "DataLoaderIterator",
    "Dataset",
    "DatasetError",
    "HuggingfaceDatasetLoader",
    "InMemDataset",
    "Mapper",
    "MapperDataset",
    "PartialDataset",
    "Progress",
    "SamplerDataset",
    "SelectionDataset",
    "ShuffledDataset",
    "SqliteDataset",
    "SqliteDatasetWriter",
    "WindowsDataset",
    "split_dataloader",
]
