"""The guide's training (Burn book, "Guide": ``src/training.rs``)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from ember.autodiff import AutodiffDevice
from ember.config import config
from ember.data import DataLoader, DataLoaderBuilder
from ember.data.vision import MnistDataset
from ember.optim import AdamConfig
from ember.record import CompactRecorder
from ember_train import DistributedDataParallel, LearnerBuilder, MlflowLogger, TensorBoardLogger, TrainingResult
from ember_train.metric import AccuracyMetric, LossMetric

from .data import MnistBatch, MnistBatcher
from .model import ModelConfig

__all__ = ["TrainingConfig", "create_artifact_dir", "train"]


@config
class TrainingConfig:
    """The experiment's configuration, saved as ``<artifact_dir>/config.json`` (Burn's guide defaults).

    Args:
        model: the :class:`~guide.model.ModelConfig`.
        optimizer: the optimizer config (the guide's ``AdamConfig()``: betas 0.9/0.999, epsilon 1e-5).
        num_epochs: passes over the 60,000 training images (10).
        batch_size: images per step (64); data-parallel, the global batch: each of ``N`` ranks (or devices) takes
            ``batch_size // N`` of it.
        num_workers: data-loading threads (4).
        seed: seeds the backend (weights, dropout masks) and the shuffling (42).
        learning_rate: constant learning rate (1e-4).
    """

    model: ModelConfig
    optimizer: AdamConfig
    num_epochs: int = 10
    batch_size: int = 64
    num_workers: int = 4
    seed: int = 42
    learning_rate: float = 1.0e-4


def create_artifact_dir(artifact_dir: str | os.PathLike[str]) -> None:
    """Remove the directory (checkpoints and logs of a previous run) and create it empty, as Burn's guide."""
    shutil.rmtree(artifact_dir, ignore_errors=True)
    Path(artifact_dir).mkdir(parents=True, exist_ok=True)


def train(artifact_dir: str | os.PathLike[str], config: TrainingConfig, device: AutodiffDevice | Any,
          data_dir: str | os.PathLike[str] | None = None, *, train_dataset: Any = None,
          test_dataset: Any = None, tensorboard: str | os.PathLike[str] | None = None,
          mlflow: str | None = None, distributed: bool = False) -> TrainingResult:
    """Train the guide's model with the Learner and save it as ``<artifact_dir>/model.mpk.gz``.

    Args:
        artifact_dir: recreated empty; receives ``config.json``, the Learner's logs and checkpoints
            (``checkpoint/``, ``train/``, ``valid/``, ``experiment.log``, ``summary.*``) and ``model.mpk.gz``.
        config: the :class:`TrainingConfig`.
        device: an autodiff device, e.g. ``Autodiff(ember.backend("numpy")).device()``; validation runs on
            its inner device.
        data_dir: the directory holding the MNIST files (default: ``EMBER_DATA_DIR``, the cache, or a
            download; see :func:`ember.data.vision.mnist_dir`).
        train_dataset, test_dataset: replace the MNIST splits (e.g. a ``PartialDataset`` for a quick run).
        tensorboard: also log to TensorBoard event files in this directory (``TensorBoardLogger``; needs
            ``ember-train[tensorboard]``).
        mlflow: also log to this MLflow tracking URI (``MlflowLogger``, e.g. ``file:/tmp/mlruns``; needs
            ``ember-train[mlflow]``).
        distributed: this process is one rank of a data-parallel run (``python -m guide train --nproc N``, or
            ``torchrun``/``ember_train.launch``): train with ``DistributedDataParallel``, each rank on
            ``batch_size // WORLD_SIZE`` images of each global batch; rank 0 alone writes the artifacts.

    ``device`` may also be a list of devices: data-parallel training on them in this process (``MultiDevice``, jax:
    one compiled step over the devices, each batch split across them).

    The Learner also writes ``plots/<Metric>.png`` and ``plots/index.html`` at each epoch end when matplotlib is
    installed (``ember-train[plot]``), and logs the config as the run's hyper-parameters.

    Returns:
        The Learner's :class:`~ember_train.TrainingResult` (``result.model`` is the trained model).

    Raises:
        ember.data.DatasetError: the MNIST files are missing and cannot be downloaded.
    """
    world = int(os.environ.get("WORLD_SIZE", "1")) if distributed else 1
    rank = int(os.environ.get("RANK", "0")) if distributed else 0
    devices = list(device) if isinstance(device, (list, tuple)) else [device]
    device = devices[0]
    if rank == 0:  # the other ranks write nothing
        create_artifact_dir(artifact_dir)
        config.save(Path(artifact_dir) / "config.json")  # type: ignore[attr-defined]  # added by @config

    device.backend.seed(config.seed)
    batch_size = max(1, config.batch_size // world)  # per rank; MultiDevice splits each batch over its devices

    batcher = MnistBatcher()
    dataset_train = train_dataset if train_dataset is not None else MnistDataset.train(data_dir)
    dataset_test = test_dataset if test_dataset is not None else MnistDataset.test(data_dir)

    dataloader_train: DataLoader[MnistBatch] = (
        DataLoaderBuilder(batcher).batch_size(batch_size).shuffle(config.seed)
        .num_workers(config.num_workers).build(dataset_train))
    dataloader_test: DataLoader[MnistBatch] = (
        DataLoaderBuilder(batcher).batch_size(batch_size).shuffle(config.seed)
        .num_workers(config.num_workers).build(dataset_test))

    builder = (LearnerBuilder(artifact_dir)
               .metric_train_numeric(AccuracyMetric())
               .metric_valid_numeric(AccuracyMetric())
               .metric_train_numeric(LossMetric())
               .metric_valid_numeric(LossMetric())
               .with_file_checkpointer(CompactRecorder())
               .devices(devices)
               .num_epochs(config.num_epochs)
               .summary()
               .with_hyperparameters(config))
    if tensorboard is not None:
        builder = builder.with_metric_logger(TensorBoardLogger(tensorboard))
    if mlflow is not None:
        builder = builder.with_metric_logger(MlflowLogger(mlflow, experiment_name="guide"))
    if distributed:
        builder = builder.learning_strategy(DistributedDataParallel())
    model = config.model.init(device)
    if rank:
        device.backend.seed(config.seed + rank)  # other dropout masks on each rank (the weights are rank 0's)
    learner = builder.build(model, config.optimizer.init(), config.learning_rate)

    result = learner.fit(dataloader_train, dataloader_test)
    if rank == 0:
        result.model.save_file(Path(artifact_dir) / "model", CompactRecorder())
    return result
