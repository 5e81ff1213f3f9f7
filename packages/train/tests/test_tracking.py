"""TensorBoard, CSV and MLflow loggers: what they wrote, read back with each tool's own reader, equals the
``.log`` files; hyper-parameters; resume appends to the same run; loggers closed on errors; bad input."""

from __future__ import annotations

import csv
import io
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

import helpers as h
import resume_run
from ember.config import config
from ember.optim import SgdConfig
from ember_train import (
    CsvLogger,
    FileMetricLogger,
    LearnerBuilder,
    LearnerError,
    MlflowLogger,
    TensorBoardLogger,
    TrackingLogger,
    TrainingInterrupter,
)
from ember_train.metric import AccuracyMetric, LossMetric
from ember_train.renderer import CliMetricsRenderer

METRICS = ("Accuracy", "Loss")


@config
class _Opt:
    name: str = "sgd"
    beta_1: float = 0.9


@config
class _Hp:
    optimizer: _Opt
    lr: float = 0.1
    batch_size: int = 16


HPARAMS = _Hp(_Opt())


def _fit(tmp, *trackers, epochs=2, hparams=True, metrics=METRICS):
    dev = h.devices()
    b = (LearnerBuilder(tmp).devices([dev]).num_epochs(epochs).log_interval(2).plots(False)
         .renderer(CliMetricsRenderer(file=io.StringIO())))
    for m in metrics:
        metric = AccuracyMetric if m == "Accuracy" else LossMetric
        b = b.metric_train_numeric(metric()).metric_valid_numeric(metric())
    for t in trackers:
        b = b.with_metric_logger(t)
    if hparams:
        b = b.with_hyperparameters(HPARAMS)
    train, valid = h.loaders()
    return b.build(h.Classifier.init(dev), SgdConfig().init(), 0.1).fit(train, valid)


def _log_values(d: Path, split: str, metric: str) -> dict[int, list[tuple[float, int]]]:
    """``{epoch: [(value, count)]}`` of ``<d>/<split>/epoch-N/<metric>.log``: the independent record."""
    out = {}
    for f in sorted((d / split).glob(f"epoch-*/{metric}.log"), key=lambda p: int(p.parent.name[6:])):
        rows = [line.split(",") for line in f.read_text().splitlines()]
        out[int(f.parent.name[6:])] = [(float(v), int(c)) for v, c in rows]
    return out


def _series(d: Path, split: str, metric: str) -> tuple[list[float], dict[int, float]]:
    """Per-iteration values in order and count-weighted epoch means, from the .log files (float64)."""
    logs = _log_values(d, split, metric)
    values = [v for e in sorted(logs) for v, _ in logs[e]]
    means = {e: float(np.average([v for v, _ in rows], weights=[c for _, c in rows])) for e, rows in logs.items()}
    return values, means


def _requires(module: str, extra: str):
    return pytest.importorskip(module, reason=f"{module} is not installed (pip install 'ember-train[{extra}]')")


# -- TensorBoard -------------------------------------------------------------------------------------------
def _scalars(run_dir: Path, tag: str) -> list[tuple[int, float]]:
    ea = _requires("tensorboard.backend.event_processing.event_accumulator", "test")
    acc = ea.EventAccumulator(str(run_dir), size_guidance={ea.SCALARS: 0})
    acc.Reload()
    return [(e.step, e.value) for e in acc.Scalars(tag)]


def test_tensorboard_event_files_hold_every_scalar(tmp_path):
    _requires("tensorboardX", "tensorboard")
    _fit(tmp_path, TensorBoardLogger(tmp_path / "tb"))
    per_epoch = len(_log_values(tmp_path, "train", "Loss")[1])   # training iterations per epoch, from the logs
    assert per_epoch == 6
    for m in METRICS:
        # training: every iteration at its global training step
        values, means = _series(tmp_path, "train", m)
        got = _scalars(tmp_path / "tb" / "iterations" / "train", f"iteration/{m}")
        assert [s for s, _ in got] == list(range(1, 2 * per_epoch + 1))
        np.testing.assert_array_equal([v for _, v in got], np.float32(values))  # simple_value is float32
        # validation on the same axis: its epoch mean at the global training step where the epoch ended
        valid_values, valid_means = _series(tmp_path, "valid", m)
        got = _scalars(tmp_path / "tb" / "iterations" / "valid", f"iteration/{m}")
        assert [s for s, _ in got] == [per_epoch, 2 * per_epoch]
        np.testing.assert_allclose([v for _, v in got], [valid_means[1], valid_means[2]], rtol=1e-6)
        # validation batches: a separate tag with the validation's own step axis
        got = _scalars(tmp_path / "tb" / "valid_batches", f"valid_batch/{m}")
        assert [s for s, _ in got] == list(range(1, len(valid_values) + 1))
        np.testing.assert_array_equal([v for _, v in got], np.float32(valid_values))
        for split, mean in (("train", means), ("valid", valid_means)):
            got = _scalars(tmp_path / "tb" / split, f"epoch/{m}")
            assert [s for s, _ in got] == [1, 2]
            np.testing.assert_allclose([v for _, v in got], [mean[1], mean[2]], rtol=1e-6)
    assert len(valid_values) == 2 * 3   # valid: 48 items in batches of 16, two epochs


