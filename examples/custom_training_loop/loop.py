"""The manual loop of the Burn book's "Custom Training Loop" chapter (no Learner)."""

from __future__ import annotations

import os
from typing import Any

from ember import Tensor
from ember.autodiff import AutodiffDevice
from ember.config import config
from ember.data import DataLoader, DataLoaderBuilder, Dataset
from ember.data.vision import MnistDataset
from ember.nn.loss import CrossEntropyLossConfig
from ember.optim import AdamConfig, GradientsParams
from guide.data import MnistBatch, MnistBatcher
from guide.model import ModelConfig

__all__ = ["MnistTrainingConfig", "accuracy", "run"]


@config
class MnistTrainingConfig:
    """The chapter's configuration (its defaults; the chapter's model is ``ModelConfig(10, 1024)``)."""

    model: ModelConfig
    optimizer: AdamConfig
    num_epochs: int = 10
    batch_size: int = 64
    num_workers: int = 4
    seed: int = 42
    lr: float = 1e-4


def accuracy(output: Tensor, targets: Tensor) -> float:
    """Percentage of rows of ``output`` ``[batch, num_classes]`` whose argmax equals ``targets`` ``[batch]``."""
    predictions = output.argmax(1).reshape([targets.shape[0]])
    correct = predictions.equal(targets).int().sum().into_scalar()
    return 100.0 * float(correct) / targets.shape[0]


def run(device: AutodiffDevice | Any, config: MnistTrainingConfig | None = None,
        data_dir: str | os.PathLike[str] | None = None, *, train_dataset: Dataset[Any] | None = None,
        test_dataset: Dataset[Any] | None = None, log_every: int = 1) -> list[tuple[float, float]]:
    """Train and validate by hand; prints a line per iteration (every ``log_every``) as the chapter does.

    Args:
        device: an autodiff device (``Autodiff(ember.backend("numpy")).device()``).
        config: default ``MnistTrainingConfig(ModelConfig(10, 1024), AdamConfig())``.
        data_dir: the MNIST directory (default ``EMBER_DATA_DIR`` / cache / download).
        train_dataset, test_dataset: replace the MNIST splits (e.g. a ``PartialDataset``).
        log_every: print every this many iterations (1: all, as Burn's example).

    Returns:
        Per epoch, ``(mean validation loss, validation accuracy in %)`` (weighted by batch size).
    """
    config = config or MnistTrainingConfig(ModelConfig(10, 1024), AdamConfig())
    device.backend.seed(config.seed)

    # Create the model and optimizer.
    model = config.model.init(device)
    optim = config.optimizer.init()

    # Create the data loaders; the validation one yields batches on the inner (non-autodiff) device.
    batcher = MnistBatcher()
    inner = device.inner  # the inner backend's device (the device itself without autodiff)
    dataloader_train: DataLoader[MnistBatch] = (
        DataLoaderBuilder(batcher).batch_size(config.batch_size).shuffle(config.seed)
        .num_workers(config.num_workers).set_device(device)
        .build(train_dataset if train_dataset is not None else MnistDataset.train(data_dir)))
    dataloader_test: DataLoader[MnistBatch] = (
        DataLoaderBuilder(batcher).batch_size(config.batch_size).shuffle(config.seed)
        .num_workers(config.num_workers).set_device(inner)
        .build(test_dataset if test_dataset is not None else MnistDataset.test(data_dir)))
    loss_fn = CrossEntropyLossConfig().init(device)
    history: list[tuple[float, float]] = []

    # --8<-- [start:loop]
    # Iterate over our training and validation loop for X epochs.
    for epoch in range(1, config.num_epochs + 1):
        # Implement our training loop.
        for iteration, batch in enumerate(dataloader_train):
            output = model.forward(batch.images)
            loss = loss_fn.forward(output, batch.targets)
            if iteration % log_every == 0:
                print(f"[Train - Epoch {epoch} - Iteration {iteration}] Loss {loss.into_scalar():.3f} | "
                      f"Accuracy {accuracy(output, batch.targets):.3f} %")
            # Gradients for the current backward pass.
            grads = loss.backward()
            # Gradients linked to each parameter of the model.
            grads_params = GradientsParams.from_grads(grads, model)
            # Update the model using the optimizer.
            model = optim.step(config.lr, model, grads_params)

        # Get the model without autodiff.
        model_valid = model.valid()

        # Implement our validation loop.
        total_loss = total_correct = 0.0
        total = 0
        for iteration, batch in enumerate(dataloader_test):
            output = model_valid.forward(batch.images)
            valid_loss = float(loss_fn.forward(output, batch.targets).into_scalar())
            acc = accuracy(output, batch.targets)
            n = batch.targets.shape[0]
            total_loss, total_correct, total = total_loss + valid_loss * n, total_correct + acc * n / 100.0, total + n
            if iteration % log_every == 0:
                print(f"[Valid - Epoch {epoch} - Iteration {iteration}] Loss {valid_loss:.3f} | Accuracy {acc:.3f} %")
        history.append((total_loss / max(total, 1), 100.0 * total_correct / max(total, 1)))
        print(f"[Valid - Epoch {epoch}] Loss {history[-1][0]:.3f} | Accuracy {history[-1][1]:.2f} %")
    # --8<-- [end:loop]
    return history
