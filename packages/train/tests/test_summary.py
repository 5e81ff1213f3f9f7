"""The end-of-training summary's text: one format with units (accuracy in % with 2 decimals, everything else with
4 significant digits), one model line; checked against the values of the metric log files and summary.json."""

from __future__ import annotations

import io
import json
import math
import re

import numpy as np

import helpers as h
from ember.optim import SgdConfig
from ember_train import LearnerBuilder, LearnerSummary
from ember_train._summary import MetricSummary, format_value
from ember_train.metric import AccuracyMetric, LossMetric
from ember_train.renderer import CliMetricsRenderer


def _mean(path) -> float:
    rows = [line.split(",") for line in path.read_text().split()]
    return float(np.average([float(v) for v, _ in rows], weights=[int(c) for _, c in rows]))


def test_summary_table_has_one_format_with_units(tmp_path):
    dev = h.devices()
    train, valid = h.loaders()
    out = io.StringIO()
    (LearnerBuilder(tmp_path).metric_train_numeric(AccuracyMetric()).metric_valid_numeric(AccuracyMetric())
     .metric_train_numeric(LossMetric()).metric_valid_numeric(LossMetric()).devices([dev]).num_epochs(2)
     .renderer(CliMetricsRenderer(file=out, lines_per_epoch=0)).plots(False).summary()
     .build(h.Classifier.init(dev), SgdConfig().init(), 0.1).fit(train, valid))
    text = (tmp_path / "summary.txt").read_text()
    assert text in out.getvalue()                                     # what `fit` printed
    lines = text.splitlines()
    model = [ln for ln in lines if "Model" in ln]
    assert model == ["Model: Classifier (15 parameters)"]             # one line
    rows = {(r[0], r[1]): r[2:] for r in (
        [c.strip() for c in ln.strip("|").split("|")] for ln in lines if ln.startswith("| ") and "Split" not in ln)}
    assert set(rows) == {(s, m) for s in ("Train", "Valid") for m in ("Accuracy", "Loss")}
    for split in ("train", "valid"):
        acc = _mean(tmp_path / split / "epoch-2" / "Accuracy.log")
        loss = _mean(tmp_path / split / "epoch-2" / "Loss.log")
        best, _epoch, last = rows[(split.capitalize(), "Accuracy")]
        assert re.fullmatch(r"\d+\.\d\d %", last) and float(last[:-2]) == round(acc, 2)
        assert re.fullmatch(r"\d+\.\d\d %", best)
        best, _epoch, last = rows[(split.capitalize(), "Loss")]
        digits = last.replace(".", "").lstrip("0")
        assert len(digits) == 4 and math.isclose(float(last), loss, rel_tol=1e-3)   # 4 significant digits
    saved = json.loads((tmp_path / "summary.json").read_text())
    assert {m["name"]: m["unit"] for m in saved["metrics"]} == {"Accuracy": "%", "Loss": ""}
    assert LearnerSummary.from_dir(tmp_path).table() == text          # `ember-train summary DIR` reads the units back


def test_format_value():
    assert format_value(81.87171, "%") == "81.87 %"
    assert format_value(92.82, "%") == "92.82 %"
    assert format_value(0.123456) == "0.1235"
    assert format_value(2.0) == "2.000"
    assert format_value(12345.6) == "1.235e+04"
    assert format_value(3.14159, " iter/s") == "3.142 iter/s"
    assert format_value(math.nan) == "nan"
    s = LearnerSummary([MetricSummary("train", "Accuracy", [(1, 50.0), (2, 75.5)], True, "%")], 2, "Net (3 parameters)")
    assert "| Train | Accuracy | 75.50 % | 2     | 75.50 % |" in s.table()