def test_tensorboard_hyperparameters(tmp_path):
    _requires("tensorboardX", "tensorboard")
    ea = _requires("tensorboard.backend.event_processing.event_accumulator", "test")
    from tensorboard.plugins.hparams import plugin_data_pb2

    _fit(tmp_path, TensorBoardLogger("tb"), epochs=1)   # relative: inside the artifact directory
    acc = ea.EventAccumulator(str(tmp_path / "tb"))
    acc.Reload()
    data = plugin_data_pb2.HParamsPluginData.FromString(
        acc.PluginTagToContent("hparams")["_hparams_/session_start_info"])
    hp = data.session_start_info.hparams
    assert hp["lr"].number_value == 0.1 and hp["batch_size"].number_value == 16
    assert hp["optimizer.name"].string_value == "sgd" and hp["optimizer.beta_1"].number_value == 0.9
    assert "config/text_summary" in acc.Tags()["tensors"]


def test_tensorboard_missing_is_a_clear_error(tmp_path, monkeypatch):
    import builtins

    real = builtins.__import__

    def no_tbx(name, *a, **k):
        if name.startswith("tensorboardX"):
            raise ImportError(name)
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_tbx)
    from ember import install_command

    with pytest.raises(LearnerError, match=re.escape(install_command("ember-train", "tensorboard"))):
        _fit(tmp_path, TensorBoardLogger(tmp_path / "tb"), epochs=1)


# -- CSV -----------------------------------------------------------------------------------------------------
def _csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def _check_csv(d: Path, rows: list[dict[str, str]]) -> None:
    for split in ("train", "valid"):
        for m in METRICS:
            values, means = _series(d, split, m)
            its = [r for r in rows if r["split"] == split and r["metric"] == m and r["iteration"]]
            assert [float(r["value"]) for r in its] == values                # exact: repr of the float
            assert [int(r["step"]) for r in its] == list(range(1, len(values) + 1))
            logs = _log_values(d, split, m)
            assert [(int(r["epoch"]), int(r["iteration"])) for r in its] == [
                (e, i) for e in sorted(logs) for i in range(1, len(logs[e]) + 1)]
            eps = [r for r in rows if r["split"] == split and r["metric"] == m and not r["iteration"]]
            assert [int(r["epoch"]) for r in eps] == sorted(means) and all(r["step"] == "" for r in eps)
            np.testing.assert_allclose([float(r["value"]) for r in eps], [means[e] for e in sorted(means)],
                                       rtol=1e-12)


def test_csv_rows_equal_the_log_files(tmp_path):
    _fit(tmp_path, CsvLogger())
    rows = _csv(tmp_path / "metrics.csv")
    assert list(rows[0]) == ["split", "epoch", "iteration", "step", "metric", "value"]
    _check_csv(tmp_path, rows)
    assert len(rows) == 2 * (6 + 3) * 2 + 2 * 2 * 2   # (train 6 + valid 3 iterations) x 2 epochs x 2 metrics


def test_a_fresh_run_truncates_the_csv(tmp_path):
    _fit(tmp_path, CsvLogger(), epochs=2)
    _fit(tmp_path, CsvLogger(), epochs=1)
    rows = _csv(tmp_path / "metrics.csv")
    assert {r["epoch"] for r in rows} == {"1"}


def test_csv_resume_with_foreign_header_is_an_error(tmp_path):
    resume_run.run(tmp_path, 1)
    (tmp_path / "metrics.csv").write_text("a,b\n1,2\n")
    with pytest.raises(LearnerError, match="not written by CsvLogger"):
        resume_run.run(tmp_path, 2, checkpoint=1, trackers=(CsvLogger(),))


# -- MLflow --------------------------------------------------------------------------------------------------
def _mlflow_history(d: Path, key: str) -> list[tuple[int, float]]:
    from mlflow.tracking import MlflowClient

    saved = json.loads((d / "mlflow-run.json").read_text())
    client = MlflowClient(tracking_uri=saved["tracking_uri"])
    return [(m.step, m.value) for m in sorted(client.get_metric_history(saved["run_id"], key),
                                               key=lambda m: (m.step, m.timestamp))]


