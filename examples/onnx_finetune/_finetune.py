"""The Ember side: the imported model as a Learner-ready classifier, fine-tuning and evaluation."""

from __future__ import annotations

import os
from typing import Any

from ember import Tensor
from ember.data import DataLoaderBuilder
from ember.module import Module
from ember.nn.loss import CrossEntropyLossConfig
from ember.optim import AdamConfig
from ember_import.onnx import OnnxModule
from ember_train import ClassificationOutput, LearnerBuilder, TrainOutput
from ember_train.metric import AccuracyMetric, LossMetric
from guide.data import MnistBatch, MnistBatcher

__all__ = ["OnnxClassifier", "finetune", "evaluate"]


class OnnxClassifier(Module):
    """An imported classifier (``images [batch, 28, 28] -> logits [batch, 10]``) with the Learner's steps."""

    net: OnnxModule

    def forward(self, images: Tensor) -> Tensor:
        return self.net(images)  # type: ignore[no-any-return]

    def forward_classification(self, images: Tensor, targets: Tensor) -> ClassificationOutput:
        logits = self.forward(images)
        loss = CrossEntropyLossConfig().init(logits.device).forward(logits, targets)
        return ClassificationOutput(loss, logits, targets)

    def train_step(self, batch: MnistBatch) -> TrainOutput:
        item = self.forward_classification(batch.images, batch.targets)
        return TrainOutput(self, item.loss.backward(), item)

    def valid_step(self, batch: MnistBatch) -> ClassificationOutput:
        return self.forward_classification(batch.images, batch.targets)


def evaluate(model: OnnxClassifier, dataset: Any, device: Any, batch_size: int = 500) -> float:
    """Accuracy in percent of ``model`` (run on ``device``, no autodiff) over ``dataset``."""
    loader = DataLoaderBuilder(MnistBatcher()).batch_size(batch_size).build(dataset).to_device(device)
    correct = total = 0
    for batch in loader:
        pred = model.forward(batch.images).argmax(1).reshape([-1])
        correct += int(pred.equal(batch.targets).int().sum().into_scalar())
        total += batch.targets.shape[0]
    return 100.0 * correct / max(total, 1)


def finetune(model: OnnxClassifier, train: Any, test: Any, device: Any, artifact_dir: str | os.PathLike[str],
             epochs: int = 1, batch_size: int = 64, lr: float = 1e-4, seed: int = 42) -> OnnxClassifier:
    """Train ``model`` with the Learner (Adam, the guide's settings) on the autodiff ``device``."""
    device.backend.seed(seed)
    batcher = MnistBatcher()
    train_loader = DataLoaderBuilder(batcher).batch_size(batch_size).shuffle(seed).build(train)
    test_loader = DataLoaderBuilder(batcher).batch_size(batch_size).build(test)
    learner = (LearnerBuilder(artifact_dir)
               .metric_train_numeric(AccuracyMetric()).metric_valid_numeric(AccuracyMetric())
               .metric_train_numeric(LossMetric()).metric_valid_numeric(LossMetric())
               .devices([device]).num_epochs(epochs)
               .build(model, AdamConfig().init(), lr))
    return learner.fit(train_loader, test_loader).model  # type: ignore[no-any-return]
