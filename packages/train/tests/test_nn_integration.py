"""The Learner with real ember.nn layers (Linear, Dropout, ReLU, CrossEntropyLoss), Adam, CompactRecorder."""

from __future__ import annotations

import pytest

import helpers as h
from ember.module import Module
from ember_train import ClassificationOutput, LearnerBuilder, TrainOutput
from ember_train.metric import AccuracyMetric, LossMetric
from ember_train.renderer import CliMetricsRenderer

nn = pytest.importorskip("ember.nn")
loss_mod = pytest.importorskip("ember.nn.loss")


class Mlp(Module):
    l1: nn.Linear
    drop: nn.Dropout
    l2: nn.Linear
    loss: loss_mod.CrossEntropyLoss

    @staticmethod
    def init(device) -> Mlp:
        return Mlp(l1=nn.LinearConfig(h.NUM_FEATURES, 16).init(device), drop=nn.DropoutConfig(0.1).init(),
                   l2=nn.LinearConfig(16, h.NUM_CLASSES).init(device),
                   loss=loss_mod.CrossEntropyLossConfig().init(device))

    def forward_classification(self, batch: h.Batch) -> ClassificationOutput:
        from ember.tensor import activation

        x = self.l2.forward(self.drop.forward(activation.relu(self.l1.forward(batch.inputs))))
        return ClassificationOutput(self.loss.forward(x, batch.targets), x, batch.targets)

    def train_step(self, batch: h.Batch) -> TrainOutput:
        out = self.forward_classification(batch)
        return TrainOutput(self, out.loss.backward(), out)

    def valid_step(self, batch: h.Batch) -> ClassificationOutput:
        return self.forward_classification(batch)


def test_mlp_with_nn_layers(tmp_path):
    from ember.optim import AdamConfig
    from ember.record import CompactRecorder

    dev = h.devices()
    train, valid = h.loaders()
    res = (LearnerBuilder(tmp_path)
           .metric_train_numeric(AccuracyMetric()).metric_valid_numeric(AccuracyMetric())
           .metric_train_numeric(LossMetric()).metric_valid_numeric(LossMetric())
           .with_file_checkpointer(CompactRecorder()).devices([dev]).num_epochs(4)
           .renderer(CliMetricsRenderer(lines_per_epoch=0))
           .build(Mlp.init(dev), AdamConfig().init(), 0.02).fit(train, valid))
    loss = dict(next(m for m in res.summary.metrics if m.split == "valid" and m.name == "Loss").history)
    assert loss[4] < loss[1]
    names = sorted(p.name for p in (tmp_path / "checkpoint").iterdir())
    assert "model-4.mpk.gz" in names and "optim-4.mpk.gz" in names and "scheduler-4.mpk.gz" in names
    # the saved model loads back into a fresh one
    again = Mlp.init(dev).load_file(tmp_path / "checkpoint" / "model-4", CompactRecorder())
    assert again.l1.weight.shape == (h.NUM_FEATURES, 16)
