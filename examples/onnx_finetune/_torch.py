"""The PyTorch side: the guide's CNN, a short pre-training run and the ONNX export."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from guide.data import MNIST_MEAN, MNIST_STD

__all__ = ["GuideCnn", "pretrain_torch", "export_onnx", "arrays"]


class GuideCnn(nn.Module):
    """The MNIST guide's model in PyTorch (``examples/guide/model.py``); images ``[batch, 28, 28]``."""

    def __init__(self, hidden: int = 512, dropout: float = 0.5) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3)
        self.conv2 = nn.Conv2d(8, 16, 3)
        self.pool = nn.AdaptiveAvgPool2d((8, 8))
        self.dropout = nn.Dropout(dropout)
        self.linear1 = nn.Linear(16 * 8 * 8, hidden)
        self.linear2 = nn.Linear(hidden, 10)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        b, h, w = images.shape
        x = self.dropout(self.conv1(images.reshape(b, 1, h, w)))
        x = torch.relu(self.dropout(self.conv2(x)))
        x = self.pool(x).reshape(b, 16 * 8 * 8)
        return self.linear2(torch.relu(self.dropout(self.linear1(x))))


def arrays(dataset: Any, limit: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(images [n, 28, 28] float32 normalized as the guide's batcher does, labels [n] int64)``."""
    n = len(dataset) if limit is None else min(limit, len(dataset))
    items = [dataset.get(i) for i in range(n)]
    images = np.stack([it.image for it in items]).astype(np.float32)
    labels = np.fromiter((it.label for it in items), dtype=np.int64, count=n)
    return ((images / 255.0) - MNIST_MEAN) / MNIST_STD, labels


def pretrain_torch(train: Any, steps: int, batch_size: int = 64, seed: int = 42, lr: float = 1e-4) -> GuideCnn:
    """Train :class:`GuideCnn` with Adam (the guide's settings) for ``steps`` batches of ``train``."""
    torch.manual_seed(seed)
    model = GuideCnn()
    opt = torch.optim.Adam(model.parameters(), lr=lr, eps=1e-5)
    images, labels = arrays(train, steps * batch_size)
    x, y = torch.from_numpy(images), torch.from_numpy(labels)
    model.train()
    for i in range(0, steps * batch_size, batch_size):
        opt.zero_grad(set_to_none=True)
        nn.functional.cross_entropy(model(x[i:i + batch_size]), y[i:i + batch_size]).backward()
        opt.step()
    return model.eval()


def export_onnx(model: GuideCnn, path: Path, training: bool = False) -> Path:
    """Export ``model`` to ``path`` with a dynamic batch dim: in eval mode (dropout removed), or with
    ``training=True`` in training mode (``Dropout`` nodes kept, as a model to train needs them)."""
    mode = torch.onnx.TrainingMode.TRAINING if training else torch.onnx.TrainingMode.EVAL
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (torch.zeros(1, 28, 28),), str(path), dynamo=False, opset_version=17,
                          input_names=["images"], output_names=["logits"], training=mode,
                          do_constant_folding=not training,
                          dynamic_axes={"images": {0: "batch"}, "logits": {0: "batch"}})
    return path
