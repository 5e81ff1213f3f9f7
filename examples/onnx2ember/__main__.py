"""``python -m onnx2ember [--data-dir DIR] [--epochs E] [--artifact-dir DIR] [--limit N]``.

Exports the guide's CNN from PyTorch to ONNX, writes it as Ember source with ``ModelGen``
(``ARTIFACT_DIR/generated/model.py``), trains that module from fresh weights with the Learner for ``--epochs``
(default 1) on MNIST with the numpy backend, trains the hand-written guide model the same way, and prints both
test accuracies.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import ember
from ember.data import Dataset
from ember.data.vision import MnistItem
from guide._cli_args import positive_int
from guide._cli_checks import mnist_or_say_why

from . import generate_guide, import_generated, train_both


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m onnx2ember", description=__doc__.split("\n\n")[1])
    p.add_argument("--data-dir", default=None, help="folder with the four MNIST IDX files")
    p.add_argument("--epochs", type=positive_int, default=1)
    p.add_argument("--artifact-dir", default="/tmp/ember-onnx2ember")
    p.add_argument("--limit", type=positive_int, default=None, help="use only this many training and test images")
    args = p.parse_args(argv)

    datasets = mnist_or_say_why(p.prog, args.data_dir)
    if datasets is None:
        return 2
    train: Dataset[MnistItem] = datasets[0]
    test: Dataset[MnistItem] = datasets[1]
    if args.limit is not None:
        from ember.data import PartialDataset

        train, test = PartialDataset(train, 0, args.limit), PartialDataset(test, 0, args.limit)
    artifacts = Path(args.artifact_dir)
    py = generate_guide(artifacts)
    print(f"generated {py} ({len(py.read_text().splitlines())} lines)")
    gen_acc, hand_acc = train_both(import_generated(py), train, test, ember.backend("numpy", threads=1),
                                   artifacts, epochs=args.epochs)
    print(f"test accuracy after {args.epochs} epoch(s): generated {gen_acc:.2f} %, hand-written guide "
          f"{hand_acc:.2f} % (difference {gen_acc - hand_acc:+.2f} points)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
