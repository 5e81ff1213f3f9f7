"""The guide's batcher (Burn book, "Guide": ``src/data.rs``)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ember import Int, Tensor
from ember.backend import Device
from ember.data.vision import MnistItem

__all__ = ["MnistBatch", "MnistBatcher", "MNIST_MEAN", "MNIST_STD"]

#: Mean and standard deviation of the MNIST training pixels scaled to [0, 1] (the values Burn's guide and
#: PyTorch's MNIST example use).
MNIST_MEAN = 0.1307
MNIST_STD = 0.3081


@dataclass(frozen=True)
class MnistBatch:
    """A batch: ``images`` Float ``[batch, 28, 28]`` (normalized), ``targets`` Int ``[batch]``."""

    images: Tensor
    targets: Tensor


class MnistBatcher:
    """Stacks :class:`~ember.data.vision.MnistItem` s into a :class:`MnistBatch` on the loader's device.

    Pixels become ``((x / 255) - 0.1307) / 0.3081`` in the backend's float type, as in Burn's guide. The
    data loader passes the device (the Learner points the training loader at the autodiff device and the
    validation loader at its inner device), so one batcher serves both. Thread-safe (no state).
    """

    def batch(self, items: list[MnistItem], device: Device) -> MnistBatch:
        images = np.stack([item.image for item in items]).astype(np.float32)  # [batch, 28, 28]
        images = ((images / 255.0) - MNIST_MEAN) / MNIST_STD
        targets = np.fromiter((item.label for item in items), dtype=np.int64, count=len(items))
        return MnistBatch(images=Tensor.from_data(images, device), targets=Tensor.from_data(targets, device, Int))
