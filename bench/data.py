"""Benchmark: MNIST through the guide's batcher with 0 and 4 data-loader workers (issue 7).

Not a test: prints samples/s, never asserts on time. The target is >= 20,000 samples/s on the numpy
backend, so that data loading never bounds guide training (a guide step takes ~16-48 ms per 64 items,
i.e. 1,300-4,000 samples/s). The raw-numpy baseline does the same work (gather 64 images by shuffled
index, normalize, stack to [64, 28, 28] float32) without the loader; the ratio is Ember's overhead.

Run: python bench/data.py [--epochs N] [--root DIR] [--sqlite]   (MNIST from --root, EMBER_DATA_DIR,
../shared/data/mnist beside the repo, or the cache directory). ``--sqlite`` also measures the same
items stored in an SqliteDataset (written to a temporary file first).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np

import ember
from ember import Tensor
from ember.data import DataLoaderBuilder, SqliteDataset, SqliteDatasetWriter
from ember.data.vision import MnistDataset, MnistItem

MEAN, STD = 0.1307, 0.3081  # MNIST pixel mean and std (Burn's and PyTorch's MNIST examples)


class MnistBatch:
    __slots__ = ("images", "targets")

    def __init__(self, images: Tensor, targets: Tensor) -> None:
        self.images = images  # [batch, 28, 28] Float
        self.targets = targets  # [batch] Int


class MnistBatcher:
    """The guide's batcher: normalize ((x / 255) - 0.1307) / 0.3081 and stack to [batch, 28, 28]."""

    def batch(self, items: list[MnistItem], device: ember.Device) -> MnistBatch:
        images = np.stack([it.image for it in items]).astype(np.float32)
        images = (images / np.float32(255) - np.float32(MEAN)) / np.float32(STD)
        targets = np.array([it.label for it in items], dtype=np.int64)
        return MnistBatch(Tensor.from_data(images, device), Tensor.from_data(targets, device))


def _root(arg: str | None) -> str | None:
    if arg:
        return arg
    if os.environ.get("EMBER_DATA_DIR"):
        return None
    shared = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "mnist"
    return str(shared) if shared.is_dir() else None


def raw_numpy_epoch(images: np.ndarray, labels: np.ndarray, seed: int, batch_size: int) -> int:
    order = np.random.default_rng(seed).permutation(len(images))
    n = 0
    for start in range(0, len(order), batch_size):
        idx = order[start:start + batch_size]
        x = (images[idx].astype(np.float32) / np.float32(255) - np.float32(MEAN)) / np.float32(STD)
        y = labels[idx].astype(np.int64)
        assert len(x) == len(y)
        n += len(x)
    return n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--root", default=None)
    parser.add_argument("--sqlite", action="store_true", help="also read the items from an SqliteDataset")
    args = parser.parse_args()

    device = ember.backend("numpy").device()
    t0 = time.perf_counter()
    train = MnistDataset.train(_root(args.root))
    print(f"MnistDataset.train(): {len(train)} items read in {time.perf_counter() - t0:.2f} s")

    sources: dict[str, object] = {"": train}
    tmp = tempfile.TemporaryDirectory()
    if args.sqlite:
        db = Path(tmp.name) / "mnist.db"
        t0 = time.perf_counter()
        with SqliteDatasetWriter(db) as writer:
            for i in range(len(train)):
                item = train.get(i)
                writer.write("train", {"image": item.image, "label": item.label})
        print(f"SqliteDatasetWriter: {len(train)} items written in {time.perf_counter() - t0:.2f} s")
        sources["SQLite, "] = SqliteDataset(db, "train", MnistItem)

    results: dict[str, float] = {}
    for _ in range(args.epochs):  # interleave the variants: other jobs share this machine
        t0 = time.perf_counter()
        n = raw_numpy_epoch(train.images, train.labels, 0, args.batch_size)
        results.setdefault("raw numpy", 0.0)
        results["raw numpy"] = max(results["raw numpy"], n / (time.perf_counter() - t0))
        for label, dataset in sources.items():
            for workers in (0, 4):
                loader = (DataLoaderBuilder(MnistBatcher()).batch_size(args.batch_size).shuffle(42)
                          .num_workers(workers).set_device(device).build(dataset))
                t0 = time.perf_counter()
                n = 0
                for batch in loader:
                    n += batch.images.shape[0]
                rate = n / (time.perf_counter() - t0)
                key = f"{label}DataLoader, {workers} workers"
                results[key] = max(results.get(key, 0.0), rate)

    base = results["raw numpy"]
    print(f"{'variant':<34}{'samples/s':>12}{'vs raw numpy':>14}   "
          f"(best of {args.epochs} epochs, batch {args.batch_size})")
    for key, rate in results.items():
        print(f"{key:<34}{rate:>12,.0f}{rate / base:>13.2f}x")
    print("target: >= 20,000 samples/s")
    sources.clear()
    tmp.cleanup()


if __name__ == "__main__":
    main()
