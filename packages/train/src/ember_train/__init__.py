"""ember-train: the training loop of Ember (Burn's ``burn-train``).

.. code-block:: python

    from ember_train import LearnerBuilder
    from ember_train.metric import AccuracyMetric, LossMetric

    learner = (LearnerBuilder(artifact_dir)
        .metric_train_numeric(AccuracyMetric()).metric_valid_numeric(AccuracyMetric())
        .metric_train_numeric(LossMetric()).metric_valid_numeric(LossMetric())
        .with_file_checkpointer(CompactRecorder())
        .devices([device]).num_epochs(10).summary()
        .build(model, AdamConfig().init(), 1e-4))
    result = learner.fit(dataloader_train, dataloader_valid)     # result.model, result.summary

- Steps: the model's ``train_step(batch) -> TrainOutput(model, grads, item)`` and ``valid_step(batch) -> item``;
  items such as :class:`ClassificationOutput` adapt to metric inputs (:func:`adaptor` adds your own). The whole
  steps (with the optimizer update) are compiled by the training backend (jax: ``ember_jax.jit``; numpy and torch
  run eagerly); ``LearnerBuilder.compile(False)`` turns that off.
- :class:`LearnerBuilder` / :class:`Learner` / :class:`TrainingResult`; :mod:`ember_train.metric`;
  checkpointing strategies, early stopping, renderers (:mod:`ember_train.renderer`), :class:`LearnerSummary`.
- Artifact directory (Burn's layout): ``experiment.log``, ``config.json`` (when you save it),
  ``checkpoint/{model,optim,scheduler}-N.<ext>``, ``train|valid/epoch-N/<Metric>.log``, and
  ``summary.txt`` / ``summary.json``.
- Experiment tracking (``LearnerBuilder.with_metric_logger``): :class:`TensorBoardLogger`, :class:`CsvLogger`,
  :class:`MlflowLogger`, your :class:`TrackingLogger`; hyper-parameters with ``with_hyperparameters``.
- Plots: ``plots/<Metric>.png`` and ``plots/index.html`` at each epoch end (:mod:`ember_train.plots`; matplotlib).
- Data-parallel training: ``LearnerBuilder.learning_strategy(DistributedDataParallel())`` (one process per device,
  started by ``torchrun`` or ``python -m ember_train.launch --nproc N train.py``, :mod:`ember_train.launch`) or
  :class:`MultiDevice` (several devices of one process, on a backend that compiles one program over them: jax);
  :class:`SingleDevice` is the default. Each strategy is an object the Learner's loop calls
  (:mod:`ember_train.strategies`): write your own by subclassing :class:`LearningStrategy`.
- CLI (``ember-train`` or ``python -m ember_train``): ``summary DIR`` and ``plot DIR [--compare OTHER ...]``
  (``pip install 'ember-train[plot]'``).
"""

from __future__ import annotations

from . import metric, plots, renderer, strategies
from ._adaptor import adapt, adaptor, register_adaptor
from ._app_logger import ApplicationLoggerInstaller, FileApplicationLoggerInstaller
from ._builder import LearnerBuilder
from ._checkpointer import FileCheckpointer, LearnerCheckpointer, last_checkpoint
from ._csv_logger import CsvLogger
from ._early_stopping import EarlyStoppingStrategy, MetricEarlyStoppingStrategy, StoppingCondition
from ._errors import CheckpointError, LearnerError, MetricAdaptError, NonFiniteLossError
from ._interrupter import TrainingInterrupter
from ._learner import Learner, TrainingResult
from ._logger import FileMetricLogger, InMemoryMetricLogger, MetricLogger
from ._mlflow_logger import MlflowLogger
from ._outputs import ClassificationOutput, MultiLabelClassificationOutput, RegressionOutput, TrainOutput
from ._records import ConstantLr
from ._steps import TrainStep, ValidStep
from ._store import Aggregate, Direction, MetricStore, Split
from ._strategy import (
    CheckpointingAction,
    CheckpointingStrategy,
    ComposedCheckpointingStrategy,
    KeepLastNCheckpoints,
    MetricCheckpointingStrategy,
)
from ._summary import LearnerSummary, MetricSummary
from ._tensorboard_logger import TensorBoardLogger
from ._tracking import ResumePoint, RunInfo, TrackingLogger
from .strategies import DistributedDataParallel, LearningMethod, LearningStrategy, MultiDevice, SingleDevice

__version__ = "0.1.0"

__all__ = [
    "Aggregate",
    "ApplicationLoggerInstaller",
    "CheckpointError",
    "CheckpointingAction",
    "CheckpointingStrategy",
    "ClassificationOutput",
    "ComposedCheckpointingStrategy",
    "ConstantLr",
    "CsvLogger",
    "Direction",
    "DistributedDataParallel",
    "EarlyStoppingStrategy",
    "FileApplicationLoggerInstaller",
    "FileCheckpointer",
    "FileMetricLogger",
    "InMemoryMetricLogger",
    "KeepLastNCheckpoints",
    "Learner",
    "LearnerBuilder",
    "LearnerCheckpointer",
    "LearnerError",
    "LearnerSummary",
    "LearningMethod",
    "LearningStrategy",
    "MetricAdaptError",
    "MetricCheckpointingStrategy",
    "MetricEarlyStoppingStrategy",
    "MetricLogger",
    "MetricStore",
    "MlflowLogger",
    "MetricSummary",
    "MultiDevice",
    "MultiLabelClassificationOutput",
    "NonFiniteLossError",
    "RegressionOutput",
    "ResumePoint",
    "RunInfo",
    "SingleDevice",
    "Split",
    "StoppingCondition",
    "TensorBoardLogger",
    "TrainOutput",
    "TrainStep",
    "TrainingInterrupter",
    "TrackingLogger",
    "TrainingResult",
    "ValidStep",
    "adapt",
    "adaptor",
    "last_checkpoint",
    "metric",
    "plots",
    "register_adaptor",
    "renderer",
    "strategies",
    "__version__",
]
