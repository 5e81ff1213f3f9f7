"""``IndexedView``: a dataset reading another one through an array of indices (shared by the
sampler, shuffled and selection datasets)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeVar

import numpy as np

from ._dataset import Dataset, check_dataset
from ._errors import DatasetError

__all__ = ["IndexedView", "as_indices"]

I = TypeVar("I")  # noqa: E741


def as_indices(op: str, indices: Iterable[int] | np.ndarray, length: int | None) -> np.ndarray:
    """``indices`` as a read-only int64 array; with ``length``, checked to lie in ``[0, length)``.

    Raises:
        DatasetError: a non-integer or out-of-range index (names the first offender and its position).
    """
    arr = np.asarray(indices if isinstance(indices, np.ndarray) else list(indices))
    if arr.size == 0:
        arr = arr.astype(np.int64)
    if arr.ndim != 1 or arr.dtype.kind not in "iu":
        raise DatasetError(f"{op}: expected a 1-D sequence of integer indices, found shape {arr.shape} of {arr.dtype}.")
    arr = arr.astype(np.int64, copy=True)
    if length is not None and arr.size:
        bad = np.flatnonzero((arr < 0) | (arr >= length))
        if bad.size:
            k = int(bad[0])
            raise DatasetError(
                f"{op}: index {int(arr[k])} at position {k} is out of range for a dataset of {length} items "
                f"({bad.size} indices out of range)."
            )
    arr.flags.writeable = False
    return arr


class IndexedView(Dataset[I]):
    """Item ``i`` is ``dataset.get(indices[i])``."""

    __slots__ = ("_dataset", "_indices")

    def __init__(self, dataset: Dataset[I], indices: np.ndarray) -> None:
        self._dataset = dataset
        self._indices = indices

    @property
    def dataset(self) -> Dataset[I]:
        """The dataset read through the indices."""
        return self._dataset

    @property
    def indices(self) -> np.ndarray:
        """The indices into :attr:`dataset`, ``[len]`` int64 (read-only)."""
        return self._indices

    def get(self, index: int) -> I | None:
        indices = self._indices
        if 0 <= index < len(indices):
            return self._dataset.get(int(indices[index]))
        return None

    def __len__(self) -> int:
        return len(self._indices)

    @staticmethod
    def _check(op: str, dataset: Any) -> Any:
        return check_dataset(op, dataset)
