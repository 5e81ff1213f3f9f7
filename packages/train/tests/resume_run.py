"""A training run used by the resume tests, in-process or as a subprocess (``python resume_run.py DIR EPOCHS
[--block-at EPOCH ITER]``): with ``--block-at`` it writes ``DIR/blocked`` at that point and sleeps, so the
parent can SIGKILL it mid-epoch."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import helpers as h
from ember.optim import AdamConfig
from ember.optim.lr_scheduler import ExponentialLrSchedulerConfig
from ember.record import DoublePrecisionSettings, NamedMpkFileRecorder
from ember_train import LearnerBuilder
from ember_train.metric import AccuracyMetric, LearningRateMetric, LossMetric
from ember_train.renderer import MetricsRenderer


class Hook(MetricsRenderer):
    """Calls ``fn(progress)`` at every train render."""

    def __init__(self, fn: Any = None) -> None:
        self.fn = fn

    def render_train(self, progress: Any) -> None:
        if self.fn is not None:
            self.fn(progress)


def builder(artifact_dir: Path, epochs: int, renderer: MetricsRenderer | None = None,
            checkpoint: int | None = None, trackers: tuple[Any, ...] = ()) -> LearnerBuilder:
    b = (LearnerBuilder(artifact_dir)
         .metric_train_numeric(AccuracyMetric()).metric_valid_numeric(AccuracyMetric())
         .metric_train_numeric(LossMetric()).metric_valid_numeric(LossMetric())
         .metric_train_numeric(LearningRateMetric())
         .with_file_checkpointer(NamedMpkFileRecorder(DoublePrecisionSettings()))
         .devices([h.devices()]).num_epochs(epochs).log_interval(1)
         .renderer(renderer or Hook()))
    for t in trackers:
        b = b.with_metric_logger(t)
    return b.checkpoint(checkpoint) if checkpoint else b


def run(artifact_dir: Path, epochs: int, renderer: MetricsRenderer | None = None,
        checkpoint: int | None = None, interrupter: Any = None, trackers: tuple[Any, ...] = ()) -> Any:
    b = builder(artifact_dir, epochs, renderer, checkpoint, trackers)
    if interrupter is not None:
        b = b.with_interrupter(interrupter)
    dev = h.devices()
    learner = b.build(h.Classifier.init(dev), AdamConfig().init(), ExponentialLrSchedulerConfig(0.05, 0.97))
    train, valid = h.loaders()
    return learner.fit(train, valid)


def run_killed(artifact_dir: Path, epochs: int, epoch: int, iteration: int, *extra: str) -> None:
    """Run this file in a subprocess (``extra``: more arguments), SIGKILL it once it reached ``iteration`` of
    ``epoch`` (its logs flushed up to there), and remove its ``blocked`` marker."""
    here = Path(__file__).parent
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(here), os.environ.get("PYTHONPATH", "")]))
    err = artifact_dir.parent / f"{artifact_dir.name}-stderr.txt"
    with open(err, "wb") as errf:
        proc = subprocess.Popen([sys.executable, str(here / "resume_run.py"), str(artifact_dir), str(epochs),
                                 "--block-at", str(epoch), str(iteration), *extra],
                                env=env, stdout=subprocess.DEVNULL, stderr=errf)
    try:
        deadline = time.monotonic() + 60
        while not (artifact_dir / "blocked").exists():
            assert proc.poll() is None, err.read_text()
            assert time.monotonic() < deadline, f"the subprocess never reached epoch {epoch}"
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -signal.SIGKILL
    (artifact_dir / "blocked").unlink()


if __name__ == "__main__":
    out = Path(sys.argv[1])
    epochs = int(sys.argv[2])
    fn = None
    if "--block-at" in sys.argv:
        i = sys.argv.index("--block-at")
        be, bi = int(sys.argv[i + 1]), int(sys.argv[i + 2])

        def fn(p: Any) -> None:
            if p.epoch == be and p.iteration >= bi:
                (out / "blocked").write_text(f"{p.epoch} {p.iteration}")
                time.sleep(120)

    trackers: tuple[Any, ...] = ()
    if "--trackers" in sys.argv:  # the CSV logger, and TensorBoard's when tensorboardX is installed
        from ember_train import CsvLogger, TensorBoardLogger

        try:
            import tensorboardX  # noqa: F401

            trackers = (CsvLogger(), TensorBoardLogger(flush_secs=0))  # on disk at every logging interval
        except ImportError:
            trackers = (CsvLogger(),)
    run(out, epochs, Hook(fn), trackers=trackers)
