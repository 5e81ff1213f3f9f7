"""Metrics against hand-computed or brute-force values; adaptors; system metrics."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
import pytest

import ember
from ember import Tensor
from ember_train import ClassificationOutput, MetricAdaptError, adapt, adaptor
from ember_train.metric import (
    AccuracyInput,
    AccuracyMetric,
    AurocInput,
    AurocMetric,
    ClassReduction,
    ConfusionStatsInput,
    CpuMemory,
    CpuTemperature,
    CpuUse,
    FBetaScoreMetric,
    HammingScore,
    HammingScoreInput,
    LossInput,
    LossMetric,
    MetricMetadata,
    PrecisionMetric,
    RecallMetric,
    TopKAccuracyMetric,
)

MD = MetricMetadata(0, 0, 1, 1, 1, 0.1)


@pytest.fixture
def dev():
    return ember.backend("numpy", float_dtype="float64").device()


def t(x, dev):
    return Tensor.from_data(np.asarray(x), dev)


def test_accuracy_and_pad_token(dev):
    out = t([[0.1, 0.9], [0.8, 0.2], [0.3, 0.7], [0.6, 0.4]], dev)
    tgt = t([1, 1, 1, 0], dev)
    m = AccuracyMetric()
    m.update(AccuracyInput(out, tgt), MD)
    assert m.value() == pytest.approx(75.0)
    m = AccuracyMetric().with_pad_token(0)   # the item with target 0 is padding: 2 of 3 right
    e = m.update(AccuracyInput(out, tgt), MD)
    assert m.value() == pytest.approx(200.0 / 3.0)
    assert e.serialize.endswith(",3")


def test_top_k_accuracy(dev):
    out = t([[0.5, 0.3, 0.2], [0.1, 0.2, 0.7], [0.3, 0.4, 0.3], [0.6, 0.3, 0.1]], dev)
    tgt = t([1, 0, 1, 2], dev)   # top-2 sets: {0,1} {2,1} {1,0 or 2} {0,1}
    m = TopKAccuracyMetric(2)
    m.update(AccuracyInput(out, tgt), MD)
    assert m.value() == pytest.approx(50.0)
    m = TopKAccuracyMetric(3)
    m.update(AccuracyInput(out, tgt), MD)
    assert m.value() == pytest.approx(100.0)


def _confusion_reference(scores, targets, k, reduction, beta=1.0):
    pred = np.zeros_like(scores, dtype=bool)
    for i, row in enumerate(scores):
        pred[i, np.argsort(-row, kind="stable")[:k]] = True
    tp = (pred & targets).sum(0).astype(float)
    fp = (pred & ~targets).sum(0).astype(float)
    fn = (~pred & targets).sum(0).astype(float)
    if reduction == "micro":
        tp, fp, fn = tp.sum(keepdims=True), fp.sum(keepdims=True), fn.sum(keepdims=True)

    def mean_defined(num, den):
        ok = den > 0
        return float((num[ok] / den[ok]).mean())

    b2 = beta * beta
    return (mean_defined(tp, tp + fp), mean_defined(tp, tp + fn),
            mean_defined((1 + b2) * tp, (1 + b2) * tp + b2 * fn + fp))


@pytest.mark.parametrize("reduction", ["macro", "micro"])
def test_precision_recall_fbeta(dev, reduction):
    rng = np.random.default_rng(3)
    scores = rng.random((20, 4))
    labels = rng.integers(0, 4, 20)
    targets = np.eye(4, dtype=bool)[labels]
    red = ClassReduction.MACRO if reduction == "macro" else ClassReduction.MICRO
    inp = ConfusionStatsInput(t(scores, dev), t(targets, dev))
    p, r, f = _confusion_reference(scores, targets, 1, reduction)
    metrics = (PrecisionMetric.multiclass(1, red), RecallMetric.multiclass(1, red), FBetaScoreMetric.multiclass(1, red))
    for m, expected in zip(metrics, (p, r, f)):
        m.update(inp, MD)
        assert m.value() == pytest.approx(expected, rel=1e-12)
    p2, r2, f2 = _confusion_reference(scores, targets, 2, reduction, beta=2.0)
    m = FBetaScoreMetric.multiclass(2, red, beta=2.0)
    m.update(inp, MD)
    assert m.value() == pytest.approx(f2, rel=1e-12)


def test_classification_output_adapts_to_confusion_stats(dev):
    out = ClassificationOutput(t([0.3], dev), t([[2.0, 1.0, 0.0], [0.0, 3.0, 1.0]], dev), t([0, 2], dev))
    inp = adapt(out, ConfusionStatsInput)
    assert inp.targets.to_numpy().tolist() == [[True, False, False], [False, False, True]]
    m = PrecisionMetric.multiclass()
    m.update(inp, MD)
    # class 0 predicted once, right (1.0); class 1 predicted once, wrong (0.0); class 2 never predicted
    # (undefined, left out): macro = 0.5
    assert m.value() == pytest.approx(0.5)


def _auroc_pairs(scores, labels):
    pos = [s for s, y in zip(scores, labels) if y]
    neg = [s for s, y in zip(scores, labels) if not y]
    wins = sum(1.0 if p > n else 0.5 if p == n else 0.0 for p, n in itertools.product(pos, neg))
    return wins / (len(pos) * len(neg))


def test_auroc_with_ties(dev):
    scores = np.array([0.5, 0.5, 0.2, 0.9, 0.5, 0.1, 0.7])
    labels = np.array([1, 0, 0, 1, 1, 0, 0])
    m = AurocMetric()
    m.update(AurocInput(t(scores, dev), t(labels, dev)), MD)
    assert m.value() == pytest.approx(_auroc_pairs(scores, labels))
    two = np.stack([1 - scores, scores], 1)
    m.update(AurocInput(t(two, dev), t(labels, dev)), MD)
    assert m.value() == pytest.approx(_auroc_pairs(scores, labels))
    m.update(AurocInput(t(scores, dev), t(np.ones(7, dtype=np.int64), dev)), MD)
    assert math.isnan(m.value())   # one class only: undefined


def test_hamming_score(dev):
    m = HammingScore()
    m.update(HammingScoreInput(t([[2.0, -1.0], [-3.0, 4.0]], dev), t([[1, 0], [1, 1]], dev)), MD)
    assert m.value() == pytest.approx(0.75)
    m = HammingScore(sigmoid=False, threshold=0.0)
    m.update(HammingScoreInput(t([[2.0, -1.0], [-3.0, 4.0]], dev), t([[1, 1], [0, 1]], dev)), MD)
    assert m.value() == pytest.approx(0.75)


def test_loss_metric_weights_by_batch(dev):
    m = LossMetric()
    m.update(LossInput(t([2.0], dev), 10), MD)
    m.update(LossInput(t([1.0], dev), 30), MD)
    assert m.value() == 1.0 and m.running_value() == pytest.approx((2.0 * 10 + 1.0 * 30) / 40)


@dataclass(frozen=True)
class MyOutput:
    logits: Tensor
    labels: Tensor


def test_user_adaptor(dev):
    out = MyOutput(t([[0.0, 1.0]], dev), t([1], dev))
    with pytest.raises(MetricAdaptError, match="MyOutput.*@ember_train.adaptor\\(MyOutput, AccuracyInput\\)"):
        adapt(out, AccuracyInput)

    @adaptor(MyOutput, AccuracyInput)
    def _(o: MyOutput) -> AccuracyInput:
        return AccuracyInput(o.logits, o.labels)

    m = AccuracyMetric()
    m.update(adapt(out, AccuracyInput), MD)
    assert m.value() == 100.0


def test_system_metrics():
    mem = CpuMemory()
    assert mem.available() is None
    mem.update(None, MD)
    with open("/proc/meminfo") as f:
        total = int(f.readline().split()[1]) * 1024 / 1e9
    assert 0.0 < mem.value() < total
    cpu = CpuUse()
    cpu.update(None, MD)   # however soon after construction: a number, never nan
    assert 0.0 <= cpu.value() <= 100.0
    temp = CpuTemperature()
    why = temp.available()
    if why is None:
        temp.update(None, MD)
        assert -50.0 < temp.value() < 150.0
    else:
        assert "sensor" in why


def test_cpu_use_within_one_jiffy_is_defined(monkeypatch):
    # (busy, total) jiffies as /proc/stat would give them, read in sequence
    from ember_train.metric import _system

    readings = iter([(100.0, 400.0),    # construction
                      (100.0, 400.0),    # same jiffy, no previous value: average since boot
                      (130.0, 440.0),    # 30 busy of 40: 75 %
                      (130.5, 440.5),    # under one jiffy since the last: previous value
                      (140.0, 460.0)])   # measured from (130, 440), not (130.5, 440.5): 50 %
    monkeypatch.setattr(_system, "_cpu_times", lambda: next(readings))
    cpu = CpuUse()
    cpu.update(None, MD)
    assert cpu.value() == pytest.approx(25.0)
    cpu.update(None, MD)
    assert cpu.value() == pytest.approx(75.0)
    cpu.update(None, MD)
    assert cpu.value() == pytest.approx(75.0)
    cpu.update(None, MD)
    assert cpu.value() == pytest.approx(50.0)


def test_multilabel_output_adapts(dev):
    from ember_train import MultiLabelClassificationOutput

    out = MultiLabelClassificationOutput(t([0.2], dev), t([[2.0, -1.0, 0.5], [-3.0, 4.0, -0.1]], dev),
                                         t([[1, 0, 0], [1, 1, 0]], dev))
    m = HammingScore()
    m.update(adapt(out, HammingScoreInput), MD)
    assert m.value() == pytest.approx(4.0 / 6.0)   # predicted [[1,0,1],[0,1,0]]
    r = RecallMetric.multilabel(0.5, ClassReduction.MICRO)
    r.update(adapt(out, ConfusionStatsInput), MD)
    assert r.value() == pytest.approx(2.0 / 3.0)   # 3 true labels, 2 found
    assert adapt(out, LossInput).batch_size == 2
