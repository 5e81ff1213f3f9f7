"""The kill -9 soak (ARCHITECTURE.md, "Trust"): a small Learner run killed with SIGKILL at random points and resumed
each time must end bitwise equal to an uninterrupted run.

The run: a tiny MLP with Dropout (``Linear(4, 16) -> ReLU -> Dropout(0.3) -> Linear(16, 3)``) on numpy float64, Adam,
an exponential learning-rate schedule, a shuffled loader, validation, a seed, a full-precision file checkpointer keeping
the last 2 checkpoints, metric logs; ``EPOCHS`` epochs of ``ITERATIONS`` iterations.

The kill points are seeded, not timed: a child process counts its *events* (every file operation: ``os.open``,
``open``, ``os.replace``/``rename``, ``os.unlink``/``remove``, ``os.fsync``, ``os.mkdir``; and every training step)
and sends itself SIGKILL at event ``k``, drawn by the parent from ``numpy.random.default_rng(seed)``. The parent then
resumes from ``ember_train.last_checkpoint`` (from scratch when there is none) in a new child, with a new ``k``, until a
child finishes; its final parameters and metric logs must equal the uninterrupted run's, bit for bit. Then the next
soak run starts in a fresh directory, until ``rounds`` kills were made.

``python -m tests.fault.soak [ROUNDS] [--seed S]`` prints the counts and exits 0 when every finished run matched.
:func:`main` is the entry point for the fault suite's runner; :func:`train` and :class:`FileOps` serve the tests.
"""

from __future__ import annotations

import builtins
import io
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

EPOCHS = 3
ITEMS, BATCH = 48, 8       # 6 iterations per epoch
_ROOT = Path(__file__).resolve().parents[2]
_OPS = ("open", "replace", "rename", "unlink", "remove", "fsync", "mkdir", "rmdir")


class FileOps:
    """Counts file operations (and training steps, :meth:`event`) while active; at event ``kill_at`` the process
    kills itself with SIGKILL (no cleanup of any kind runs, as with ``kill -9``). Each file operation is two events,
    before and after it (a kill right after ``open(path, "w")`` leaves the file truncated).

    ``scope``: ``"all"`` counts everything from :meth:`install` on; ``"checkpoint"`` only what
    ``LearnerCheckpointer.save`` and ``.delete`` do.
    """

    def __init__(self, kill_at: int | None = None, scope: str = "all") -> None:
        self.kill_at = kill_at
        self.count = 0
        self.log: list[str] = []
        self.depth = 0 if scope == "checkpoint" else 1

    def event(self, what: str) -> None:
        if self.depth <= 0:
            return
        if self.kill_at is not None and self.count == self.kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        self.count += 1
        self.log.append(what)

    def install(self) -> FileOps:
        for name in _OPS:
            orig = getattr(os, name)
            setattr(os, name, self._wrap(orig, name))
        wrapped_open = self._wrap(builtins.open, "open(file)")
        builtins.open = io.open = wrapped_open  # type: ignore[assignment]
        from ember_train import _checkpointer

        for meth in ("save", "delete"):
            orig = getattr(_checkpointer.LearnerCheckpointer, meth)
            setattr(_checkpointer.LearnerCheckpointer, meth, self._scoped(orig))
        return self

    def _wrap(self, fn: Any, name: str) -> Any:
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            what = f"{name} {args[0] if args else ''}"
            self.event("before " + what)
            out = fn(*args, **kwargs)
            self.event("after " + what)
            return out

        return wrapped

    def _scoped(self, fn: Any) -> Any:
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            self.depth += 1
            try:
                return fn(*args, **kwargs)
            finally:
                self.depth -= 1

        return wrapped


