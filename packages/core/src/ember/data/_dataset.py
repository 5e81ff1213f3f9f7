"""``Dataset``: the protocol every dataset follows (Burn's ``burn::data::dataset::Dataset``)."""

from __future__ import annotations

import abc
import operator
from collections.abc import Iterator, Mapping
from typing import Any, Generic, TypeVar

from .._errors import IndexError_

__all__ = ["Dataset", "check_dataset"]

I = TypeVar("I")  # noqa: E741 - the item type, named as in Burn (`Dataset<I>`)


class Dataset(abc.ABC, Generic[I]):
    """A sized collection of items read by index, as Burn's ``Dataset<I>`` trait.

    A dataset implements two methods:

    - ``get(index) -> item | None``: the item at ``index``; ``None`` when ``index`` is outside
      ``[0, len)`` (Burn returns ``None`` past the end instead of failing);
    - ``__len__() -> int``: the number of items.

    Everything else has a default: iteration in index order, ``is_empty()``, ``iter()`` and
    ``dataset[i]`` (which, unlike ``get``, follows Python's sequence rules: negative indices count from
    the end and an index out of range raises ``ember.IndexError``, a subclass of the builtin
    ``IndexError``).

    The check is structural: any object with ``get`` and ``__len__`` passes
    ``isinstance(obj, Dataset)`` and is accepted wherever Ember takes a dataset. Datasets should be
    safe to read from several threads at once (the data loader's workers do so); the ones Ember
    ships are.
    """

    __slots__ = ()

    @abc.abstractmethod
    def get(self, index: int) -> I | None:
        """The item at ``index`` (``0 <= index < len(self)``), else ``None``."""

    @abc.abstractmethod
    def __len__(self) -> int:
        """The number of items."""

    def is_empty(self) -> bool:
        """Whether the dataset has no items (Burn's ``is_empty``)."""
        return len(self) == 0

    def iter(self) -> Iterator[I]:
        """The items in index order (Burn's ``iter``); stops at the first ``None``."""
        for index in range(len(self)):
            item = self.get(index)
            if item is None:
                return
            yield item

    def __iter__(self) -> Iterator[I]:
        return self.iter()

    def __getitem__(self, index: int) -> I:
        """``dataset[i]`` with Python's sequence rules (negative indices, ``IndexError``).

        Raises:
            ember.IndexError: ``index`` outside ``[-len, len)``.
            TypeError: ``index`` is not an integer (slices are not supported: use
                ``PartialDataset(dataset, start, end)`` or ``SelectionDataset(dataset, indices)``).
        """
        if isinstance(index, slice):
            raise TypeError(
                f"{type(self).__name__}[...] takes an integer index, not a slice; use "
                "PartialDataset(dataset, start, end) or SelectionDataset(dataset, indices) for views."
            )
        i = operator.index(index)
        n = len(self)
        j = i + n if i < 0 else i
        item = self.get(j) if 0 <= j < n else None
        if item is None:
            raise IndexError_(f"{type(self).__name__}: index {i} is out of range for a dataset of {n} items.")
        return item

    @classmethod
    def __subclasshook__(cls, other: type) -> Any:
        if cls is Dataset and not issubclass(other, Mapping):  # dict.get takes keys, not indices
            names = set().union(*(vars(base) for base in other.__mro__))
            if "get" in names and "__len__" in names:
                return True
        return NotImplemented

    def __repr__(self) -> str:
        return f"{type(self).__name__}(len={len(self)})"


def check_dataset(op: str, dataset: Any) -> Any:
    """Return ``dataset`` if it has ``get`` and ``__len__``, else raise a ``TypeError`` naming ``op``."""
    has_protocol = callable(getattr(dataset, "get", None)) and hasattr(type(dataset), "__len__")
    if isinstance(dataset, Mapping) or not has_protocol:
        raise TypeError(
            f"{op}: expected a dataset (an object with get(index) and __len__, e.g. InMemDataset), got "
            f"{type(dataset).__name__}. Wrap a list with InMemDataset(items)."
        )
    return dataset

