"""``python -m guide``: the guide's ``main.rs`` as a command line.

    python -m guide train --backend numpy --epochs 1 --artifact-dir /tmp/guide
    python -m guide infer --index 42 --artifact-dir /tmp/guide
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

import ember
from ember import BackendError
from ember.autodiff import Autodiff
from ember.data import Dataset, PartialDataset
from ember.data.vision import MnistDataset, MnistItem
from ember.optim import AdamConfig

from .inference import infer
from .model import ModelConfig
from .training import TrainingConfig, train

BACKENDS = ("numpy", "torch", "jax")


# --8<-- [start:make_backend]
def make_backend(name: str) -> Any:
    """The inner backend: numpy with one BLAS thread (the guide's matmuls are small and skinny; a second
    BLAS thread only steals the core the element-wise work needs, see bench/README.md), torch or jax."""
    if name == "numpy":
        return ember.backend("numpy", threads=1)
    return ember.backend(name)
# --8<-- [end:make_backend]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m guide", description="Burn's MNIST guide on Ember.")
    sub = p.add_subparsers(dest="command", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--backend", choices=BACKENDS, default="numpy", help="inner backend (default numpy)")
    common.add_argument("--device", default=None,
                        help="device of the backend, e.g. cuda:0 (torch) or gpu:0 (jax); default: the backend's "
                             "default device (the CPU for numpy and torch)")
    common.add_argument("--artifact-dir", default="/tmp/guide", help="artifact directory (default /tmp/guide)")
    common.add_argument("--data-dir", default=None,
                        help="directory holding the MNIST files (default: $EMBER_DATA_DIR/mnist, else "
                             "~/.cache/ember/mnist; downloaded there when missing)")
    t = sub.add_parser("train", parents=[common], help="train the model (recreates the artifact directory)")
    t.add_argument("--epochs", type=int, default=10, help="number of epochs (default 10, the guide's)")
    t.add_argument("--seed", type=int, default=42, help="seed (default 42)")
    t.add_argument("--num-workers", type=int, default=4, help="data-loading threads (default 4)")
    t.add_argument("--train-items", type=int, default=None, help="use only the first N training images (smoke runs)")
    t.add_argument("--test-items", type=int, default=None, help="use only the first N test images (smoke runs)")
    t.add_argument("--nproc", type=int, default=1,
                   help="train data-parallel in N processes (DistributedDataParallel, started with "
                        "ember_train.launch); each rank takes 64 // N images, so the global batch stays 64 when N "
                        "divides 64 (else N x (64 // N), e.g. 63 for N = 3)")
    t.add_argument("--devices", type=int, default=1,
                   help="train data-parallel on N devices of this process (MultiDevice; jax or several CUDA devices)")
    t.add_argument("--tensorboard", metavar="DIR", default=None,
                   help="also write TensorBoard event files to DIR (pip install 'ember-train[tensorboard]')")
    t.add_argument("--mlflow", metavar="URI", default=None,
                   help="also log to the MLflow tracking URI, e.g. file:/tmp/mlruns "
                        "(pip install 'ember-train[mlflow]')")
    i = sub.add_parser("infer", parents=[common], help="classify one test image with the trained model")
    i.add_argument("--index", type=int, default=42, help="index in the MNIST test set (default 42)")
    return p


def _relaunch(argv: list[str], nproc: int, backend: str) -> int:
    """``python -m guide train ... --nproc N``: start N ranks of this command through ``ember_train.launch``."""
    from ember_train.launch import launch

    here = str(Path(__file__).resolve().parent.parent)  # examples/: where `python -m guide` finds the guide
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH")) if p)
    return launch(["-m", "guide", *argv], nproc, backend=backend)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "train" and args.nproc > 1 and "RANK" not in os.environ:
        return _relaunch(list(sys.argv[1:] if argv is None else argv), args.nproc, args.backend)
    distributed = args.command == "train" and int(os.environ.get("WORLD_SIZE", "1")) > 1
    # on jax, the backend joins the launcher's run (jax.distributed) itself before it makes its first device
    backend = make_backend(args.backend)
    try:
        backend.device(args.device)
    except BackendError as e:
        print(f"--device: {e}", file=sys.stderr)
        return 2
    if args.command == "train":
        config = TrainingConfig(ModelConfig(num_classes=10, hidden_size=512), AdamConfig(),
                                num_epochs=args.epochs, seed=args.seed, num_workers=args.num_workers)
        train_set: Dataset[MnistItem] = MnistDataset.train(args.data_dir)
        test_set: Dataset[MnistItem] = MnistDataset.test(args.data_dir)
        if args.train_items is not None:
            train_set = PartialDataset(train_set, 0, min(args.train_items, len(train_set)))
        if args.test_items is not None:
            test_set = PartialDataset(test_set, 0, min(args.test_items, len(test_set)))
        start = time.perf_counter()
        autodiff = Autodiff(backend)
        devices = autodiff.devices()[:args.devices] if args.devices > 1 else [autodiff.device(args.device)]
        if len(devices) < args.devices:
            print(f"--devices {args.devices}: the {args.backend} backend has {len(devices)} device(s) here (jax on "
                  "CPU: XLA_FLAGS=--xla_force_host_platform_device_count=N).", file=sys.stderr)
            return 2
        result = train(args.artifact_dir, config, devices[0] if len(devices) == 1 else devices,
                       train_dataset=train_set, test_dataset=test_set, mlflow=args.mlflow,
                       tensorboard=None if args.tensorboard is None else Path(args.tensorboard).resolve(),
                       distributed=distributed)
        if int(os.environ.get("RANK", "0")) == 0:
            print(f"Trained {result.epoch} epoch(s) on {args.backend} in {time.perf_counter() - start:.1f} s; "
                  f"artifacts in {args.artifact_dir}")
        return 0
    item = MnistDataset.test(args.data_dir).get(args.index)
    if item is None:
        print(f"--index must be in 0..9999 (the MNIST test set), got {args.index}.", file=sys.stderr)
        return 2
    infer(args.artifact_dir, backend.device(args.device), item)
    return 0


if __name__ == "__main__":
    sys.exit(main())