def train(artifact_dir: str | os.PathLike[str], epochs: int = EPOCHS, checkpoint: int | None = None,
          on_step: Any = None, interrupter: Any = None, keep: int = 2) -> Any:
    """The soak's training run (module docstring); ``on_step(progress)`` is called after every training step;
    ``keep``: the checkpoints kept (``KeepLastNCheckpoints``)."""
    import numpy as np

    import ember
    from ember import Tensor
    from ember.autodiff import Autodiff
    from ember.data import DataLoaderBuilder, InMemDataset
    from ember.module import Module
    from ember.nn import DropoutConfig, LinearConfig
    from ember.nn.loss import CrossEntropyLossConfig
    from ember.optim import AdamConfig
    from ember.optim.lr_scheduler import ExponentialLrSchedulerConfig
    from ember.record import DoublePrecisionSettings, NamedMpkFileRecorder
    from ember.tensor import activation
    from ember_train import ClassificationOutput, KeepLastNCheckpoints, LearnerBuilder, TrainOutput
    from ember_train.metric import AccuracyMetric, LossMetric
    from ember_train.renderer import MetricsRenderer

    class Batch:
        def __init__(self, x: Tensor, y: Tensor) -> None:
            self.inputs, self.targets = x, y

    class Mlp(Module):
        l1: Any
        drop: Any
        l2: Any
        loss: Any

        def forward_classification(self, b: Batch) -> Any:
            x = self.l2.forward(self.drop.forward(activation.relu(self.l1.forward(b.inputs))))
            return ClassificationOutput(self.loss.forward(x, b.targets), x, b.targets)

        def train_step(self, b: Batch) -> Any:
            out = self.forward_classification(b)
            return TrainOutput(self, out.loss.backward(), out)

        def valid_step(self, b: Batch) -> Any:
            return self.forward_classification(b)

    class Hook(MetricsRenderer):
        def render_train(self, progress: Any) -> None:
            if on_step is not None:
                on_step(progress)

    def batcher(items: list[Any], device: Any) -> Batch:
        x = np.asarray([i[0] for i in items], dtype=np.float64)
        y = np.asarray([i[1] for i in items], dtype=np.int64)
        return Batch(Tensor.from_data(x, device), Tensor.from_data(y, device))

    def dataset(n: int, seed: int) -> Any:
        rng = np.random.default_rng(seed)
        y = rng.integers(0, 3, n)
        x = np.eye(3, 4)[y] * 2.0 + rng.normal(0, 1.0, (n, 4))
        return InMemDataset([(x[i].tolist(), int(y[i])) for i in range(n)])

    backend = ember.backend("numpy", float_dtype="float64")
    device = Autodiff(backend).device()
    backend.seed(1234)  # the initial parameters
    model = Mlp(l1=LinearConfig(4, 16).init(device), drop=DropoutConfig(0.3).init(),
                l2=LinearConfig(16, 3).init(device), loss=CrossEntropyLossConfig().init(device))
    b = (LearnerBuilder(artifact_dir).metric_train_numeric(LossMetric()).metric_valid_numeric(LossMetric())
         .metric_valid_numeric(AccuracyMetric())
         .with_file_checkpointer(NamedMpkFileRecorder(DoublePrecisionSettings()))
         .with_checkpointing_strategy(KeepLastNCheckpoints(keep))
         .devices([device]).num_epochs(epochs).log_interval(1).seed(7).plots(False).renderer(Hook()))
    if checkpoint is not None:
        b = b.checkpoint(checkpoint)
    if interrupter is not None:
        b = b.with_interrupter(interrupter)
    train_loader = DataLoaderBuilder(batcher).batch_size(BATCH).shuffle(3).build(dataset(ITEMS, 1))
    valid_loader = DataLoaderBuilder(batcher).batch_size(BATCH).build(dataset(16, 2))
    learner = b.build(model, AdamConfig().init(), ExponentialLrSchedulerConfig(0.05, 0.9))
    return learner.fit(train_loader, valid_loader)


def params(model: Any) -> list[Any]:
    return [p.val().to_numpy() for p in model.params()]


def logs(artifact_dir: Path) -> dict[str, str]:
    """The metric logs (``train|valid/epoch-N/<Metric>.log``) by relative path."""
    return {str(p.relative_to(artifact_dir)): p.read_text() for p in sorted(artifact_dir.glob("*/epoch-*/*.log"))}


