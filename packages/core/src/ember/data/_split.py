"""``split_dataloader``: one data loader per device (Burn's ``split_dataloader``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from ._dataloader import DataLoader
from ._errors import DatasetError

__all__ = ["split_dataloader"]

O = TypeVar("O")  # noqa: E741


def split_dataloader(loader: DataLoader[O], devices: Sequence[Any]) -> list[DataLoader[O]]:
    """Split ``loader`` into ``len(devices)`` loaders over consecutive parts of its dataset, the k-th
    making its batches on ``devices[k]`` (for data-parallel training, as Burn's ``split_dataloader``).

    Each part has ``num_items // len(devices)`` items, the last one also the remainder; the parts are
    taken before shuffling and each is shuffled on its own with the loader's seed.

    Raises:
        DatasetError: ``devices`` is empty.
    """
    devices = list(devices)
    if not devices:
        raise DatasetError("split_dataloader: expected at least one device, got none.")
    n = loader.num_items()
    step = n // len(devices)
    parts = []
    start = 0
    for k, device in enumerate(devices):
        end = n if k == len(devices) - 1 else start + step
        parts.append(loader.slice(start, end).to_device(device))
        start = end
    return parts
