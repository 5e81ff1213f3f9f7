"""Vision datasets (Burn's ``burn::data::dataset::vision``)."""

from __future__ import annotations

from ._mnist import MIRRORS, MnistDataset, MnistItem, mnist_dir, mnist_missing

__all__ = ["MIRRORS", "MnistDataset", "MnistItem", "mnist_dir", "mnist_missing"]