def _child(artifact_dir: str, kill_at: int, count_file: str) -> None:
    """A soak child: resume from the last checkpoint (or start), counting events, killed at event ``kill_at``
    (``-1``: never; the count is then written to ``count_file``). Writes ``final.npz`` when training finished."""
    import numpy as np

    from ember_train import last_checkpoint

    ops = FileOps(None if kill_at < 0 else kill_at).install()
    res = train(artifact_dir, checkpoint=last_checkpoint(artifact_dir), on_step=lambda p: ops.event("step"))
    if kill_at < 0:
        Path(count_file).write_text(str(ops.count))
    ops.depth = 0
    np.savez(Path(artifact_dir) / "final.npz", *params(res.model))


def _spawn(artifact_dir: Path, kill_at: int, count_file: Path) -> int:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(_ROOT), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-m", "tests.fault.soak", "--child", str(artifact_dir), str(kill_at),
                           str(count_file)], env=env, cwd=str(_ROOT), stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, timeout=600)
    if proc.returncode not in (0, -signal.SIGKILL):
        sys.stderr.write(proc.stderr.decode(errors="replace")[-4000:])
    return proc.returncode


def main(rounds: int, seed: int = 0, workdir: str | None = None, verbose: bool = True) -> int:
    """Make ``rounds`` SIGKILLs at seeded random events (module docstring); 0 when every finished run equals the
    uninterrupted one bit for bit (parameters and metric logs), 1 otherwise."""
    import numpy as np

    rng = np.random.default_rng(seed)
    base = Path(workdir or tempfile.mkdtemp(prefix="ember-soak-"))
    ref_dir = base / "reference"
    shutil.rmtree(ref_dir, ignore_errors=True)
    count_file = base / "count.txt"
    if _spawn(ref_dir, -1, count_file) != 0:
        print("soak: the uninterrupted reference run failed", file=sys.stderr)
        return 2
    total = int(count_file.read_text())
    with np.load(ref_dir / "final.npz") as z:
        ref = [z[k] for k in z.files]
    ref_logs = logs(ref_dir)
    kills = finished = mismatched = from_scratch = 0
    run = 0
    while kills < rounds:
        run += 1
        d = base / f"run-{run}"
        shutil.rmtree(d, ignore_errors=True)
        while True:
            from ember_train import last_checkpoint

            if last_checkpoint(d) is None:
                from_scratch += 1
            # a point among the events of a whole run: late points let a resumed child finish
            k = int(rng.integers(0, total)) if kills < rounds else -2
            rc = _spawn(d, k, base / "ignored.txt")
            if rc == -signal.SIGKILL:
                kills += 1
                continue
            if rc != 0:
                print(f"soak: run {run} failed with exit status {rc}", file=sys.stderr)
                return 1
            finished += 1
            with np.load(d / "final.npz") as z:
                got = [z[k] for k in z.files]
            same = len(got) == len(ref) and all(a.dtype == b.dtype and np.array_equal(a, b) for a, b in zip(got, ref))
            same_logs = logs(d) == ref_logs
            if not (same and same_logs):
                mismatched += 1
                diff = max((float(np.abs(a - b).max()) for a, b in zip(got, ref)), default=float("nan"))
                print(f"soak: run {run} differs from the uninterrupted run (parameters equal: {same}, max difference "
                      f"{diff:.3g}; logs equal: {same_logs})", file=sys.stderr)
            break
    if verbose:
        print(f"soak: {kills} SIGKILLs in {run} runs ({total} events per uninterrupted run), {finished} runs finished, "
              f"{from_scratch} starts without a checkpoint, {mismatched} differed from the uninterrupted run")
    return 0 if mismatched == 0 and finished == run else 1


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        _child(sys.argv[2], int(sys.argv[3]), sys.argv[4])
        sys.exit(0)
    args = sys.argv[1:]
    seed_arg = 0
    if "--seed" in args:
        i = args.index("--seed")
        seed_arg = int(args[i + 1])
        del args[i:i + 2]
    sys.exit(main(int(args[0]) if args else 50, seed_arg))
