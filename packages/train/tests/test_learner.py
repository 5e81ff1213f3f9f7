"""End-to-end Learner runs on the numpy backend: layout, metric files, summary, retention, early stopping."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import helpers as h
from ember.optim import SgdConfig
from ember.record import NamedMpkFileRecorder
from ember_train import (
    KeepLastNCheckpoints,
    LearnerBuilder,
    LearnerSummary,
    MetricEarlyStoppingStrategy,
    StoppingCondition,
)
from ember_train.metric import AccuracyMetric, LearningRateMetric, LossMetric
from ember_train.renderer import CliMetricsRenderer


def _builder(tmp: Path, dev, epochs: int, out=None) -> LearnerBuilder:
    return (LearnerBuilder(tmp)
            .metric_train_numeric(AccuracyMetric()).metric_valid_numeric(AccuracyMetric())
            .metric_train_numeric(LossMetric()).metric_valid_numeric(LossMetric())
            .metric_train(LearningRateMetric())
            .with_file_checkpointer(NamedMpkFileRecorder())
            .devices([dev]).num_epochs(epochs).summary()
            .renderer(CliMetricsRenderer(file=out)))


def _lines(path: Path) -> list[tuple[float, int]]:
    out = []
    for line in path.read_text().splitlines():
        v, n = line.split(",")
        out.append((float(v), int(n)))
    return out


def _epoch_mean(path: Path) -> float:
    rows = _lines(path)
    return sum(v * n for v, n in rows) / sum(n for _, n in rows)


def test_layout_metric_files_and_summary(tmp_path, capsys):
    dev = h.devices()
    train, valid = h.loaders()
    model = h.Classifier.init(dev)
    w0 = model.weight.val().to_numpy().copy()
    result = _builder(tmp_path, dev, 3).build(model, SgdConfig().init(), 0.1).fit(train, valid)

    # Burn's layout
    assert (tmp_path / "experiment.log").read_text().strip()
    for split, iters in (("train", 6), ("valid", 3)):
        for e in (1, 2, 3):
            d = tmp_path / split / f"epoch-{e}"
            assert sorted(p.name for p in d.iterdir()) == sorted(
                ["Accuracy.log", "Loss.log"] + (["Learning_Rate.log"] if split == "train" else []))
            rows = _lines(d / "Loss.log")
            assert len(rows) == iters and all(n == 16 for _, n in rows)
            assert all(0.0 <= v <= 100.0 for v, _ in _lines(d / "Accuracy.log"))
    assert (tmp_path / "train/epoch-1/Learning_Rate.log").read_text().split() == ["0.1"] * 6

    # the first logged loss equals an independent numpy computation of the first batch's cross-entropy
    order = np.random.default_rng([7, 0]).permutation(96)[:16]
    items = [h.dataset(96, 1).get(int(i)) for i in order]
    x = np.array([i[0] for i in items])
    y = np.array([i[1] for i in items])
    logits = x @ w0
    mx = logits.max(1, keepdims=True)
    logp = logits - mx - np.log(np.exp(logits - mx).sum(1, keepdims=True))
    expected = -logp[np.arange(16), y].mean()
    first = _lines(tmp_path / "train/epoch-1/Loss.log")[0][0]
    assert first == pytest.approx(expected, rel=1e-12)
    acc = 100.0 * (logits.argmax(1) == y).mean()
    assert _lines(tmp_path / "train/epoch-1/Accuracy.log")[0][0] == pytest.approx(acc)

    # summary = weighted epoch means of the files; best by direction
    s = result.summary
    rows = {(m.split, m.name): m for m in s.metrics}
    for split in ("train", "valid"):
        loss = [_epoch_mean(tmp_path / split / f"epoch-{e}" / "Loss.log") for e in (1, 2, 3)]
        m = rows[(split, "Loss")]
        assert [v for _, v in m.history] == pytest.approx(loss)
        assert m.best == (int(np.argmin(loss)) + 1, pytest.approx(min(loss)))
        accs = [_epoch_mean(tmp_path / split / f"epoch-{e}" / "Accuracy.log") for e in (1, 2, 3)]
        assert rows[(split, "Accuracy")].best[1] == pytest.approx(max(accs))
        assert rows[(split, "Accuracy")].last == (3, pytest.approx(accs[-1]))
    assert rows[("valid", "Loss")].history[-1][1] < rows[("valid", "Loss")].history[0][1]  # it learns
    assert "Learner Summary" in (tmp_path / "summary.txt").read_text()
    assert LearnerSummary.from_dir(tmp_path).table() == (tmp_path / "summary.txt").read_text()
    out = capsys.readouterr().out
    assert "Learner Summary" in out and "[valid] epoch 3 done" in out
    assert result.epoch == 3 and not result.interrupted and not result.stopped_early

    # default retention: last 2 and the best validation loss
    valid_loss = [_epoch_mean(tmp_path / "valid" / f"epoch-{e}" / "Loss.log") for e in (1, 2, 3)]
    expected_kept = {2, 3, int(np.argmin(valid_loss)) + 1}
    kept = {int(p.stem.split("-")[1]) for p in (tmp_path / "checkpoint").glob("model-*.mpk")}
    assert kept == expected_kept
    for e in kept:
        for part in ("model", "optim", "scheduler"):
            assert (tmp_path / "checkpoint" / f"{part}-{e}.mpk").exists()


def test_retention_keeps_best_and_last(tmp_path):
    dev = h.devices()
    train, valid = h.loaders()
    # a custom strategy replaces the default one: only the last checkpoint stays
    res = (_builder(tmp_path, dev, 5).with_checkpointing_strategy(KeepLastNCheckpoints(1))
           .build(h.Classifier.init(dev), SgdConfig().init(), 0.1).fit(train, valid))
    kept = sorted(int(p.stem.split("-")[1]) for p in (tmp_path / "checkpoint").glob("model-*.mpk"))
    assert kept == [5] and res.checkpoints == [5]


def test_early_stopping_and_warmup(tmp_path):
    dev = h.devices()
    train, valid = h.loaders()
    # lr = 0: the validation loss never improves after epoch 1
    stop = MetricEarlyStoppingStrategy(LossMetric(), condition=StoppingCondition.no_improvement_since(2))
    res = _builder(tmp_path / "a", dev, 6).early_stopping(stop).build(
        h.Classifier.init(dev), SgdConfig().init(), 0.0).fit(train, valid)
    assert res.stopped_early and res.epoch == 3 and "not improved for 2" in res.stop_reason
    assert not (tmp_path / "a/train/epoch-4").exists()

    stop = MetricEarlyStoppingStrategy(LossMetric(), condition=2, warmup_epochs=4)
    res = _builder(tmp_path / "b", dev, 6).early_stopping(stop).build(
        h.Classifier.init(dev), SgdConfig().init(), 0.0).fit(train, valid)
    assert res.stopped_early and res.epoch == 5


def test_no_early_stop_while_improving(tmp_path):
    dev = h.devices()
    train, valid = h.loaders()
    stop = MetricEarlyStoppingStrategy(LossMetric(), condition=1)
    res = _builder(tmp_path, dev, 3).early_stopping(stop).build(
        h.Classifier.init(dev), SgdConfig().init(), 0.05).fit(train, valid)
    losses = [v for _, v in next(m for m in res.summary.metrics if m.split == "valid" and m.name == "Loss").history]
    assert all(b < a for a, b in zip(losses, losses[1:]))  # improving every epoch ...
    assert not res.stopped_early and res.epoch == 3        # ... so never stopped


def test_grads_accumulation_matches_bigger_batch(tmp_path):
    """Summed gradients of 2 batches of 8 with lr/2 == one batch of 16 with lr (mean losses)."""
    dev = h.devices()
    tr8, va = h.loaders(batch_size=8)
    tr16, _ = h.loaders(batch_size=16)
    a = (_builder(tmp_path / "a", dev, 2).grads_accumulation(2)
         .build(h.Classifier.init(dev), SgdConfig().init(), 0.05).fit(tr8, va))
    b = _builder(tmp_path / "b", dev, 2).build(h.Classifier.init(dev), SgdConfig().init(), 0.1).fit(tr16, va)
    np.testing.assert_allclose(a.model.weight.val().to_numpy(), b.model.weight.val().to_numpy(), rtol=1e-10)
    assert not math.isclose(float(a.model.weight.val().to_numpy()[0, 0]),
                            float(h.Classifier.init(dev).weight.val().to_numpy()[0, 0]))


def test_pluggable_loggers_and_no_app_log(tmp_path):
    from ember_train import InMemoryMetricLogger

    dev = h.devices()
    train, valid = h.loaders()
    lt, lv = InMemoryMetricLogger(), InMemoryMetricLogger()
    res = (LearnerBuilder(tmp_path).metric_train_numeric(LossMetric()).metric_valid_numeric(LossMetric())
           .metric_loggers(lt, lv).with_application_logger(None).devices([dev]).num_epochs(2)
           .renderer(CliMetricsRenderer(file=None, lines_per_epoch=0))
           .build(h.Classifier.init(dev), SgdConfig().init(), 0.1).fit(train, valid))
    assert not (tmp_path / "train").exists() and not (tmp_path / "experiment.log").exists()
    assert sorted(lt.values) == [1, 2] and len(lt.values[1]["Loss"]) == 6 and len(lv.values[2]["Loss"]) == 3
    mean = sum(e.value * e.count for e in lt.read_numeric("Loss", 2)) / 96
    hist = dict(next(m for m in res.summary.metrics if m.split == "train").history)
    assert hist[2] == pytest.approx(mean)


def test_workers_give_the_same_run(tmp_path):
    from ember.data import DataLoaderBuilder

    dev = h.devices()
    _, valid = h.loaders()
    results = []
    for workers in (0, 2):
        train = DataLoaderBuilder(h.batcher).batch_size(16).shuffle(7).num_workers(workers).build(h.dataset(96, 1))
        res = (_builder(tmp_path / str(workers), dev, 2)
               .build(h.Classifier.init(dev), SgdConfig().init(), 0.1).fit(train, valid))
        results.append(res.model.weight.val().to_numpy())
    np.testing.assert_array_equal(results[0], results[1])


def test_strategies_by_name_use_the_metric_direction():
    from ember_train import CheckpointingAction, Direction, MetricCheckpointingStrategy, MetricStore, Split
    from ember_train.metric import NumericEntry

    store = MetricStore()
    for epoch, acc in ((1, 50.0), (2, 70.0), (3, 60.0)):
        store.add(Split.VALID, "Accuracy", epoch, NumericEntry(acc, 10))
        store.add(Split.VALID, "Loss", epoch, NumericEntry(acc / 100, 10))
    assert MetricCheckpointingStrategy("Accuracy").keep(3, store) == {2}
    assert MetricCheckpointingStrategy("Loss").keep(3, store) == {1}
    assert MetricCheckpointingStrategy(AccuracyMetric()).direction is Direction.HIGHEST
    stop = MetricEarlyStoppingStrategy("Accuracy", condition=1)
    assert not stop.should_stop(2, store) and stop.should_stop(3, store)
    assert KeepLastNCheckpoints(2).checkpointing(3, store, {1, 2}) == [
        CheckpointingAction.save(3), CheckpointingAction.delete(1)]
