"""A training run for the data-parallel tests, one process of it (``python ddp_run.py DIR [options]``), started
alone (one process, the reference) or as each rank by ``python -m ember_train.launch --nproc N``.

It trains ``helpers.Mlp`` without dropout (a random layer would draw other masks per rank; ``--dropout P`` adds it,
``--stop-at EPOCH ITERATION`` stops the run there with the interrupter, to compare resumed runs) with Adam on a
synthetic dataset, then writes ``DIR/params-rank<R>.npz`` (every parameter, by path). The Learner writes its usual
artifacts (rank 0 only under DDP). :class:`FaultyBatcher` kills a rank or slows the ranks down at a given batch.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import helpers as h  # noqa: E402
from ember.autodiff import Autodiff  # noqa: E402
from ember.data import DataLoaderBuilder  # noqa: E402
from ember.module import ModuleVisitor  # noqa: E402
from ember.optim import AdamConfig  # noqa: E402
from ember.record import DoublePrecisionSettings, NamedMpkFileRecorder  # noqa: E402
from ember_train import DistributedDataParallel, LearnerBuilder  # noqa: E402
from ember_train.metric import AccuracyMetric, LossMetric  # noqa: E402
from ember_train.renderer import MetricsRenderer  # noqa: E402


class FaultyBatcher:
    """``helpers.batcher`` that SIGKILLs this process when it makes training batch ``--die-after`` (counted over
    the epochs) on rank ``--die-rank``, and from batch ``--slow-after`` on writes ``DIR/slow-rank<R>`` and sleeps
    ``--slow-s`` per batch (so a test can interrupt the run mid-epoch)."""

    def __init__(self, args: argparse.Namespace, rank: int) -> None:
        self.args, self.rank, self.count = args, rank, 0

    def __call__(self, items: list[Any], device: Any) -> Any:
        a = self.args
        self.count += 1
        if a.die_after is not None and self.count == a.die_after and self.rank == a.die_rank:
            os.kill(os.getpid(), signal.SIGKILL)
        if a.slow_after is not None and self.count >= a.slow_after:
            (Path(a.dir) / f"slow-rank{self.rank}").write_text(str(self.count))
            time.sleep(a.slow_s)
        return h.batcher(items, device)


class _Params(ModuleVisitor):
    def __init__(self) -> None:
        self.out: dict[str, np.ndarray] = {}

    def visit_float(self, path: str, param: Any) -> None:
        self.out[path] = param.val().to_numpy()


def _trace_backward() -> list[list[Any]]:
    """Record, around every ``Tensor.backward()`` of the run, the process group's collective count (launched
    collectives, ``group.stats.calls``): ``[["start", n], ["end", m], ...]``. ``m > n`` shows collectives launched
    while the backward pass ran."""
    from ember import Tensor
    from ember import distributed as dist

    events: list[list[Any]] = []
    plain = Tensor.backward

    def backward(self: Any, *args: Any, **kwargs: Any) -> Any:
        calls = dist.get_process_group().stats.calls if dist.is_initialized() else -1
        events.append(["start", calls])
        out = plain(self, *args, **kwargs)
        events.append(["end", dist.get_process_group().stats.calls if dist.is_initialized() else -1])
        return out

    Tensor.backward = backward  # type: ignore[method-assign]
    return events


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    p.add_argument("dir")
    p.add_argument("--backend", default="numpy")
    p.add_argument("--batch", type=int, default=64, help="per-rank batch size")
    p.add_argument("--items", type=int, default=1280)
    p.add_argument("--valid-items", type=int, default=200)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--ddp", action="store_true")
    p.add_argument("--devices", type=int, default=1, help="MultiDevice over this many devices of the backend")
    p.add_argument("--timeout", type=float, default=30.0)
    p.add_argument("--checkpoint", type=int, default=None)
    p.add_argument("--compile", action="store_true")
    p.add_argument("--log-interval", type=int, default=1)
    p.add_argument("--auto-join", action="store_true", help="jax: no init_process_group call (the backend joins)")
    p.add_argument("--die-after", type=int, default=None)
    p.add_argument("--die-rank", type=int, default=1)
    p.add_argument("--slow-after", type=int, default=None)
    p.add_argument("--slow-s", type=float, default=0.05)
    p.add_argument("--bucket-bytes", type=int, default=None, help="DistributedDataParallel(bucket_bytes=...)")
    p.add_argument("--no-overlap", action="store_true", help="DistributedDataParallel(overlap=False)")
    p.add_argument("--trace", action="store_true",
                   help="write DIR/trace-rank<R>.json: the group's collective count around each backward()")
    p.add_argument("--artifacts-per-rank", action="store_true", help="artifact directory DIR/rank-<R>")
    p.add_argument("--dropout", type=float, default=0.0)
    p.add_argument("--stop-at", type=int, nargs=2, default=None, help="the interrupter stops rank 0 there")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    import ember

    a = parse(argv)
    rank = int(os.environ.get("RANK", "0"))
    if a.ddp and a.backend == "jax" and not a.auto_join:  # jax joins the run before it creates a device
        from ember import distributed

        distributed.init_process_group("jax", timeout=a.timeout)
    opts = {"float_dtype": "float64"} if a.backend == "numpy" else {}
    autodiff = Autodiff(ember.backend(a.backend, **opts))
    device = autodiff.device()
    devices = autodiff.devices()[:a.devices] if a.devices > 1 else [device]
    device.backend.seed(0)
    model = h.Mlp.init(device, dropout=a.dropout)
    if a.ddp and rank != 0:
        device.backend.seed(1000 + rank)  # other initial values: the broadcast from rank 0 must make them equal
        model = h.Mlp.init(device, dropout=a.dropout)
    train = DataLoaderBuilder(FaultyBatcher(a, rank)).batch_size(a.batch).shuffle(5).build(h.dataset(a.items, 1))
    valid = DataLoaderBuilder(h.batcher).batch_size(a.batch).build(h.dataset(a.valid_items, 2))
    artifacts = Path(a.dir) / f"rank-{rank}" if a.artifacts_per_rank else Path(a.dir)
    b = (LearnerBuilder(artifacts)
         .metric_train_numeric(AccuracyMetric()).metric_valid_numeric(AccuracyMetric())
         .metric_train_numeric(LossMetric()).metric_valid_numeric(LossMetric())
         .with_file_checkpointer(NamedMpkFileRecorder(DoublePrecisionSettings()))
         .devices(devices).num_epochs(a.epochs).log_interval(a.log_interval).renderer(MetricsRenderer()).compile(a.compile)
         .plots(False))
    if a.ddp:
        kw: dict[str, Any] = {"overlap": not a.no_overlap}
        if a.bucket_bytes is not None:
            kw.update(bucket_bytes=a.bucket_bytes, first_bucket_bytes=a.bucket_bytes)
        b = b.learning_strategy(DistributedDataParallel(timeout=a.timeout, **kw))
    trace = _trace_backward() if a.trace else None
    if a.checkpoint:
        b = b.checkpoint(a.checkpoint)
    if a.stop_at:
        from ember_train import TrainingInterrupter
        from resume_run import Hook

        stopper = TrainingInterrupter()

        def stop(p: Any) -> None:
            if (p.epoch, p.iteration) == tuple(a.stop_at):
                stopper.stop("--stop-at")

        b = b.with_interrupter(stopper).renderer(Hook(stop))
    result = b.build(model, AdamConfig().init(), 1e-2).fit(train, valid)
    visitor = _Params()
    result.model.visit(visitor)
    np.savez(Path(a.dir) / f"params-rank{rank}.npz", **visitor.out)
    if trace is not None:
        (Path(a.dir) / f"trace-rank{rank}.json").write_text(json.dumps(trace))
    print(f"rank {rank}: epoch {result.epoch}, interrupted={result.interrupted}, resume={result.resume_epoch}")
    if a.devices > 1:  # the trained parameters live on every device
        held = {len(p.val().inner().primitive.sharding.device_set) for p in result.model.params()}
        print(f"parameters on {sorted(held)} devices")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
