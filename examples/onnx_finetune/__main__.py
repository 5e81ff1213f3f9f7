"""``python -m onnx_finetune [--data-dir DIR] [--torch-steps N] [--epochs E] [--artifact-dir DIR]``.

Pre-trains the guide's CNN in PyTorch for ``--torch-steps`` batches of 64 (default 150, a sixth of an epoch),
exports it to ONNX, imports it into Ember on the numpy backend, prints its test accuracy, fine-tunes it with
the Learner for ``--epochs`` (default 1) and prints the test accuracy again.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import ember
from ember.autodiff import Autodiff
from ember.data.vision import MnistDataset
from ember_import.onnx import load_model

from . import OnnxClassifier, evaluate, export_onnx, finetune, pretrain_torch


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m onnx_finetune", description=__doc__.split("\n\n")[0])
    p.add_argument("--data-dir", default=None, help="folder with the four MNIST IDX files")
    p.add_argument("--torch-steps", type=int, default=150)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--artifact-dir", default="/tmp/ember-onnx-finetune")
    p.add_argument("--limit", type=int, default=None, help="use only this many training and test images")
    args = p.parse_args(argv)

    train, test = MnistDataset.train(args.data_dir), MnistDataset.test(args.data_dir)
    if args.limit is not None:
        from ember.data import PartialDataset

        train, test = PartialDataset(train, 0, args.limit), PartialDataset(test, 0, args.limit)
    artifacts = Path(args.artifact_dir)
    artifacts.mkdir(parents=True, exist_ok=True)

    torch_model = pretrain_torch(train, args.torch_steps)
    path = export_onnx(torch_model, artifacts / "guide_cnn.onnx")
    backend = ember.backend("numpy", threads=1)
    device = Autodiff(backend).device()
    model = OnnxClassifier(net=load_model(path, device))
    before = evaluate(model.valid(), test, backend.device())
    print(f"imported {path.name}: {model.num_params():,} parameters; test accuracy before fine-tuning {before:.2f} %")
    tuned = finetune(model, train, test, device, artifacts / "learner", epochs=args.epochs)
    after = evaluate(tuned.valid(), test, backend.device())
    print(f"test accuracy after {args.epochs} epoch(s) of fine-tuning in Ember: {after:.2f} % (was {before:.2f} %)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
