"""The guide's training (Burn book, "Guide": ``src/training.rs``)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ember.autodiff import AutodiffDevice
from ember.config import config
from ember.data import DataLoader, DataLoaderBuilder
from ember.data.vision import MnistDataset
from ember.optim import AdamConfig
from ember.record import CompactRecorder
from ember_train import (
    DistributedDataParallel,
    LearnerBuilder,
    MlflowLogger,
    TensorBoardLogger,
    TrainingResult,
    last_checkpoint,
)
from ember_train.metric import AccuracyMetric, LossMetric

from ._errors import UsageError
from ._run_dir import RunPlan, plan_run_dir, prepare_run_dir, update_marker
from .data import MnistBatch, MnistBatcher
from .model import ModelConfig

__all__ = ["TrainingConfig", "train"]


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


def train(artifact_dir: str | os.PathLike[str], config: TrainingConfig, device: AutodiffDevice | Any,
          data_dir: str | os.PathLike[str] | None = None, *, train_dataset: Any = None,
          test_dataset: Any = None, tensorboard: str | os.PathLike[str] | None = None,
          mlflow: str | None = None, distributed: bool = False, resume: bool = False, overwrite: bool = False,
          run_info: dict[str, Any] | None = None) -> TrainingResult:
    """Train the guide's model with the Learner and save it as ``<artifact_dir>/model.mpk.gz``.

    Args:
        artifact_dir: receives ``.ember-run`` (the run's marker), ``config.json``, the Learner's logs and
            checkpoints (``checkpoint/``, ``train/``, ``valid/``, ``experiment.log``, ``summary.*``) and, once
            training finished, ``model.mpk.gz``. A directory holding a finished run is replaced (its run files
            only); one holding an unfinished run or other files is refused (see :mod:`guide._run_dir`).
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
        resume: continue the unfinished run of ``artifact_dir`` from its last checkpoint (same ``config``).
        overwrite: replace the run files in ``artifact_dir`` whatever it holds (other files are kept).
        run_info: more fields for the marker: the CLI's ``argv`` (the resume command is built from it) and
            ``settings``.

    ``device`` may also be a list of devices: data-parallel training on them in this process (``MultiDevice``, jax:
    one compiled step over the devices, each batch split across them).

    Ctrl-C (SIGINT) stops training after the current step: the Learner writes a checkpoint to resume from, the
    marker says ``interrupted``, no ``model.mpk.gz`` is written and ``result.interrupted`` is true.

    The Learner also writes ``plots/<Metric>.png`` and ``plots/index.html`` at each epoch end when matplotlib is
    installed (``ember-train[plot]``), and logs the config as the run's hyper-parameters.

    Returns:
        The Learner's :class:`~ember_train.TrainingResult` (``result.model`` is the trained model).

    Raises:
        ember.data.DatasetError: the MNIST files are missing and cannot be downloaded.
        guide.UsageError: ``artifact_dir`` holds what this run must not replace, nothing to resume, or a run
            with another config (checked before anything is written).
    """
    world = int(os.environ.get("WORLD_SIZE", "1")) if distributed else 1
    rank = int(os.environ.get("RANK", "0")) if distributed else 0
    devices = list(device) if isinstance(device, (list, tuple)) else [device]
    device = devices[0]
    # everything that can be refused is checked before the artifact directory is touched
    plan = RunPlan(Path(artifact_dir), "resume", resume_epoch=last_checkpoint(artifact_dir)) if resume else None
    if rank == 0:  # the other ranks write nothing
        plan = plan_run_dir(artifact_dir, resume=resume, overwrite=overwrite)
        if resume:
            _check_same_config(Path(artifact_dir) / "config.json", config)
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
    if plan is not None and plan.resume_epoch is not None:
        builder = builder.checkpoint(plan.resume_epoch)

    if rank == 0 and plan is not None:
        prepare_run_dir(plan, {**(run_info or {}), "epochs": config.num_epochs})
        if not resume:
            config.save(Path(artifact_dir) / "config.json")  # type: ignore[attr-defined]  # added by @config
    try:
        device.backend.seed(config.seed)
        model = config.model.init(device)
        if rank:
            device.backend.seed(config.seed + rank)  # other dropout masks on each rank (the weights are rank 0's)
        learner = builder.build(model, config.optimizer.init(), config.learning_rate)
        result = learner.fit(dataloader_train, dataloader_test)
        if rank == 0 and not result.interrupted:  # a half-trained model is no final model: resume instead
            result.model.save_file(Path(artifact_dir) / "model", CompactRecorder())
    except BaseException as exc:  # the process ends: the run is not running any more
        if rank == 0:
            update_marker(artifact_dir, state="interrupted" if isinstance(exc, KeyboardInterrupt) else "failed",
                          checkpoint=last_checkpoint(artifact_dir))
        raise
    if rank == 0:
        update_marker(artifact_dir, state="interrupted" if result.interrupted else "finished",
                      checkpoint=result.resume_epoch if result.interrupted else None)
    return result


def _check_same_config(saved_path: Path, config: TrainingConfig) -> None:
    """A resumed run trains with the config it started with (``num_workers`` aside: it changes no result)."""
    saved = TrainingConfig.load(saved_path)  # type: ignore[attr-defined]  # added by @config
    theirs, ours = saved.to_dict(), config.with_num_workers(saved.num_workers).to_dict()  # type: ignore[attr-defined]
    differ = [f"{k} {theirs.get(k)!r} (this run: {ours.get(k)!r})" for k in sorted(ours)
              if theirs.get(k) != ours.get(k)]
    if differ:
        raise UsageError(f"--resume: the run in {saved_path.parent} was started with {'; '.join(differ)}: resume it "
                         "with the settings it started with.")
