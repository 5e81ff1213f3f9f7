"""``WindowsDataset``: sliding windows of consecutive items (Burn's ``WindowsDataset``)."""

from __future__ import annotations

from typing import TypeVar

from ._dataset import Dataset, check_dataset
from ._errors import DatasetError

__all__ = ["WindowsDataset"]

I = TypeVar("I")  # noqa: E741


class WindowsDataset(Dataset[list[I]]):
    """Item ``i`` is the list ``[dataset.get(i), ..., dataset.get(i + size - 1)]``.

    There are ``max(len(dataset) - size + 1, 0)`` windows (stride 1), as in Burn; use it for sequence
    models (time series, language modelling).

    Raises:
        DatasetError: ``size < 1``.
    """

    __slots__ = ("_dataset", "_size")

    def __init__(self, dataset: Dataset[I], size: int) -> None:
        check_dataset("WindowsDataset", dataset)
        if not isinstance(size, int) or isinstance(size, bool) or size < 1:
            raise DatasetError(f"WindowsDataset: size must be an int >= 1, got {size!r}.")
        self._dataset = dataset
        self._size = size

    @property
    def size(self) -> int:
        """The number of items in a window."""
        return self._size

    def get(self, index: int) -> list[I] | None:
        if not 0 <= index < len(self):
            return None
        get = self._dataset.get
        window = [get(index + k) for k in range(self._size)]
        if any(item is None for item in window):
            return None
        return window  # type: ignore[return-value]

    def __len__(self) -> int:
        return max(len(self._dataset) - self._size + 1, 0)

    def __repr__(self) -> str:
        return f"WindowsDataset(len={len(self)}, size={self._size})"
