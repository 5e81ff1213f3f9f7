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
- CLI: ``ember-train summary DIR`` and ``ember-train plot DIR -o curves.png`` (``pip install ember-train[plot]``).
"""

from __future__ import annotations

from . import metric, renderer
from ._adaptor import adapt, adaptor, register_adaptor
from ._app_logger import ApplicationLoggerInstaller, FileApplicationLoggerInstaller
from ._builder import LearnerBuilder
from ._checkpointer import FileCheckpointer, LearnerCheckpointer, last_checkpoint
from ._early_stopping import EarlyStoppingStrategy, MetricEarlyStoppingStrategy, StoppingCondition
from ._errors import CheckpointError, LearnerError, MetricAdaptError, NonFiniteLossError
from ._interrupter import TrainingInterrupter
from ._learner import Learner, TrainingResult
from ._logger import FileMetricLogger, InMemoryMetricLogger, MetricLogger
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
    "Direction",
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
    "MetricAdaptError",
    "MetricCheckpointingStrategy",
    "MetricEarlyStoppingStrategy",
    "MetricLogger",
    "MetricStore",
    "MetricSummary",
    "MultiLabelClassificationOutput",
    "NonFiniteLossError",
    "RegressionOutput",
    "Split",
    "StoppingCondition",
    "TrainOutput",
    "TrainStep",
    "TrainingInterrupter",
    "TrainingResult",
    "ValidStep",
    "adapt",
    "adaptor",
    "last_checkpoint",
    "metric",
    "register_adaptor",
    "renderer",
    "__version__",
]
