"""``ComposedDataset``: several datasets one after another (Burn's ``ComposedDataset``)."""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterable
from typing import TypeVar

from ._dataset import Dataset, check_dataset

__all__ = ["ComposedDataset"]

I = TypeVar("I")  # noqa: E741


class ComposedDataset(Dataset[I]):
    """The concatenation of ``datasets``: the items of the first, then of the second, and so on
    (``torch.utils.data.ConcatDataset``). Item lookup is a binary search over the cumulative lengths.

    Raises:
        TypeError: an element is not a dataset.
    """

    __slots__ = ("_datasets", "_ends")

    def __init__(self, datasets: Iterable[Dataset[I]]) -> None:
        self._datasets = [check_dataset(f"ComposedDataset (dataset {k})", d) for k, d in enumerate(datasets)]
        self._ends = list(itertools.accumulate(len(d) for d in self._datasets))

    @property
    def datasets(self) -> list[Dataset[I]]:
        return list(self._datasets)

    def get(self, index: int) -> I | None:
        ends = self._ends
        if not ends or not 0 <= index < ends[-1]:
            return None
        k = bisect.bisect_right(ends, index)
        return self._datasets[k].get(index - (ends[k - 1] if k else 0))

    def __len__(self) -> int:
        return self._ends[-1] if self._ends else 0
