"""``PartialDataset``: a contiguous range of a dataset (Burn's ``PartialDataset``)."""

from __future__ import annotations

from typing import TypeVar

from ._dataset import Dataset, check_dataset
from ._errors import DatasetError

__all__ = ["PartialDataset"]

I = TypeVar("I")  # noqa: E741


class PartialDataset(Dataset[I]):
    """Items ``start .. end - 1`` of ``dataset``: item ``i`` is ``dataset.get(start + i)``.

    ``end`` is clamped to ``len(dataset)``, so ``PartialDataset(ds, 0, 10**9)`` is all of ``ds``.

    Args:
        dataset: the dataset to read.
        start: the first index, ``>= 0``.
        end: one past the last index, ``>= start``.

    Raises:
        DatasetError: ``start < 0`` or ``end < start``.
    """

    __slots__ = ("_dataset", "_start", "_end")

    def __init__(self, dataset: Dataset[I], start: int, end: int) -> None:
        check_dataset("PartialDataset", dataset)
        if not (isinstance(start, int) and isinstance(end, int) and 0 <= start <= end):
            raise DatasetError(f"PartialDataset: need integers 0 <= start <= end, got start={start!r}, end={end!r}.")
        self._dataset = dataset
        self._start = min(start, len(dataset))
        self._end = min(end, len(dataset))

    @classmethod
    def split(cls, dataset: Dataset[I], num: int) -> list[PartialDataset[I]]:
        """``num`` consecutive parts of ``len(dataset) // num`` items, the last one taking the rest
        (Burn's ``PartialDataset::split``).

        Raises:
            DatasetError: ``num < 1``.
        """
        if not isinstance(num, int) or num < 1:
            raise DatasetError(f"PartialDataset.split: num must be an int >= 1, got {num!r}.")
        n = len(check_dataset("PartialDataset.split", dataset))
        step = n // num
        return [cls(dataset, k * step, n if k == num - 1 else (k + 1) * step) for k in range(num)]

    @property
    def dataset(self) -> Dataset[I]:
        return self._dataset

    @property
    def start(self) -> int:
        return self._start

    @property
    def end(self) -> int:
        return self._end

    def get(self, index: int) -> I | None:
        if 0 <= index < self._end - self._start:
            return self._dataset.get(self._start + index)
        return None

    def __len__(self) -> int:
        return self._end - self._start

    def __repr__(self) -> str:
        return f"PartialDataset(start={self._start}, end={self._end})"
