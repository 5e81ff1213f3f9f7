"""Bad input fails before the first epoch with a clear message; a NaN loss names epoch and iteration."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

import helpers as h
from ember import Tensor
from ember.data import DataLoaderBuilder, InMemDataset
from ember.module import Module, Param
from ember.optim import SgdConfig
from ember_train import (
    LearnerBuilder,
    LearnerError,
    MetricAdaptError,
    NonFiniteLossError,
    RegressionOutput,
    TrainOutput,
)
from ember_train.metric import AccuracyMetric, LossMetric
from ember_train.renderer import CliMetricsRenderer


def _builder(tmp, dev):
    return (LearnerBuilder(tmp).metric_train_numeric(LossMetric()).metric_valid_numeric(LossMetric())
            .devices([dev]).num_epochs(2).renderer(CliMetricsRenderer(lines_per_epoch=0)))


def _no_metric_logs(tmp) -> bool:
    return not list(tmp.glob("*/epoch-*/*.log"))


def test_model_without_train_step(tmp_path):
    class NoStep(Module):
        weight: Param

    dev = h.devices()
    model = NoStep(weight=Param(Tensor.zeros([2, 2], dev)))
    with pytest.raises(LearnerError, match=r"NoStep\) has no train_step\(batch\) method"):
        _builder(tmp_path, dev).build(model, SgdConfig().init(), 0.1)


def test_loader_with_wrong_batch_type(tmp_path):
    dev = h.devices()
    _, valid = h.loaders()
    tuples = DataLoaderBuilder(lambda items, device: (items, device)).batch_size(8).build(h.dataset(32, 1))
    learner = _builder(tmp_path, dev).build(h.Classifier.init(dev), SgdConfig().init(), 0.1)
    with pytest.raises(LearnerError, match=r"training data loader yields tuple .* takes a Batch"):
        learner.fit(tuples, valid)
    assert _no_metric_logs(tmp_path)


def test_wrong_validation_batch_fails_before_training(tmp_path):
    dev = h.devices()
    train, _ = h.loaders()
    tuples = DataLoaderBuilder(lambda items, device: (items, device)).batch_size(8).build(h.dataset(32, 1))
    learner = _builder(tmp_path, dev).build(h.Classifier.init(dev), SgdConfig().init(), 0.1)
    with pytest.raises(LearnerError, match="validation data loader yields tuple"):
        learner.fit(train, tuples)
    assert _no_metric_logs(tmp_path)


def test_unannotated_step_failure_is_wrapped(tmp_path):
    class Loose(h.Classifier):
        def train_step(self, batch):  # no annotation: the failure inside is reported with the batch type
            return super().train_step(batch)

    dev = h.devices()
    tuples = DataLoaderBuilder(lambda items, device: (items, device)).batch_size(8).build(h.dataset(32, 1))
    m = h.Classifier.init(dev)
    learner = _builder(tmp_path, dev).build(Loose(weight=m.weight, bias=m.bias), SgdConfig().init(), 0.1)
    msg = r"train_step raised AttributeError on the first training batch \(tuple"
    with pytest.raises(LearnerError, match=msg) as e:
        learner.fit(tuples)
    assert isinstance(e.value.__cause__, AttributeError)


@dataclass(frozen=True)
class RegBatch:
    x: Tensor
    y: Tensor


class Regressor(Module):
    w: Param

    def train_step(self, batch: RegBatch) -> TrainOutput:
        out = self.valid_step(batch)
        return TrainOutput(self, out.loss.backward(), out)

    def valid_step(self, batch: RegBatch) -> RegressionOutput:
        pred = batch.x.matmul(self.w.val())
        loss = pred.sub(batch.y).powf_scalar(2.0).mean()
        return RegressionOutput(loss, pred, batch.y)


def _reg_loader(dev, n=32, nan_at=None):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, 3))
    y = x @ np.array([[1.0], [2.0], [-1.0]])
    if nan_at is not None:
        x[nan_at, 0] = np.nan
    ds = InMemDataset([(x[i], y[i]) for i in range(n)])

    def batch(items, device):
        return RegBatch(Tensor.from_data(np.stack([i[0] for i in items]), device),
                        Tensor.from_data(np.stack([i[1] for i in items]), device))

    return DataLoaderBuilder(batch).batch_size(8).build(ds)


def test_metric_that_cannot_adapt(tmp_path):
    dev = h.devices()
    model = Regressor(w=Param(Tensor.zeros([3, 1], dev)))
    learner = (_builder(tmp_path, dev).metric_valid_numeric(AccuracyMetric())
               .build(model, SgdConfig().init(), 0.1))
    with pytest.raises(MetricAdaptError, match=r"Accuracy metric needs a AccuracyInput, but the step returned a "
                                               r"RegressionOutput .*ClassificationOutput.*@ember_train.adaptor"):
        learner.fit(_reg_loader(dev), _reg_loader(dev))
    assert _no_metric_logs(tmp_path)


def test_regression_runs_and_learns(tmp_path):
    dev = h.devices()
    model = Regressor(w=Param(Tensor.zeros([3, 1], dev)))
    res = _builder(tmp_path, dev).num_epochs(10).build(model, SgdConfig().init(), 0.1).fit(
        _reg_loader(dev), _reg_loader(dev))
    np.testing.assert_allclose(res.model.w.val().to_numpy().ravel(), [1.0, 2.0, -1.0], atol=0.05)


def test_nan_loss_stops_with_epoch_and_iteration(tmp_path):
    dev = h.devices()
    model = Regressor(w=Param(Tensor.zeros([3, 1], dev)))
    learner = _builder(tmp_path, dev).build(model, SgdConfig().init(), 0.1)
    # item 20 is NaN: batch size 8, no shuffle -> epoch 1, iteration 3
    with pytest.raises(NonFiniteLossError, match=r"loss is nan at epoch 1, iteration 3\b") as e:
        learner.fit(_reg_loader(dev, nan_at=20))
    assert (e.value.epoch, e.value.iteration, e.value.split) == (1, 3, "train")


def test_nan_loss_warn_keeps_training(tmp_path):
    dev = h.devices()
    model = Regressor(w=Param(Tensor.zeros([3, 1], dev)))
    out = []

    class R(CliMetricsRenderer):
        def message(self, text):
            out.append(text)

    res = (_builder(tmp_path, dev).on_nan_loss("warn").renderer(R())
           .build(model, SgdConfig().init(), 0.1).fit(_reg_loader(dev, nan_at=20)))
    assert res.epoch == 2 and any("epoch 1, iteration 3" in t for t in out)


def test_builder_option_errors(tmp_path):
    with pytest.raises(LearnerError, match="at least one device"):
        LearnerBuilder(tmp_path).devices([])
    with pytest.raises(LearnerError, match="num_epochs"):
        LearnerBuilder(tmp_path).num_epochs(0)
    with pytest.raises(LearnerError, match="expected a Metric"):
        LearnerBuilder(tmp_path).metric_train("Accuracy")
    dev = h.devices()
    with pytest.raises(LearnerError, match="lr must be a float"):
        LearnerBuilder(tmp_path).build(h.Classifier.init(dev), SgdConfig().init(), "fast")
    learner = (LearnerBuilder(tmp_path).devices([dev.inner]).renderer(CliMetricsRenderer())
               .build(h.Classifier.init(dev), SgdConfig().init(), 0.1))
    train, _ = h.loaders()
    with pytest.raises(LearnerError, match="not an autodiff device"):
        learner.fit(train)
