"""``ShuffledDataset``: a seeded random permutation of a dataset (Burn's ``ShuffledDataset``)."""

from __future__ import annotations

from typing import TypeVar

import numpy as np

from ._dataset import Dataset
from ._indexed import IndexedView

__all__ = ["ShuffledDataset"]

I = TypeVar("I")  # noqa: E741


class ShuffledDataset(IndexedView[I]):
    """The items of ``dataset`` in a random order, fixed at construction (lazy: items are not copied).

    Item ``i`` is ``dataset.get(perm[i])`` with ``perm = numpy.random.default_rng(seed).permutation(len)``,
    so a seed gives the same order on every machine and numpy version that keeps the ``PCG64`` stream.

    Args:
        dataset: the dataset to shuffle.
        seed: the seed (an int); ``None`` draws fresh entropy from the OS (Burn's ``ShuffledDataset::new``
            with a random RNG; :meth:`with_seed` is Burn's seeded constructor).
    """

    __slots__ = ("_seed",)

    def __init__(self, dataset: Dataset[I], seed: int | None = None) -> None:
        self._check("ShuffledDataset", dataset)
        self._seed = seed
        perm = np.random.default_rng(seed).permutation(len(dataset)).astype(np.int64)
        perm.flags.writeable = False
        super().__init__(dataset, perm)

    @classmethod
    def with_seed(cls, dataset: Dataset[I], seed: int) -> ShuffledDataset[I]:
        """Burn's ``ShuffledDataset::with_seed``."""
        return cls(dataset, seed)

    @property
    def seed(self) -> int | None:
        return self._seed

    def __repr__(self) -> str:
        return f"ShuffledDataset(len={len(self)}, seed={self._seed})"
