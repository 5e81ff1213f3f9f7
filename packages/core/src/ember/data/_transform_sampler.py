"""``SamplerDataset``: a fixed number of items drawn at random (Burn's ``SamplerDataset``)."""

from __future__ import annotations

from typing import TypeVar

import numpy as np

from ._dataset import Dataset
from ._errors import DatasetError
from ._indexed import IndexedView

__all__ = ["SamplerDataset"]

I = TypeVar("I")  # noqa: E741


class SamplerDataset(IndexedView[I]):
    """``size`` items drawn at random from ``dataset``, with or without replacement.

    With replacement, each index is drawn uniformly and independently. Without replacement, the
    indices are a random permutation of the dataset; when ``size`` exceeds ``len(dataset)`` further
    permutations follow, so every item appears ``size // len`` or ``size // len + 1`` times (Burn
    refills its index pool the same way). Use it to set an epoch's length independently of the
    dataset's, or to oversample.

    Burn draws a fresh index on every ``get``; here the draws are made once, at construction, from
    ``numpy.random.default_rng(seed)``, so the dataset is deterministic, reproducible for a seed and
    safe to read from several threads. Build a new one (another seed) to resample.

    Args:
        dataset: the dataset to sample from (must not be empty when ``size > 0``).
        size: the number of items, ``>= 0``.
        replacement: draw with (default, as Burn's ``SamplerDataset::new``) or without replacement.
        seed: an int, or ``None`` for fresh OS entropy.

    Raises:
        DatasetError: ``size < 0``, or ``size > 0`` and ``dataset`` is empty.
    """

    __slots__ = ("_replacement", "_seed")

    def __init__(self, dataset: Dataset[I], size: int, *, replacement: bool = True, seed: int | None = None) -> None:
        self._check("SamplerDataset", dataset)
        if not isinstance(size, (int, np.integer)) or isinstance(size, bool) or size < 0:
            raise DatasetError(f"SamplerDataset: size must be an int >= 0, got {size!r}.")
        n = len(dataset)
        if size > 0 and n == 0:
            raise DatasetError("SamplerDataset: cannot draw items from an empty dataset.")
        rng = np.random.default_rng(seed)
        if size == 0:
            idx = np.zeros(0, np.int64)
        elif replacement:
            idx = rng.integers(0, n, size=int(size), dtype=np.int64)
        else:
            rounds = -(-int(size) // n)
            idx = np.concatenate([rng.permutation(n) for _ in range(rounds)])[: int(size)].astype(np.int64)
        idx.flags.writeable = False
        self._replacement = replacement
        self._seed = seed
        super().__init__(dataset, idx)

    @classmethod
    def with_replacement(cls, dataset: Dataset[I], size: int, seed: int | None = None) -> SamplerDataset[I]:
        """Burn's ``SamplerDataset::with_replacement``."""
        return cls(dataset, size, replacement=True, seed=seed)

    @classmethod
    def without_replacement(cls, dataset: Dataset[I], size: int, seed: int | None = None) -> SamplerDataset[I]:
        """Burn's ``SamplerDataset::without_replacement``."""
        return cls(dataset, size, replacement=False, seed=seed)

    @property
    def replacement(self) -> bool:
        return self._replacement

    def __repr__(self) -> str:
        return f"SamplerDataset(len={len(self)}, replacement={self._replacement}, seed={self._seed})"
