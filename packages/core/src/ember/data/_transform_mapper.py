"""``MapperDataset``: a function applied lazily to every item (Burn's ``MapperDataset``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

from ._dataset import Dataset, check_dataset

__all__ = ["Mapper", "MapperDataset"]

I = TypeVar("I")  # noqa: E741
O = TypeVar("O")  # noqa: E741
I_contra = TypeVar("I_contra", contravariant=True)
O_co = TypeVar("O_co", covariant=True)


@runtime_checkable
class Mapper(Protocol[I_contra, O_co]):
    """Burn's ``Mapper<I, O>`` trait: ``map(item) -> output``."""

    def map(self, item: I_contra) -> O_co: ...


class MapperDataset(Dataset[O], Generic[I, O]):
    """Item ``i`` is ``mapper(dataset.get(i))``, computed on every ``get`` (nothing is cached).

    Args:
        dataset: the source dataset.
        mapper: a :class:`Mapper` (an object with ``map(item)``, as in Burn) or a plain callable.
            It runs in the data loader's worker threads, so it must be thread-safe.

    Raises:
        TypeError: ``mapper`` has no ``map`` method and is not callable.
    """

    __slots__ = ("_dataset", "_fn")

    def __init__(self, dataset: Dataset[I], mapper: Mapper[I, O] | Callable[[I], O]) -> None:
        check_dataset("MapperDataset", dataset)
        fn: Any = getattr(mapper, "map", None)
        if not callable(fn):
            fn = mapper
        if not callable(fn):
            raise TypeError(f"MapperDataset: mapper must have a map(item) method or be callable, got {mapper!r}.")
        self._dataset = dataset
        self._fn = fn

    @property
    def dataset(self) -> Dataset[I]:
        return self._dataset

    def get(self, index: int) -> O | None:
        item = self._dataset.get(index)
        if item is None:
            return None
        return self._fn(item)

    def __len__(self) -> int:
        return len(self._dataset)
