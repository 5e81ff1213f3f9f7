"""The dashboard's plot panel rendered headless at a fixed size (axis, series, tabs, full/recent), its arrow keys
through a pseudo-terminal, and the panel inside the live dashboard."""

from __future__ import annotations

import io
import os
import re
import threading

from rich.console import Console

import helpers as h
from ember.optim import SgdConfig
from ember_train import LearnerBuilder
from ember_train.metric import AccuracyMetric, LossMetric
from ember_train.renderer import TuiMetricsRenderer
from ember_train.renderer._chart import PlotPanel
from ember_train.renderer._keys import KeyReader

BLOCK = re.compile(r"[▀▄▌▐▖▗▘▝▚▞▙▛▜▟█]")


def _text(renderable, width=80) -> str:
    console = Console(width=width, file=io.StringIO(), color_system=None, force_terminal=False)
    console.print(renderable)
    return console.file.getvalue()


def _panel() -> PlotPanel:
    """Loss falls 4.0 -> 0.1 over 2 epochs of 50 train steps (progress every 10); valid 2 values per epoch."""
    p = PlotPanel(recent=20)
    for e in (1, 2):
        for i in range(1, 51):
            p.add("train", "Loss", 4.0 - 3.9 * ((e - 1) * 50 + i - 1) / 99)
            p.add("train", "Accuracy", 50.0 + e)
            if i % 10 == 0:
                p.progress("train", e, i * 8, 400)
        p.add("valid", "Loss", 3.0 / e)
        p.add("valid", "Loss", 3.0 / e)
        p.progress("valid", e, 32, 32)
        p.epoch_end("valid", e, {"Loss": 3.0 / e})
    return p


def test_validation_is_a_point_at_the_end_of_its_epoch():
    """Validation follows the epoch's training: its mean sits at x = epoch, not spread over the training span."""
    p = _panel()
    assert p.series("Loss")["valid"] == ([1.0, 2.0], [3.0, 1.5])
    xs, _ = p.series("Loss")["train"]
    assert xs[0] > 0 and xs[-1] == 2.0 and all(b > a for a, b in zip(xs, xs[1:]))


def test_panel_renders_axis_and_series_at_a_fixed_size():
    p = _panel()
    out = _text(p.render(80, 10)).splitlines()
    assert out[0].startswith("Plots") and " Loss " in out[0] and " Accuracy " in out[0]
    assert "train: last 0.1  min 0.1  max 4 " in out[1] and "valid: last 1.5  min 1.5  max 3" in out[1]
    assert "Loss — Full history" in out[2]
    top = next(i for i, ln in enumerate(out) if ln.lstrip().startswith("┌"))
    rows = out[top + 1: top + 11]
    assert len(rows) == 10 and all(r.lstrip().startswith("│") for r in rows)   # 10 chart lines in the frame
    assert out[top + 11].lstrip().startswith("└")
    # the x axis in epochs from 0 to 2, the y axis labels inside [0.1, 4]
    # x labels in epochs over the data's own range: no label left of the first point ("-0.0 ep")
    assert re.search(r"\b2(\.0)? ep", out[top + 12]) and "-" not in out[top + 12]
    ys = [float(m) for r in rows for m in re.findall(r"│\s+(-?[\d.]+)\s*$", r)]
    assert ys and all(0.1 <= y <= 4.0 for y in ys)
    assert "train" in out[-1] and "valid" in out[-1]                      # the legend
    # the falling train line: top row drawn at the left, bottom row at the right
    first = rows[0].split("│")[1]
    last = rows[-1].split("│")[1]
    assert BLOCK.search(first[:5]) and not BLOCK.search(first[-20:])
    assert BLOCK.search(last[-5:])


def test_arrow_keys_switch_metric_and_history():
    p = _panel()
    assert p.key("right") and "Accuracy — Full history" in _text(p.render(80, 6))
    assert p.key("left") and p.key("left") and "Accuracy" in _text(p.render(80, 6))   # wraps around
    p.key("right")
    assert p.key("down")
    out = _text(p.render(80, 6))
    assert "Loss — Recent history" in out
    xs, ys = p.series("Loss")["train"]
    assert len(ys) == 20 and ys[-1] == 4.0 - 3.9 * 99 / 99                 # the last 20 steps only
    vx, _ = p.series("Loss")["valid"]
    assert vx == [2.0] and min(vx) >= xs[0]                                # valid in the same x range
    assert f"min {min(ys):.5g}" in out and f"max {max(ys):.5g}" in out
    assert not p.key("x")


def test_key_reader_reads_arrows_from_a_terminal():
    master, slave = os.openpty()
    got: list[str] = []
    done = threading.Event()

    def on_key(k: str) -> None:
        got.append(k)
        if len(got) == 4:
            done.set()

    stream = os.fdopen(slave, "rb", buffering=0)
    reader = KeyReader(on_key, stream)
    try:
        assert reader.start()
        os.write(master, b"\x1b[Cx\x1b[D\x1b[A\x1bOB")
        assert done.wait(5), got
    finally:
        reader.stop()
        stream.close()
        os.close(master)
    assert got == ["right", "left", "up", "down"]
    assert not KeyReader(on_key, io.BytesIO()).start()    # not a terminal: nothing to read


def test_panel_in_the_live_dashboard(tmp_path):
    buf = io.StringIO()
    console = Console(force_terminal=True, file=buf, width=110, color_system="truecolor")
    dev = h.devices()
    train, valid = h.loaders()
    (LearnerBuilder(tmp_path).metric_train_numeric(AccuracyMetric()).metric_valid_numeric(AccuracyMetric())
     .metric_train_numeric(LossMetric()).metric_valid_numeric(LossMetric()).plots(False)
     .devices([dev]).num_epochs(2).log_interval(2).renderer(TuiMetricsRenderer(console, 0.0, keys=False))
     .build(h.Classifier.init(dev), SgdConfig().init(), 0.1).fit(train, valid))
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", buf.getvalue())
    assert "Accuracy — Full history" in text and "██ train" in text and "██ valid" in text


def test_dashboard_says_compiling_while_a_first_call_compiles():
    from ember_train.renderer._base import TrainingProgress

    r = TuiMetricsRenderer(console=Console(width=160, file=io.StringIO(), force_terminal=True), keys=False)
    r.compiling("training step", None)
    text = _text(r._view(), 160)
    assert "Compiling the training step: its first call traces and compiles it" in text
    assert "the ETA leaves this time out" in text
    r.compiling("training step", 35.24)
    # 2 of 10 iterations, the first compiled for 35 s, the second took 1 s: the ETA is 8 steady iterations
    r.render_train(TrainingProgress(32, 160, 1, 1, 2, 10, 36.24, compile_seconds=35.24, compile_iterations=1))
    text = _text(r._view(), 160)
    assert "Compiling" not in text and "Compiled the training step in 35.2 s (left out of the ETA)." in text
    assert "ETA 0:00:08" in text and "elapsed 0:00:36" in text
    r.on_train_end(None)