def test_mlflow_metrics_params_and_config(tmp_path):
    _requires("mlflow", "mlflow")
    from mlflow.tracking import MlflowClient

    logger = MlflowLogger(experiment_name="ember-test", run_name="t")
    _fit(tmp_path, logger)
    per_epoch = len(_log_values(tmp_path, "train", "Loss")[1])
    for split in ("train", "valid"):
        for m in METRICS:
            values, means = _series(tmp_path, split, m)
            if split == "train":
                assert _mlflow_history(tmp_path, f"iteration/train/{m}") == list(enumerate(values, 1))
            else:   # validation means on the training steps' axis, at each epoch's end; its batches apart
                got = _mlflow_history(tmp_path, f"iteration/valid/{m}")
                assert [s for s, _ in got] == [per_epoch, 2 * per_epoch]
                np.testing.assert_allclose([v for _, v in got], [means[1], means[2]], rtol=1e-12)
                assert _mlflow_history(tmp_path, f"valid_batch/{m}") == list(enumerate(values, 1))
            got = _mlflow_history(tmp_path, f"epoch/{split}/{m}")
            assert [s for s, _ in got] == [1, 2]
            np.testing.assert_allclose([v for _, v in got], [means[1], means[2]], rtol=1e-12)
    client = MlflowClient(tracking_uri=logger.tracking_uri)
    run = client.get_run(logger.run_id)
    assert run.info.status == "FINISHED" and run.info.run_name == "t"
    assert run.data.params == {"lr": "0.1", "batch_size": "16", "optimizer.name": "sgd", "optimizer.beta_1": "0.9"}
    local = client.download_artifacts(logger.run_id, "config.json", str(tmp_path))
    assert json.loads(Path(local).read_text()) == HPARAMS.to_dict()
    assert logger.tracking_uri == (tmp_path / "mlruns").resolve().as_uri()


def test_mlflow_run_fails_on_an_error(tmp_path):
    _requires("mlflow", "mlflow")
    from mlflow.tracking import MlflowClient

    logger = MlflowLogger()
    with pytest.raises(ZeroDivisionError):
        _fit(tmp_path, logger, _Raise(), epochs=1)
    assert MlflowClient(tracking_uri=logger.tracking_uri).get_run(logger.run_id).info.status == "FAILED"


# -- resume, interrupt, errors -------------------------------------------------------------------------------
class _Spy(TrackingLogger):
    def __init__(self) -> None:
        self.calls: list[str] = []
        self.run = None

    def start(self, run) -> None:
        self.run = run
        self.calls.append("start")

    def flush(self) -> None:
        self.calls.append("flush")

    def close(self) -> None:
        self.calls.append("close")


class _Raise(TrackingLogger):
    """Fails at the 4th training entry logged (a logger or metric failing mid-training)."""

    def __init__(self) -> None:
        self.n = 0

    def log_iteration(self, split, name, value, epoch, iteration, step) -> None:
        self.n += 1
        if self.n == 4:
            raise ZeroDivisionError("boom")


def test_loggers_are_closed_on_errors_and_interrupts(tmp_path):
    spy = _Spy()
    with pytest.raises(ZeroDivisionError):
        _fit(tmp_path / "a", spy, _Raise(), epochs=1)
    assert spy.calls[0] == "start" and spy.calls[-1] == "close"
    spy = _Spy()
    stopper = TrainingInterrupter()

    def fn(p):
        if p.iteration == 2:
            stopper.stop("test")

    res = resume_run.run(tmp_path / "b", 2, resume_run.Hook(fn), interrupter=stopper, trackers=(spy,))
    assert res.interrupted and spy.calls[-1] == "close" and spy.run.resume is None
    spy = _Spy()
    resume_run.run(tmp_path / "b", 2, checkpoint=1, trackers=(spy,))
    r = spy.run.resume
    assert (r.epoch, r.iteration, r.train_step, r.valid_step) == (1, 2, 2, 0)
    assert spy.run.hparams == {} and spy.run.iterations_per_epoch == {"train": 6, "valid": 3}


