"""The guide's model and training loop in raw PyTorch: the reference for the Ember guide's accuracy.

Same model as ``examples/guide`` (Burn's guide: Conv2d(1->8, 3x3), Dropout, Conv2d(8->16, 3x3), Dropout, ReLU,
AdaptiveAvgPool2d(8x8), Linear(1024->512), Dropout, ReLU, Linear(512->10); dropout 0.5), same data
(``((x / 255) - 0.1307) / 0.3081``), same loop (Adam with Burn's defaults betas (0.9, 0.999) and
epsilon 1e-5, constant learning rate 1e-4, batch 64, shuffled each epoch, seed 42), and the test set as
validation set as in the guide. Prints the test accuracy after each epoch::

    python bench/mnist_torch_reference.py --epochs 1 --data-dir ../shared/data/mnist

The MNIST files are read directly (gzipped IDX, no Ember import), from ``--data-dir``, else
``$EMBER_DATA_DIR/mnist``, else ``~/.cache/ember/mnist`` (run the Ember guide once to download them).
``bench/mnist_guide.py`` imports :func:`build_model` and :func:`make_step` for the step benchmark.
"""

from __future__ import annotations

import argparse
import gzip
import os
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn

MEAN, STD = 0.1307, 0.3081


class GuideModel(nn.Module):
    """Burn's guide model; ``forward`` follows the guide op for op (one shared dropout)."""

    def __init__(self, num_classes: int = 10, hidden_size: int = 512, dropout: float = 0.5) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3)
        self.conv2 = nn.Conv2d(8, 16, 3)
        self.pool = nn.AdaptiveAvgPool2d((8, 8))
        self.dropout = nn.Dropout(dropout)
        self.linear1 = nn.Linear(16 * 8 * 8, hidden_size)
        self.linear2 = nn.Linear(hidden_size, num_classes)
        self.activation = nn.ReLU()

    def forward(self, images: torch.Tensor) -> torch.Tensor:  # [batch, 28, 28] -> [batch, num_classes]
        b, h, w = images.shape
        x = images.reshape(b, 1, h, w)
        x = self.dropout(self.conv1(x))
        x = self.dropout(self.conv2(x))
        x = self.activation(x)
        x = self.pool(x).reshape(b, 16 * 8 * 8)
        x = self.activation(self.dropout(self.linear1(x)))
        return self.linear2(x)


def build_model(seed: int = 42) -> tuple[GuideModel, torch.optim.Optimizer]:
    """The model (PyTorch's default init, which Burn's and Ember's defaults equal) and Adam with Burn's defaults."""
    torch.manual_seed(seed)
    model = GuideModel()
    return model, torch.optim.Adam(model.parameters(), lr=1e-4, betas=(0.9, 0.999), eps=1e-5)


def make_step(model: GuideModel, optim: torch.optim.Optimizer):  # noqa: ANN201 - a closure
    """``step(images, targets) -> loss tensor``: forward, cross-entropy, backward, Adam."""
    loss_fn = nn.CrossEntropyLoss()

    def step(images: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        optim.zero_grad(set_to_none=True)
        loss = loss_fn(model(images), targets)
        loss.backward()
        optim.step()
        return loss

    return step


def mnist_dir(data_dir: str | None) -> Path:
    if data_dir:
        return Path(data_dir)
    env = os.environ.get("EMBER_DATA_DIR")
    if env:
        return Path(env) / "mnist" if (Path(env) / "mnist").is_dir() else Path(env)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ember" / "mnist"


def read_idx(path: Path) -> np.ndarray:
    """An IDX file (gzipped or not) as a numpy array (uint8 data, big-endian header of int32 dims)."""
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    ndim = raw[3]
    dims = np.frombuffer(raw, dtype=">i4", count=ndim, offset=4)
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def load_split(directory: Path, split: str) -> tuple[np.ndarray, np.ndarray]:
    """``(images [n, 28, 28] float32 normalized, labels [n] int64)``."""
    prefix = "train" if split == "train" else "t10k"
    files = {}
    for kind, nd in (("images", "idx3"), ("labels", "idx1")):
        stem = f"{prefix}-{kind}-{nd}-ubyte"
        cands = [directory / (stem + ".gz"), directory / stem]
        found = next((p for p in cands if p.is_file()), None)
        if found is None:
            raise SystemExit(f"MNIST file {stem}(.gz) not found in {directory}: pass --data-dir.")
        files[kind] = read_idx(found)
    images = ((files["images"].astype(np.float32) / 255.0) - MEAN) / STD
    return images, files["labels"].astype(np.int64)


def evaluate(model: GuideModel, images: torch.Tensor, labels: torch.Tensor, batch_size: int = 1000) -> float:
    """Test accuracy in percent (dropout off)."""
    model.eval()
    correct = 0
    with torch.no_grad():
        for i in range(0, len(images), batch_size):
            correct += int((model(images[i:i + batch_size]).argmax(1) == labels[i:i + batch_size]).sum())
    model.train()
    return 100.0 * correct / len(images)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--data-dir", default=None)
    args = p.parse_args()

    directory = mnist_dir(args.data_dir)
    x_train, y_train = (torch.from_numpy(a) for a in load_split(directory, "train"))
    x_test, y_test = (torch.from_numpy(a) for a in load_split(directory, "test"))
    model, optim = build_model(args.seed)
    step = make_step(model, optim)
    rng = np.random.default_rng(args.seed)
    for epoch in range(1, args.epochs + 1):
        start = time.perf_counter()
        order = torch.from_numpy(rng.permutation(len(x_train)))
        for i in range(0, len(order), args.batch_size):
            idx = order[i:i + args.batch_size]
            step(x_train[idx], y_train[idx])
        took = time.perf_counter() - start
        print(f"epoch {epoch}: test accuracy {evaluate(model, x_test, y_test):.2f} % (train {took:.1f} s)", flush=True)


if __name__ == "__main__":
    main()
