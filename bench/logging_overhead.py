"""Logging overhead: the MNIST guide's training step under the Learner with no metric loggers, with the default
ones (file logs, ``experiment.log``, plots), and with TensorBoard, CSV and plots all on (issue 21's target: at most
2 % per step, plots drawn at epoch ends only).

    python bench/logging_overhead.py [--rounds 5] [--steps 100] [--mlflow] [--data-dir DIR]

Each round fits the guide's model (numpy backend, one BLAS thread, batch 64) for one short epoch under each
configuration in turn, interleaved. A renderer hook takes the time at every logging interval (10 steps), so the
per-step time is the median interval / 10 over the steady state (the first interval of each fit left out); the
same metrics (Accuracy, Loss on train and valid) are computed in every configuration, so the difference is the
logging. The epoch-end work (drawing plots) is timed apart, on the history of a 10-epoch guide run (938 train and
157 valid steps per epoch), and spread over one guide epoch of 938 steps: the "per step, epoch end included"
column. Ratios are against "no loggers" in the same run.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "examples"))

from ember.autodiff import Autodiff  # noqa: E402
from ember.data import DataLoaderBuilder, PartialDataset  # noqa: E402
from ember.data.vision import MnistDataset  # noqa: E402
from ember.optim import AdamConfig  # noqa: E402
from ember_train import CsvLogger, LearnerBuilder, MlflowLogger, TensorBoardLogger  # noqa: E402
from ember_train.metric import AccuracyMetric, LossMetric  # noqa: E402
from ember_train.plots import PlotWriter, matplotlib_missing  # noqa: E402
from ember_train.renderer import MetricsRenderer  # noqa: E402
from guide import MnistBatcher, ModelConfig  # noqa: E402
from guide.__main__ import make_backend  # noqa: E402

GUIDE_EPOCH = 938  # steps of one guide epoch (60,000 images, batch 64)


class _Clock(MetricsRenderer):
    """Records ``(iteration, time.perf_counter())`` at each training render (every logging interval)."""

    def __init__(self) -> None:
        self.times: list[tuple[int, float]] = []

    def render_train(self, progress: Any) -> None:
        self.times.append((progress.iteration, time.perf_counter()))


def _builder(name: str, out: Path, clock: _Clock, mlflow: bool) -> LearnerBuilder:
    b = (LearnerBuilder(out).metric_train_numeric(AccuracyMetric()).metric_valid_numeric(AccuracyMetric())
         .metric_train_numeric(LossMetric()).metric_valid_numeric(LossMetric()).renderer(clock).log_interval(10))
    if name == "no loggers":
        return b.metric_loggers([], []).plots(False).with_application_logger(None)
    if name == "all on":
        b = b.with_metric_logger(TensorBoardLogger()).with_metric_logger(CsvLogger())
        if mlflow:
            b = b.with_metric_logger(MlflowLogger())
    return b


def _fit(name: str, loaders: tuple[Any, Any], mlflow: bool) -> list[float]:
    """Seconds per step of each steady-state logging interval of one fit."""
    backend = make_backend("numpy")
    device = Autodiff(backend).device()
    backend.seed(42)
    clock = _Clock()
    with tempfile.TemporaryDirectory() as tmp:
        learner = _builder(name, Path(tmp), clock, mlflow).devices([device]).build(
            ModelConfig(10, 512).init(device), AdamConfig().init(), 1e-4)
        learner.fit(*loaders)
    t = clock.times  # the Learner also renders once more at the epoch's end: only whole intervals count
    return [(tb - ta) / (ib - ia) for (ia, ta), (ib, tb) in zip(t[1:], t[2:]) if ib - ia == 10]


def _epoch_end_seconds(repeats: int = 3) -> float | None:
    """Median time of one plot redraw holding a 10-epoch guide history (2 metrics, train and valid)."""
    if matplotlib_missing() is not None:
        return None
    times = []
    with tempfile.TemporaryDirectory() as tmp:
        w = PlotWriter(Path(tmp))
        for epoch in range(1, 11):
            for split, n in (("train", GUIDE_EPOCH), ("valid", 157)):
                for name in ("Accuracy", "Loss"):
                    for i in range(1, n + 1):
                        w.log_iteration(split, name, 1.0 / (epoch + i / n), epoch, i, i)
                    w.log_epoch(split, name, 1.0 / epoch, epoch)
        for _ in range(repeats):
            t0 = time.perf_counter()
            w.end_epoch(10)
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5)")
    p.add_argument("--steps", type=int, default=100, help="training steps per fit (default 100)")
    p.add_argument("--mlflow", action="store_true", help="add MlflowLogger (local file store) to 'all on'")
    p.add_argument("--data-dir", default=None, help="the MNIST files (default: shared/data/mnist or the cache)")
    args = p.parse_args()
    data_dir = args.data_dir
    if data_dir is None and (HERE.parent.parent / "shared" / "data" / "mnist").is_dir():
        data_dir = str(HERE.parent.parent / "shared" / "data" / "mnist")
    batcher = MnistBatcher()
    train = PartialDataset(MnistDataset.train(data_dir), 0, 64 * args.steps)
    valid = PartialDataset(MnistDataset.test(data_dir), 0, 64 * 4)
    loaders = (DataLoaderBuilder(batcher).batch_size(64).shuffle(42).build(train),
               DataLoaderBuilder(batcher).batch_size(64).build(valid))
    names = ["no loggers", "default", "all on"]
    per_step: dict[str, list[float]] = {n: [] for n in names}
    _fit("no loggers", loaders, args.mlflow)  # warm-up: imports, allocator, first-time costs
    for r in range(args.rounds):
        for n in (names if r % 2 == 0 else names[::-1]):
            per_step[n].extend(_fit(n, loaders, args.mlflow))
    end = _epoch_end_seconds()
    base = statistics.median(per_step["no loggers"])
    extra = " + MLflow" if args.mlflow else ""
    print(f"guide step (numpy, batch 64), {args.rounds} rounds x {args.steps} steps, median of "
          f"{len(per_step['no loggers'])} intervals of 10 steps per configuration")
    print(f"plots redraw at epoch end (10-epoch history): "
          f"{'matplotlib missing' if end is None else f'{end * 1e3:.0f} ms'}")
    print(f"{'configuration':<34} {'ms/step':>8} {'ratio':>7} {'per step, epoch end included':>30}")
    for n in names:
        m = statistics.median(per_step[n])
        label = {"no loggers": "no loggers", "default": "default (file logs, plots)",
                 "all on": f"TensorBoard + CSV + plots{extra}"}[n]
        amortized = m + (end or 0.0) / GUIDE_EPOCH if n != "no loggers" else m
        print(f"{label:<34} {m * 1e3:8.2f} {m / base:7.3f} {amortized / base:30.3f}")


if __name__ == "__main__":
    main()
