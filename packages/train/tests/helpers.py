"""Test helpers: a tiny linear classifier and a synthetic, separable-ish dataset (no ember.nn needed)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

import ember
from ember import Tensor
from ember.autodiff import Autodiff
from ember.data import DataLoaderBuilder, InMemDataset
from ember.module import Module, Param
from ember.tensor import activation
from ember_train import ClassificationOutput, TrainOutput

NUM_FEATURES = 4
NUM_CLASSES = 3


def devices(backend: str = "numpy") -> Any:
    """The autodiff training device of ``backend`` (float64 on numpy, so results are exactly reproducible)."""
    opts = {"float_dtype": "float64"} if backend == "numpy" else {}
    return Autodiff(ember.backend(backend, **opts)).device()


@dataclass(frozen=True)
class Batch:
    inputs: Tensor   # [batch, NUM_FEATURES]
    targets: Tensor  # [batch] Int


def batcher(items: list[tuple[list[float], int]], device: Any) -> Batch:
    x = np.asarray([i[0] for i in items], dtype=np.float64)
    y = np.asarray([i[1] for i in items], dtype=np.int64)
    return Batch(Tensor.from_data(x, device), Tensor.from_data(y, device))


def cross_entropy(logits: Tensor, targets: Tensor) -> Tensor:
    """mean over the batch of -log softmax(logits)[target]; [1]."""
    logp = activation.log_softmax(logits, 1)
    onehot = targets.one_hot(int(logits.shape[1])).float()
    return logp.mul(onehot).sum_dim(1).mean().neg()


class Classifier(Module):
    weight: Param  # [NUM_FEATURES, NUM_CLASSES]
    bias: Param    # [1, NUM_CLASSES]

    @staticmethod
    def init(device: Any, seed: int = 0) -> Classifier:
        rng = np.random.default_rng(seed)
        w = rng.normal(0.0, 0.1, (NUM_FEATURES, NUM_CLASSES))
        return Classifier(weight=Param(Tensor.from_data(w, device)),
                          bias=Param(Tensor.from_data(np.zeros((1, NUM_CLASSES)), device)))

    def forward(self, x: Tensor) -> Tensor:
        return x.matmul(self.weight.val()).add(self.bias.val())

    def forward_classification(self, batch: Batch) -> ClassificationOutput:
        logits = self.forward(batch.inputs)
        return ClassificationOutput(cross_entropy(logits, batch.targets), logits, batch.targets)

    def train_step(self, batch: Batch) -> TrainOutput:
        out = self.forward_classification(batch)
        return TrainOutput(self, out.loss.backward(), out)

    def valid_step(self, batch: Batch) -> ClassificationOutput:
        return self.forward_classification(batch)


class Mlp(Module):
    """Linear(4, 16) -> ReLU -> Dropout(p) -> Linear(16, 3) with ember.nn layers and CrossEntropyLoss (a random
    layer: a compiled step must thread the PRNG key as the eager one does)."""

    l1: Any  # ember.nn.Linear
    drop: Any  # ember.nn.Dropout
    l2: Any
    loss: Any  # ember.nn.loss.CrossEntropyLoss

    @staticmethod
    def init(device: Any, dropout: float = 0.1) -> Mlp:
        from ember.nn import DropoutConfig, LinearConfig
        from ember.nn.loss import CrossEntropyLossConfig

        return Mlp(l1=LinearConfig(NUM_FEATURES, 16).init(device), drop=DropoutConfig(dropout).init(),
                   l2=LinearConfig(16, NUM_CLASSES).init(device), loss=CrossEntropyLossConfig().init(device))

    def forward_classification(self, batch: Batch) -> ClassificationOutput:
        x = self.l2.forward(self.drop.forward(activation.relu(self.l1.forward(batch.inputs))))
        return ClassificationOutput(self.loss.forward(x, batch.targets), x, batch.targets)

    def train_step(self, batch: Batch) -> TrainOutput:
        out = self.forward_classification(batch)
        return TrainOutput(self, out.loss.backward(), out)

    def valid_step(self, batch: Batch) -> ClassificationOutput:
        return self.forward_classification(batch)


class BnMlp(Module):
    """Linear(4, 6) -> BatchNorm(6) -> ReLU -> Linear(6, 3) with CrossEntropyLoss: a model with running states."""

    l1: Any  # ember.nn.Linear
    bn: Any  # ember.nn.BatchNorm
    l2: Any
    loss: Any  # ember.nn.loss.CrossEntropyLoss

    @staticmethod
    def init(device: Any) -> BnMlp:
        from ember.nn import BatchNormConfig, LinearConfig
        from ember.nn.loss import CrossEntropyLossConfig

        return BnMlp(l1=LinearConfig(NUM_FEATURES, 6).init(device), bn=BatchNormConfig(6).init(device),
                     l2=LinearConfig(6, NUM_CLASSES).init(device), loss=CrossEntropyLossConfig().init(device))

    def forward_classification(self, batch: Batch) -> ClassificationOutput:
        x = self.l2.forward(activation.relu(self.bn.forward(self.l1.forward(batch.inputs))))
        return ClassificationOutput(self.loss.forward(x, batch.targets), x, batch.targets)

    def train_step(self, batch: Batch) -> TrainOutput:
        out = self.forward_classification(batch)
        return TrainOutput(self, out.loss.backward(), out)

    def valid_step(self, batch: Batch) -> ClassificationOutput:
        return self.forward_classification(batch)


def dataset(n: int, seed: int) -> InMemDataset:
    rng = np.random.default_rng(seed)
    centers = np.array([[2.0, 0, 0, 0], [0, 2.0, 0, 0], [0, 0, 2.0, 0]])
    y = rng.integers(0, NUM_CLASSES, n)
    x = centers[y] + rng.normal(0, 1.0, (n, NUM_FEATURES))
    return InMemDataset([(x[i].tolist(), int(y[i])) for i in range(n)])


def loaders(n_train: int = 96, n_valid: int = 48, batch_size: int = 16, seed: int = 7) -> tuple[Any, Any]:
    train = DataLoaderBuilder(batcher).batch_size(batch_size).shuffle(seed).build(dataset(n_train, 1))
    valid = DataLoaderBuilder(batcher).batch_size(batch_size).build(dataset(n_valid, 2))
    return train, valid
