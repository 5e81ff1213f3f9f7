"""The custom training loop example (examples/custom_training_loop) on a few MNIST batches."""

from __future__ import annotations

import re
from pathlib import Path

import ember
from custom_training_loop import MnistTrainingConfig, accuracy, run
from ember import Tensor
from ember.autodiff import Autodiff
from ember.data import PartialDataset
from ember.data.vision import MnistDataset
from ember.optim import AdamConfig
from guide import ModelConfig


def test_accuracy_counts_argmax_hits() -> None:
    dev = ember.backend("numpy").device()
    out = Tensor.from_data([[0.1, 0.9], [0.8, 0.2], [0.3, 0.7], [0.6, 0.4]], dev)
    assert accuracy(out, Tensor.from_data([1, 0, 0, 1], dev, ember.Int)) == 50.0


def test_run_one_short_epoch(mnist_root: Path, capsys) -> None:
    config = MnistTrainingConfig(ModelConfig(10, 64), AdamConfig(), num_epochs=1, num_workers=0)
    history = run(Autodiff(ember.backend("numpy", threads=1)).device(), config,
                  train_dataset=PartialDataset(MnistDataset.train(mnist_root, download=False), 0, 128),
                  test_dataset=PartialDataset(MnistDataset.test(mnist_root, download=False), 0, 96))
    lines = capsys.readouterr().out.splitlines()
    train_lines = [ln for ln in lines if ln.startswith("[Train")]
    valid_lines = [ln for ln in lines if ln.startswith("[Valid - Epoch 1 - Iteration")]
    assert len(train_lines) == 2 and len(valid_lines) == 2  # 128 / 64 and 96 / 64 batches
    assert re.fullmatch(r"\[Train - Epoch 1 - Iteration 0\] Loss \d+\.\d{3} \| Accuracy \d+\.\d{3} %", train_lines[0])
    assert len(history) == 1
    loss, acc = history[0]
    assert 0.0 < loss < 5.0 and 0.0 <= acc <= 100.0
