"""The Learner with real ember.nn layers (Linear, Dropout, ReLU, CrossEntropyLoss), Adam, CompactRecorder."""

from __future__ import annotations

import helpers as h
from ember_train import LearnerBuilder
from ember_train.metric import AccuracyMetric, LossMetric
from ember_train.renderer import CliMetricsRenderer


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
           .build(h.Mlp.init(dev), AdamConfig().init(), 0.02).fit(train, valid))
    loss = dict(next(m for m in res.summary.metrics if m.split == "valid" and m.name == "Loss").history)
    assert loss[4] < loss[1]
    names = sorted(p.name for p in (tmp_path / "checkpoint").iterdir())
    assert "model-4.mpk.gz" in names and "optim-4.mpk.gz" in names and "scheduler-4.mpk.gz" in names
    # the saved model loads back into a fresh one
    again = h.Mlp.init(dev).load_file(tmp_path / "checkpoint" / "model-4", CompactRecorder())
    assert again.l1.weight.shape == (h.NUM_FEATURES, 16)