def test_interrupted_and_resumed_run_continues_the_same_run(tmp_path):
    """Interrupt mid-epoch 2, resume: the CSV, TensorBoard and MLflow series are those of an uninterrupted run."""
    has_tb = _has("tensorboardX") and _has("tensorboard")
    has_mlflow = _has("mlflow")

    def trackers():
        out: list[TrackingLogger] = [CsvLogger()]
        if has_tb:
            out.append(TensorBoardLogger())
        if has_mlflow:
            out.append(MlflowLogger())
        return tuple(out)

    ref = tmp_path / "ref"
    resume_run.run(ref, 3, trackers=trackers())
    d = tmp_path / "run"
    stopper = TrainingInterrupter()

    def fn(p):
        if p.epoch == 2 and p.iteration == 4:
            stopper.stop("test")

    first = resume_run.run(d, 3, resume_run.Hook(fn), interrupter=stopper, trackers=trackers())
    assert first.interrupted and first.resume_epoch == 2
    resume_run.run(d, 3, checkpoint=2, trackers=trackers())

    def table(rows):
        return [(r["split"], r["epoch"], r["iteration"], r["step"], r["metric"], r["value"]) for r in rows]

    # the Learner's resume is bitwise exact here (numpy float64), so the whole CSV equals the reference's
    assert sorted(table(_csv(d / "metrics.csv"))) == sorted(table(_csv(ref / "metrics.csv")))
    _check_csv(d, _csv(d / "metrics.csv"))
    if has_tb:
        for split, tag in (("iterations/train", "iteration/Loss"), ("iterations/valid", "iteration/Accuracy"),
                           ("valid_batches", "valid_batch/Loss"), ("train", "epoch/Loss"), ("valid", "epoch/Loss")):
            assert _scalars(d / "tensorboard" / split, tag) == _scalars(ref / "tensorboard" / split, tag), split
    if has_mlflow:
        run_id = json.loads((d / "mlflow-run.json").read_text())["run_id"]
        for key in ("iteration/train/Loss", "iteration/valid/Loss", "valid_batch/Accuracy", "epoch/valid/Accuracy"):
            assert _mlflow_history(d, key) == _mlflow_history(ref, key), key
        assert json.loads((d / "mlflow-run.json").read_text())["run_id"] == run_id


def _has(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def test_bad_input(tmp_path):
    with pytest.raises(LearnerError, match=r"expected a TrackingLogger.*metric_loggers"):
        LearnerBuilder(tmp_path).with_metric_logger(FileMetricLogger(tmp_path))
    with pytest.raises(LearnerError, match="expected an @config object or a dict, got int"):
        LearnerBuilder(tmp_path).with_hyperparameters(3)
    with pytest.raises(LearnerError, match="JSON-compatible"):
        LearnerBuilder(tmp_path).with_hyperparameters({"f": object()})
    with pytest.raises(LearnerError, match="expected True or False"):
        LearnerBuilder(tmp_path).plots("yes")


def test_nan_values_reach_the_csv(tmp_path):
    """A non-finite value is logged as such (and left out of the epoch mean, as in the summary)."""
    logger = CsvLogger()
    logger.start(resume_run_info(tmp_path))
    logger.log_iteration("train", "Loss", math.nan, 1, 1, 1)
    logger.log_epoch("train", "Loss", 0.5, 1)
    logger.close()
    rows = _csv(tmp_path / "metrics.csv")
    assert math.isnan(float(rows[0]["value"])) and rows[1]["value"] == "0.5"


def resume_run_info(d: Path):
    from ember_train import RunInfo

    return RunInfo(d)


def test_killed_run_resumed_from_an_earlier_checkpoint_drops_what_came_after(tmp_path):
    """SIGKILL inside epoch 3, resume from checkpoint 2: the CSV rows and TensorBoard points the killed run logged
    in epoch 3 are dropped (rewritten file / TensorBoard's purge step), so the series equal an uninterrupted run's."""
    ref = tmp_path / "ref"
    trackers = (CsvLogger(), TensorBoardLogger()) if _has("tensorboardX") else (CsvLogger(),)
    resume_run.run(ref, 4, trackers=trackers)
    d = tmp_path / "run"
    d.mkdir()
    resume_run.run_killed(d, 4, 3, 4, "--trackers")
    killed = _csv(d / "metrics.csv")
    assert any(r["epoch"] == "3" and r["iteration"] == "4" for r in killed)   # logged before the kill
    trackers = (CsvLogger(), TensorBoardLogger()) if _has("tensorboardX") else (CsvLogger(),)
    resume_run.run(d, 4, checkpoint=2, trackers=trackers)
    rows = _csv(d / "metrics.csv")
    assert rows == _csv(ref / "metrics.csv")
    if _has("tensorboardX") and _has("tensorboard"):
        for split, tag in (("iterations/train", "iteration/Loss"), ("iterations/valid", "iteration/Loss"),
                           ("valid_batches", "valid_batch/Loss"), ("train", "epoch/Accuracy"), ("valid", "epoch/Loss")):
            assert _scalars(d / "tensorboard" / split, tag) == _scalars(ref / "tensorboard" / split, tag), split
