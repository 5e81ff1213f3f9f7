"""``python -m guide``: the guide's ``main.rs`` as a command line.

    python -m guide train --backend numpy --epochs 1 --artifact-dir /tmp/guide
    python -m guide infer --index 42 --artifact-dir /tmp/guide

Every argument and input (device, loggers, MNIST files, artifact directory) is checked before anything is
written. A mistake is one line on stderr and exit status 2 (``--debug`` shows the traceback); Ctrl-C during
``train`` saves a checkpoint, prints the command that resumes it and exits with 130.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

import ember
from ember import EmberError
from ember.autodiff import Autodiff
from ember.data import Dataset, PartialDataset
from ember.data.vision import MnistItem
from ember.optim import AdamConfig
from ember_train import last_checkpoint

from ._cli_args import BACKENDS, parser
from ._cli_checks import check_loggers, device_of, load_mnist, one_line
from ._errors import UsageError
from ._run_dir import plan_run_dir, read_marker, resume_command
from .inference import check_finished, infer
from .model import ModelConfig
from .training import TrainingConfig, train

__all__ = ["BACKENDS", "main", "make_backend"]

INTERRUPTED = 130  # the shell's status for a command ended by SIGINT (128 + 2)
_SETTINGS = ("epochs", "seed", "train_items", "test_items")  # what a resumed run must keep


# --8<-- [start:make_backend]
def make_backend(name: str) -> Any:
    """The inner backend: numpy with one BLAS thread (the guide's matmuls are small and skinny; a second
    BLAS thread only steals the core the element-wise work needs, see bench/README.md), torch or jax."""
    if name == "numpy":
        return ember.backend("numpy", threads=1)
    return ember.backend(name)
# --8<-- [end:make_backend]


def _relaunch(argv: list[str], nproc: int, backend: str) -> int:
    """``python -m guide train ... --nproc N``: start N ranks of this command through ``ember_train.launch``."""
    from ember_train.launch import launch

    here = str(Path(__file__).resolve().parent.parent)  # examples/: where `python -m guide` finds the guide
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH")) if p)
    return launch(["-m", "guide", *argv], nproc, backend=backend)


def main(argv: list[str] | None = None) -> int:
    """Run ``python -m guide`` with ``argv`` (default ``sys.argv[1:]``); returns the exit status: 0, 2 for a
    mistake (one line on stderr), 130 for an interrupted run, 1 for another error of Ember's."""
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    try:
        args = parser().parse_args(argv)
        return _train(args, argv) if args.command == "train" else _infer(args)
    except UsageError as exc:
        if debug:
            raise
        print(f"python -m guide: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        if debug:
            raise
        print("python -m guide: interrupted (Ctrl-C).", file=sys.stderr)
        return INTERRUPTED
    except EmberError as exc:
        if debug:
            raise
        print(f"python -m guide: error: {one_line(exc)} (--debug shows the traceback)", file=sys.stderr)
        return 1


def _train(args: argparse.Namespace, argv: list[str]) -> int:
    rank = int(os.environ.get("RANK", "0"))
    launcher = args.nproc > 1 and "RANK" not in os.environ  # this process starts the ranks, then waits
    check_loggers(args)
    if rank == 0:  # read-only: refuse now what train() would refuse, before any download or device
        plan_run_dir(args.artifact_dir, resume=args.resume, overwrite=args.overwrite)
        if args.resume:
            _check_same_settings(args)
    if not launcher:
        # on jax, the backend joins the launcher's run (jax.distributed) itself before it makes its first device
        backend, device = device_of(make_backend, args)
        autodiff = Autodiff(backend)
        devices = autodiff.devices()[:args.devices] if args.devices > 1 else [autodiff.device(args.device)]
        if len(devices) < args.devices:
            raise UsageError(f"--devices {args.devices}: the {args.backend} backend has {len(devices)} device(s) here "
                             "(jax on CPU: XLA_FLAGS=--xla_force_host_platform_device_count=N).")
    train_set: Dataset[MnistItem]
    test_set: Dataset[MnistItem]
    train_set, test_set = load_mnist(args.data_dir, ("train", "test"))
    if launcher:
        return _relaunch(argv, args.nproc, args.backend)
    if args.train_items is not None:
        train_set = PartialDataset(train_set, 0, min(args.train_items, len(train_set)))
    if args.test_items is not None:
        test_set = PartialDataset(test_set, 0, min(args.test_items, len(test_set)))
    config = TrainingConfig(ModelConfig(num_classes=10, hidden_size=512), AdamConfig(),
                            num_epochs=args.epochs, seed=args.seed, num_workers=args.num_workers)
    start = time.perf_counter()
    run_info = {"argv": argv, "cwd": os.getcwd(), "settings": {k: getattr(args, k) for k in _SETTINGS}}
    try:
        result = train(args.artifact_dir, config, devices[0] if len(devices) == 1 else devices,
                       train_dataset=train_set, test_dataset=test_set, mlflow=args.mlflow,
                       tensorboard=None if args.tensorboard is None else Path(args.tensorboard).resolve(),
                       distributed=int(os.environ.get("WORLD_SIZE", "1")) > 1, resume=args.resume,
                       overwrite=args.overwrite, run_info=run_info)
    except KeyboardInterrupt:  # a second Ctrl-C: no checkpoint of this moment
        if rank == 0:
            _print_interrupted(args.artifact_dir, "aborted (second Ctrl-C)")
        return INTERRUPTED
    if result.interrupted:
        if rank == 0:
            _print_interrupted(args.artifact_dir, f"interrupted ({result.stop_reason}) in epoch {result.epoch}")
        return INTERRUPTED
    if rank == 0:
        print(f"Trained {result.epoch} epoch(s) on {args.backend} in {time.perf_counter() - start:.1f} s; "
              f"artifacts in {args.artifact_dir}")
    return 0


def _print_interrupted(artifact_dir: str, what: str) -> None:
    epoch = last_checkpoint(artifact_dir)
    if epoch is None:
        print(f"Training {what} before its first checkpoint; no model was saved. Start it again with the same "
              "command.", file=sys.stderr)
        return
    print(f"Training {what}; checkpoint {epoch} saved, no final model written. Resume with:\n"
          f"  {resume_command(read_marker(artifact_dir))}", file=sys.stderr)


def _check_same_settings(args: argparse.Namespace) -> None:
    """``--resume`` with the settings the run started with (``--epochs``, ``--seed``, ``--train-items``,
    ``--test-items``)."""
    marker = read_marker(args.artifact_dir) or {}
    saved = marker.get("settings") or {}
    differ = [k for k in _SETTINGS if k in saved and saved[k] != getattr(args, k)]
    if differ:
        def flags(values: dict[str, Any]) -> str:
            return ", ".join(f"--{k.replace('_', '-')} {values[k]}" if values[k] is not None
                             else f"no --{k.replace('_', '-')}" for k in differ)

        raise UsageError(f"--resume: the run in {args.artifact_dir} was started with {flags(saved)} (this command: "
                         f"{flags(vars(args))}): resume it with `{resume_command(marker)}`.")


def _infer(args: argparse.Namespace) -> int:
    _, device = device_of(make_backend, args)
    check_finished(args.artifact_dir)
    (test_set,) = load_mnist(args.data_dir, ("test",))
    item = test_set.get(args.index)
    if item is None:
        raise UsageError(f"--index must be in 0..{len(test_set) - 1} (the MNIST test set), got {args.index}.")
    infer(args.artifact_dir, device, item)
    return 0


if __name__ == "__main__":
    sys.exit(main())
