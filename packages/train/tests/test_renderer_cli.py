"""Renderer output in both modes, the CLI, and a run on the torch backend when it loads."""

from __future__ import annotations

import io
import re
import subprocess
import sys

import pytest
from rich.console import Console

import ember
import helpers as h
from ember.optim import SgdConfig
from ember_train import LearnerBuilder
from ember_train._cli import main
from ember_train.metric import AccuracyMetric, LossMetric
from ember_train.renderer import CliMetricsRenderer, TuiMetricsRenderer, default_renderer, sparkline

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _fit(tmp, renderer, epochs=2, dev=None, loaders=None):
    dev = dev or h.devices()
    train, valid = loaders or h.loaders()
    return (LearnerBuilder(tmp)
            .metric_train_numeric(AccuracyMetric()).metric_valid_numeric(AccuracyMetric())
            .metric_train_numeric(LossMetric()).metric_valid_numeric(LossMetric())
            .devices([dev]).num_epochs(epochs).summary().log_interval(2).renderer(renderer)
            .build(h.Classifier.init(dev), SgdConfig().init(), 0.1).fit(train, valid))


def test_dashboard_on_a_terminal(tmp_path):
    buf = io.StringIO()
    console = Console(force_terminal=True, file=buf, width=150, color_system="truecolor")
    _fit(tmp_path, TuiMetricsRenderer(console, refresh_seconds=0.0), epochs=3)
    raw = buf.getvalue()
    assert ANSI.search(raw)                         # a live terminal view (cursor moves, colours)
    text = ANSI.sub("", raw)
    for needle in ("Epoch", "Train", "Valid", "items/s", "ETA", "Accuracy", "Loss", "3/3",
                   "History (train / valid, per epoch)", "Learner Summary"):
        assert needle in text, needle
    assert re.search(r"[▁▂▃▄▅▆▇█]{3}", text)          # three epochs of history drawn as a sparkline
    assert "(last epoch)" in text or "epoch " in text


def test_plain_lines_when_not_a_terminal(tmp_path, capsys):
    buf = io.StringIO()
    _fit(tmp_path, CliMetricsRenderer(file=buf, lines_per_epoch=3), loaders=h.loaders(n_train=96, batch_size=8))
    text = buf.getvalue()
    assert not ANSI.search(text)
    lines = text.splitlines()
    progress = [ln for ln in lines if ln.startswith("[train] epoch 1/2 iter")]
    assert 2 <= len(progress) <= 3 and all("items/s ETA" in ln for ln in progress)
    assert any(ln.startswith("[valid] epoch 2 done: Accuracy") for ln in lines)
    assert "| Split | Metric" in text
    assert isinstance(default_renderer(), CliMetricsRenderer)   # pytest's stdout is not a terminal


def test_sparkline():
    assert sparkline([0.0, 0.5, 1.0]) == "▁▅█"
    assert sparkline([1.0, 1.0]) == "▅▅"
    assert sparkline([0.0, float("nan"), 1.0]) == "▁ █"


def test_cli_summary(tmp_path, capsys):
    _fit(tmp_path, CliMetricsRenderer(file=io.StringIO()))
    assert main(["summary", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out == (tmp_path / "summary.txt").read_text()
    (tmp_path / "summary.json").unlink()   # without it, built-in metric names still give the direction
    main(["summary", str(tmp_path)])
    out = capsys.readouterr().out
    assert re.search(r"\| Valid \| Accuracy \| [\d.]+ % +\| \d", out)   # the unit, known without summary.json
    assert main(["summary", str(tmp_path / "nope")]) == 2
    assert "no training logs" in capsys.readouterr().err


def test_cli_entry_point(tmp_path):
    _fit(tmp_path, CliMetricsRenderer(file=io.StringIO()), epochs=1)
    r = subprocess.run([sys.executable, "-m", "ember_train._cli", "summary", str(tmp_path)],
                       capture_output=True, text=True, check=True)
    assert "Learner Summary" in r.stdout


def test_torch_backend_end_to_end(tmp_path):
    try:
        backend = ember.backend("torch")
    except Exception as exc:  # noqa: BLE001
        pytest.skip(f"torch backend unavailable: {exc}")
    from ember.autodiff import Autodiff

    dev = Autodiff(backend).device()
    res = _fit(tmp_path, CliMetricsRenderer(file=io.StringIO()), epochs=2, dev=dev)
    assert sorted(p.name for p in (tmp_path / "train/epoch-2").iterdir()) == ["Accuracy.log", "Loss.log"]
    assert len((tmp_path / "valid/epoch-1/Loss.log").read_text().splitlines()) == 3
    losses = [v for _, v in next(m for m in res.summary.metrics if m.split == "train" and m.name == "Loss").history]
    assert losses[1] < losses[0]
