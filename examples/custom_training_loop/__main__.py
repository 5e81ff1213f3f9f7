"""``python -m custom_training_loop [--backend numpy] [--epochs 1] [--log-every 100]`` (from ``examples/``)."""

from __future__ import annotations

import argparse
import sys

from ember.autodiff import Autodiff
from ember.data import Dataset, PartialDataset
from ember.data.vision import MnistItem
from ember.optim import AdamConfig
from guide.__main__ import BACKENDS, make_backend
from guide._cli_args import positive_int
from guide._cli_checks import mnist_or_say_why
from guide.model import ModelConfig

from .loop import MnistTrainingConfig, run


def main(argv: list[str] | None = None) -> int:
    """Returns the exit status: 0, or 2 for a mistake (argparse's usage message, or one line on stderr)."""
    p = argparse.ArgumentParser(prog="python -m custom_training_loop",
                                description="The Burn book's custom training loop on MNIST.")
    p.add_argument("--backend", choices=BACKENDS, default="numpy")
    p.add_argument("--epochs", type=positive_int, default=10)
    p.add_argument("--data-dir", default=None, help="MNIST directory (default $EMBER_DATA_DIR/mnist or the cache)")
    p.add_argument("--log-every", type=positive_int, default=1, help="print every N iterations (default 1, as Burn)")
    p.add_argument("--train-items", type=positive_int, default=None, help="use only the first N training images")
    p.add_argument("--test-items", type=positive_int, default=None, help="use only the first N test images")
    args = p.parse_args(argv)
    datasets = mnist_or_say_why(p.prog, args.data_dir)
    if datasets is None:
        return 2
    train: Dataset[MnistItem] = datasets[0]
    test: Dataset[MnistItem] = datasets[1]
    if args.train_items is not None:
        train = PartialDataset(train, 0, min(args.train_items, len(train)))
    if args.test_items is not None:
        test = PartialDataset(test, 0, min(args.test_items, len(test)))
    config = MnistTrainingConfig(ModelConfig(10, 1024), AdamConfig(), num_epochs=args.epochs)
    run(Autodiff(make_backend(args.backend)).device(), config, train_dataset=train, test_dataset=test,
        log_every=args.log_every)
    return 0


if __name__ == "__main__":
    sys.exit(main())
