"""``SelectionDataset``: a dataset seen through a chosen list of indices (Burn's ``SelectionDataset``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

import numpy as np

from ._dataset import Dataset
from ._errors import DatasetError
from ._indexed import IndexedView, as_indices

__all__ = ["SelectionDataset"]

I = TypeVar("I")  # noqa: E741


class SelectionDataset(IndexedView[I]):
    """Item ``i`` is ``dataset.get(indices[i])``: a subset, a reordering or repetitions, lazily.

    >>> SelectionDataset(InMemDataset("abcd"), [3, 0, 0]).get(1)
    'a'

    Args:
        dataset: the dataset to select from.
        indices: integer indices into ``dataset`` (any order, repeats allowed).

    Raises:
        DatasetError: an index outside ``[0, len(dataset))`` (names it and its position).
    """

    __slots__ = ()

    def __init__(self, dataset: Dataset[I], indices: Iterable[int] | np.ndarray) -> None:
        self._check("SelectionDataset", dataset)
        super().__init__(dataset, as_indices("SelectionDataset", indices, len(dataset)))

    @classmethod
    def from_indices_checked(cls, dataset: Dataset[I], indices: Iterable[int] | np.ndarray) -> SelectionDataset[I]:
        """Burn's ``from_indices_checked`` (the same as the constructor)."""
        return cls(dataset, indices)

    @classmethod
    def from_indices_unchecked(cls, dataset: Dataset[I], indices: Iterable[int] | np.ndarray) -> SelectionDataset[I]:
        """Burn's ``from_indices_unchecked``: skips the range check (an out-of-range index then reads as
        ``None``, or as an error of the underlying dataset)."""
        self = cls.__new__(cls)
        cls._check("SelectionDataset", dataset)
        IndexedView.__init__(self, dataset, as_indices("SelectionDataset", indices, None))
        return self

    @classmethod
    def new_select_all(cls, dataset: Dataset[I]) -> SelectionDataset[I]:
        """Every item, in order (Burn's ``new_select_all``)."""
        cls._check("SelectionDataset.new_select_all", dataset)
        return cls(dataset, np.arange(len(dataset), dtype=np.int64))

    @classmethod
    def new_shuffled(cls, dataset: Dataset[I], seed: int | None = None) -> SelectionDataset[I]:
        """Every item in a random order from ``numpy.random.default_rng(seed)`` (Burn's ``new_shuffled``)."""
        return cls.new_select_all(dataset).shuffled(seed)

    def shuffled(self, seed: int | None = None) -> SelectionDataset[I]:
        """A new selection holding these indices in a random order (Burn's ``shuffle``, which mutates
        in place; here datasets are immutable so that loader workers can share them)."""
        perm = np.random.default_rng(seed).permutation(len(self._indices))
        return type(self).from_indices_unchecked(self._dataset, self._indices[perm])

    def slice(self, start: int, end: int) -> SelectionDataset[I]:
        """The selection's positions ``start:end`` (Burn's ``slice``).

        Raises:
            DatasetError: not ``0 <= start <= end <= len(self)``.
        """
        if not (isinstance(start, int) and isinstance(end, int) and 0 <= start <= end <= len(self)):
            raise DatasetError(
                f"SelectionDataset.slice: need 0 <= start <= end <= {len(self)}, got ({start!r}, {end!r})."
            )
        return type(self).from_indices_unchecked(self._dataset, self._indices[start:end])
