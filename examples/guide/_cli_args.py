"""The command line of ``python -m guide``: the parser, whose mistakes raise :class:`~guide.UsageError`."""

from __future__ import annotations

import argparse
from typing import NoReturn

from ember import install_command

from ._errors import UsageError

__all__ = ["BACKENDS", "non_negative_int", "parser", "positive_int"]

BACKENDS = ("numpy", "torch", "jax")


def positive_int(text: str) -> int:
    """An argparse type: an integer >= 1."""
    return _int_at_least(text, 1, "a positive integer (1, 2, ...)")


def non_negative_int(text: str) -> int:
    """An argparse type: an integer >= 0."""
    return _int_at_least(text, 0, "a non-negative integer (0, 1, ...)")


def _int_at_least(text: str, low: int, what: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = low - 1
    if value < low:
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
    return value


class _Parser(argparse.ArgumentParser):
    """Raises :class:`UsageError` (one line: the mistake and where help is) instead of printing the usage and
    exiting; ``--help`` still prints and exits 0."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see `{self.prog} --help`)")


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog="python -m guide", description="Burn's MNIST guide on Ember.")
    sub = p.add_subparsers(dest="command", required=True)
    common = _Parser(add_help=False)
    common.add_argument("--backend", choices=BACKENDS, default="numpy", help="inner backend (default numpy)")
    common.add_argument("--device", default=None,
                        help="device of the backend, e.g. cuda:0 (torch) or gpu:0 (jax); default: the backend's "
                             "default device (the CPU for numpy and torch)")
    common.add_argument("--artifact-dir", default="/tmp/guide", help="artifact directory (default /tmp/guide)")
    common.add_argument("--data-dir", default=None,
                        help="directory holding the MNIST files (default: $EMBER_DATA_DIR/mnist, else "
                             "~/.cache/ember/mnist; downloaded there when missing)")
    common.add_argument("--debug", action="store_true", help="show the traceback of an error")
    t = sub.add_parser("train", parents=[common],
                       help="train the model (a finished run in the artifact directory is replaced)")
    t.add_argument("--epochs", type=positive_int, default=10, help="number of epochs (default 10, the guide's)")
    t.add_argument("--seed", type=non_negative_int, default=42, help="seed (default 42)")
    t.add_argument("--num-workers", type=non_negative_int, default=4,
                   help="data-loading threads (default 4; 0 loads in the training thread)")
    t.add_argument("--train-items", type=positive_int, default=None,
                   help="use only the first N training images (smoke runs)")
    t.add_argument("--test-items", type=positive_int, default=None,
                   help="use only the first N test images (smoke runs)")
    t.add_argument("--nproc", type=positive_int, default=1,
                   help="train data-parallel in N processes (DistributedDataParallel, started with "
                        "ember_train.launch); each rank takes 64 // N images, so the global batch stays 64 when N "
                        "divides 64 (else N x (64 // N), e.g. 63 for N = 3)")
    t.add_argument("--devices", type=positive_int, default=1,
                   help="train data-parallel on N devices of this process (MultiDevice; jax or several CUDA devices)")
    t.add_argument("--tensorboard", metavar="DIR", default=None,
                   help=f"also write TensorBoard event files to DIR ({install_command('ember-train', 'tensorboard')})")
    t.add_argument("--mlflow", metavar="URI", default=None,
                   help="also log to the MLflow tracking URI, e.g. file:/tmp/mlruns "
                        f"({install_command('ember-train', 'mlflow')})")
    again = t.add_mutually_exclusive_group()
    again.add_argument("--resume", action="store_true",
                       help="continue the unfinished (interrupted) run of the artifact directory from its last "
                            "checkpoint, with the same settings")
    again.add_argument("--overwrite", action="store_true",
                       help="start over in an artifact directory that holds an unfinished run or other files (the "
                            "run's own files are replaced, other files are kept)")
    i = sub.add_parser("infer", parents=[common], help="classify one test image with the trained model")
    i.add_argument("--index", type=non_negative_int, default=42,
                   help="index in the MNIST test set, 0..9999 (default 42)")
    return p
