"""A training run used by the resume tests, in-process or as a subprocess (``python resume_run.py DIR EPOCHS
[--block-at EPOCH ITER]``): with ``--block-at`` it writes ``DIR/blocked`` at that point and sleeps, so the
parent can SIGKILL it mid-epoch."""

from __future__ import annotations

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
            checkpoint: int | None = None) -> LearnerBuilder:
    b = (LearnerBuilder(artifact_dir)
         .metric_train_numeric(AccuracyMetric()).metric_valid_numeric(AccuracyMetric())
         .metric_train_numeric(LossMetric()).metric_valid_numeric(LossMetric())
         .metric_train_numeric(LearningRateMetric())
         .with_file_checkpointer(NamedMpkFileRecorder(DoublePrecisionSettings()))
         .devices([h.devices()]).num_epochs(epochs).log_interval(1)
         .renderer(renderer or Hook()))
    return b.checkpoint(checkpoint) if checkpoint else b


def run(artifact_dir: Path, epochs: int, renderer: MetricsRenderer | None = None,
        checkpoint: int | None = None, interrupter: Any = None) -> Any:
    b = builder(artifact_dir, epochs, renderer, checkpoint)
    if interrupter is not None:
        b = b.with_interrupter(interrupter)
    dev = h.devices()
    learner = b.build(h.Classifier.init(dev), AdamConfig().init(), ExponentialLrSchedulerConfig(0.05, 0.97))
    train, valid = h.loaders()
    return learner.fit(train, valid)


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

    run(out, epochs, Hook(fn))
