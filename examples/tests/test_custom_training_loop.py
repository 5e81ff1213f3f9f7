"""The custom training loop example (examples/custom_training_loop) on a few MNIST batches."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import ember
from custom_training_loop import MnistTrainingConfig, accuracy, run
from custom_training_loop.__main__ import main
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


def test_cli_mistakes_exit_2_with_one_line(tmp_path, capsys) -> None:
    """The sibling of the guide's CLI checks (issue 29): numbers checked by the parser, a mistyped --data-dir
    refused in the CLI's words and not created."""
    with pytest.raises(SystemExit) as info:
        main(["--epochs", "0"])
    assert info.value.code == 2 and "expected a positive integer (1, 2, ...), got '0'" in capsys.readouterr().err
    assert main(["--data-dir", str(tmp_path / "mistyped")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--data-dir" in err and "no such directory" in err and "root=" not in err
    assert not (tmp_path / "mistyped").exists()


def test_onnx2ember_cli_mistakes_exit_2(tmp_path, capsys) -> None:
    """The same checks in the onnx2ember example's command line."""
    pytest.importorskip("torch")  # the example imports it with its package
    from onnx2ember.__main__ import main as onnx2ember_main

    with pytest.raises(SystemExit) as info:
        onnx2ember_main(["--limit", "0"])
    assert info.value.code == 2 and "argument --limit: expected a positive integer" in capsys.readouterr().err
    assert onnx2ember_main(["--data-dir", str(tmp_path / "mistyped"), "--artifact-dir", str(tmp_path / "a")]) == 2
    assert "no such directory" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == []
