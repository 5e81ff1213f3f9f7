"""Plots: ``plots/<Metric>.png`` after each epoch (valid PNGs; the figure's lines checked against the .log files
before saving), ``index.html``, one continuous curve after interrupt + resume, the ``plot`` CLI with ``--compare``,
and the note without matplotlib."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import helpers as h
import resume_run
from ember.optim import SgdConfig
from ember_train import LearnerBuilder, LearnerError, TrainingInterrupter
from ember_train._cli import main
from ember_train.metric import AccuracyMetric, LossMetric
from ember_train.renderer import CliMetricsRenderer

pytest.importorskip("matplotlib", reason="matplotlib is not installed (pip install 'ember-train[plot]')")

from PIL import Image  # noqa: E402 - pillow comes with matplotlib

import ember_train.plots._figure as figure_mod  # noqa: E402


class _Watch(CliMetricsRenderer):
    """Records, at the start of each training epoch, which plot files exist and their bytes."""

    def __init__(self, plots: Path) -> None:
        super().__init__(file=io.StringIO())
        self.plots = plots
        self.seen: dict[int, dict[str, bytes]] = {}

    def render_train(self, progress) -> None:
        if progress.epoch not in self.seen:
            self.seen[progress.epoch] = {p.name: p.read_bytes() for p in sorted(self.plots.glob("*"))}


@pytest.fixture
def figures(monkeypatch):
    """Every figure saved, with its data read before saving: ``[(path, [[(label, xs, ys)] per axes])]``."""
    saved = []
    real = figure_mod.save_figure

    def spy(fig, path):
        axes = [[(ln.get_label(), list(ln.get_xdata()), list(ln.get_ydata())) for ln in ax.get_lines()]
                for ax in fig.axes]
        saved.append((Path(path), axes))
        return real(fig, path)

    monkeypatch.setattr(figure_mod, "save_figure", spy)
    return saved


@pytest.fixture
def labelled(monkeypatch):
    """The axes' labels, x limits and line markers of every figure saved: ``{file name: [axes info]}``."""
    saved = {}
    real = figure_mod.save_figure

    def spy(fig, path):
        saved[Path(path).name] = [{"ylabel": ax.get_ylabel(), "xlabel": ax.get_xlabel(), "xlim": ax.get_xlim(),
                                   "markers": [ln.get_marker() for ln in ax.get_lines()],
                                   "xticks": list(ax.get_xticks())} for ax in fig.axes]
        return real(fig, path)

    monkeypatch.setattr(figure_mod, "save_figure", spy)
    return saved


def _fit(tmp, renderer=None, epochs=3):
    dev = h.devices()
    train, valid = h.loaders()
    return (LearnerBuilder(tmp).metric_train_numeric(AccuracyMetric()).metric_valid_numeric(AccuracyMetric())
            .metric_train_numeric(LossMetric()).metric_valid_numeric(LossMetric())
            .devices([dev]).num_epochs(epochs).log_interval(2)
            .renderer(renderer or CliMetricsRenderer(file=io.StringIO()))
            .build(h.Classifier.init(dev), SgdConfig().init(), 0.1).fit(train, valid))


def _logs(d: Path, split: str, metric: str) -> dict[int, list[tuple[float, int]]]:
    out = {}
    for f in (d / split).glob(f"epoch-*/{metric}.log"):
        out[int(f.parent.name[6:])] = [(float(v), int(c)) for v, c in (ln.split(",") for ln in f.read_text().split())]
    return dict(sorted(out.items()))


def _expected(d: Path, split: str, metric: str, per_epoch: int):
    """(iteration xs, iteration ys, epoch xs, epoch means) computed independently from the .log files."""
    logs = _logs(d, split, metric)
    xs = [e - 1 + i / per_epoch for e, rows in logs.items() for i in range(1, len(rows) + 1)]
    ys = [v for rows in logs.values() for v, _ in rows]
    means = [np.average([v for v, _ in rows], weights=[c for _, c in rows]) for rows in logs.values()]
    return xs, ys, list(logs), means


def _check_figure(d: Path, axes, metric: str) -> None:
    it_ax, ep_ax = axes
    # one line per split on each axes; validation on the per-iteration axes is a point at each epoch's end
    assert [label for label, _, _ in it_ax] == ["train", "valid (end of epoch)"]
    assert [label for label, _, _ in ep_ax] == ["train", "valid"]
    (_, ixs, iys), (_, vxs, vys) = it_ax
    xs, ys, epochs, means = _expected(d, "train", metric, 6)
    np.testing.assert_allclose(ixs, xs, rtol=1e-12)
    assert iys == ys
    _, _, valid_epochs, valid_means = _expected(d, "valid", metric, 3)
    assert vxs == [float(e) for e in valid_epochs]       # validation of epoch e at x = e, where training ended
    np.testing.assert_allclose(vys, valid_means, rtol=1e-12)
    assert max(ixs) == max(vxs)                          # the last training iteration and the last validation meet
    for (split, exs, eys), mean_of in zip(ep_ax, ((epochs, means), (valid_epochs, valid_means))):
        assert exs == mean_of[0], split
        np.testing.assert_allclose(eys, mean_of[1], rtol=1e-12)


def _check_json(d: Path, metric: str, unit: str) -> None:
    """``plots/curves.json``, the data written next to the PNGs: labels, units and the points, against the logs."""
    data = json.loads((d / "plots" / "curves.json").read_text())[metric]
    assert data["unit"] == unit
    assert data["ylabel"] == (f"{metric} ({unit})" if unit else metric)
    assert "epochs" in data["xlabel"]["iteration"] and data["xlabel"]["epoch"] == "epoch"
    train, valid = data["curves"]
    xs, ys, epochs, means = _expected(d, "train", metric, 6)
    np.testing.assert_allclose(train["iteration"]["x"], xs, rtol=1e-12)
    np.testing.assert_allclose(train["iteration"]["y"], ys, rtol=1e-12)
    _, _, valid_epochs, valid_means = _expected(d, "valid", metric, 3)
    assert valid["at_epoch_end"] and valid["iteration"]["x"] == valid_epochs == epochs
    np.testing.assert_allclose(valid["iteration"]["y"], valid_means, rtol=1e-12)


def test_plots_after_each_epoch(tmp_path, figures):
    watch = _Watch(tmp_path / "plots")
    _fit(tmp_path, watch)
    # written at each epoch end: present when the next epoch starts, and redrawn (new bytes) each time
    assert set(watch.seen) == {1, 2, 3} and watch.seen[1] == {}
    assert set(watch.seen[2]) == {"Accuracy.png", "Loss.png", "curves.json", "index.html"}
    assert watch.seen[3]["Loss.png"] != watch.seen[2]["Loss.png"]
    for name in ("Accuracy.png", "Loss.png"):
        with Image.open(tmp_path / "plots" / name) as img:
            img.verify()
        with Image.open(tmp_path / "plots" / name) as img:
            assert img.format == "PNG" and img.size == (1100, 400)
    assert [p.name for p, _ in figures] == ["Accuracy.png", "Loss.png"] * 3
    last = {p.name: axes for p, axes in figures[-2:]}
    _check_figure(tmp_path, last["Loss.png"], "Loss")
    _check_figure(tmp_path, last["Accuracy.png"], "Accuracy")
    _check_json(tmp_path, "Loss", "")
    _check_json(tmp_path, "Accuracy", "%")
    page = (tmp_path / "plots" / "index.html").read_text()
    assert '<img src="Accuracy.png"' in page and '<img src="Loss.png"' in page
    assert not list((tmp_path / "plots").glob(".*tmp"))   # atomic writes leave no temporary file


def test_one_epoch_run_shows_its_iterations_and_the_validation_point(tmp_path, labelled):
    _fit(tmp_path, epochs=1)
    _check_json(tmp_path, "Accuracy", "%")
    data = json.loads((tmp_path / "plots" / "curves.json").read_text())["Accuracy"]
    train, valid = data["curves"]
    assert len(train["iteration"]["x"]) == 6 and valid["iteration"]["x"] == [1]    # more than a single point
    ax_it, ax_ep = labelled["Accuracy.png"]
    assert ax_it["ylabel"] == ax_ep["ylabel"] == "Accuracy (%)"
    assert ax_it["xlim"][0] <= 0 < 1 <= ax_it["xlim"][1]    # the whole epoch, from its start to its validation
    assert ax_it["markers"] == [".", "D"]                      # each iteration and the validation point visible
    assert ax_ep["xticks"] == [1] and ax_ep["xlabel"] == "epoch"   # one whole-number epoch, not 0.96 ... 1.04


def test_interrupted_run_resumed_keeps_one_continuous_curve(tmp_path, figures):
    stopper = TrainingInterrupter()

    def fn(p):
        if p.epoch == 2 and p.iteration == 3:
            stopper.stop("test")

    assert resume_run.run(tmp_path, 3, resume_run.Hook(fn), interrupter=stopper).interrupted
    # the interrupted run drew its partial epoch when it ended
    _, axes = [f for f in figures if f[0].name == "Loss.png"][-1]
    assert len(axes[0][0][1]) == 6 + 3
    figures.clear()
    resume_run.run(tmp_path, 3, checkpoint=2)
    _, axes = [f for f in figures if f[0].name == "Loss.png"][-1]
    _check_figure(tmp_path, axes, "Loss")             # all 3 epochs, every iteration once, x increasing
    xs = axes[0][0][1]
    assert len(xs) == 18 and all(b > a for a, b in zip(xs, xs[1:]))


def test_without_matplotlib_the_learner_says_so_once(tmp_path, monkeypatch):
    real_find_spec = figure_mod.importlib.util.find_spec   # the patch is global: keep the real one to delegate to
    monkeypatch.setattr(figure_mod.importlib.util, "find_spec",
                        lambda name, *a: None if name == "matplotlib" else real_find_spec(name, *a))
    buf = io.StringIO()
    _fit(tmp_path, CliMetricsRenderer(file=buf), epochs=2)
    notes = [ln for ln in buf.getvalue().splitlines() if "Plots are off" in ln]
    from ember import install_command

    hint = install_command("ember-train", "plot")         # pip install -e '<checkout>/packages/train[plot]' here
    assert len(notes) == 1 and hint in notes[0] and "plots(False)" in notes[0]
    assert not (tmp_path / "plots").exists()
    with pytest.raises(LearnerError, match="needs matplotlib.*" + re.escape(hint)):
        figure_mod.metric_figure("Loss", [])


def test_plots_off(tmp_path):
    dev = h.devices()
    train, valid = h.loaders()
    (LearnerBuilder(tmp_path).metric_train_numeric(LossMetric()).devices([dev]).plots(False)
     .renderer(CliMetricsRenderer(file=io.StringIO())).build(h.Classifier.init(dev), SgdConfig().init(), 0.1)
     .fit(train, valid))
    assert not (tmp_path / "plots").exists()


def test_cli_plot_and_compare(tmp_path, figures, capsys):
    a, b = tmp_path / "a", tmp_path / "b"
    _fit(a, epochs=2)
    _fit(b, epochs=1)
    figures.clear()
    assert main(["plot", str(a)]) == 0
    assert "wrote 2 figure(s)" in capsys.readouterr().out
    _check_figure(a, dict((p.name, ax) for p, ax in figures)["Loss.png"], "Loss")
    figures.clear()
    out = tmp_path / "cmp"
    assert main(["plot", str(a), "--compare", str(b), "-o", str(out)]) == 0
    axes = dict((p.name, ax) for p, ax in figures)["Accuracy.png"]
    assert [label for label, _, _ in axes[1]] == ["a train", "a valid", "b train", "b valid"]
    assert axes[1][2][1] == [1] and axes[1][0][1] == [1, 2]
    assert (out / "index.html").exists() and (out / "Loss.png").read_bytes()[:4] == b"\x89PNG"
    assert main(["plot", str(a), "--compare", str(tmp_path / "nope")]) == 2
    assert "no training logs" in capsys.readouterr().err


def test_python_dash_m_ember_train(tmp_path):
    _fit(tmp_path, epochs=1)
    r = subprocess.run([sys.executable, "-m", "ember_train", "plot", str(tmp_path), "-o", str(tmp_path / "o")],
                       capture_output=True, text=True, check=True)
    assert "index.html" in r.stdout and (tmp_path / "o" / "Loss.png").exists()
