"""The ONNX fine-tuning example (examples/onnx_finetune): PyTorch -> ONNX -> Ember -> Learner."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("onnx")

import torch  # noqa: E402

import ember  # noqa: E402
from ember import Tensor  # noqa: E402
from ember.autodiff import Autodiff  # noqa: E402
from ember.data import PartialDataset  # noqa: E402
from ember.data.vision import MnistDataset  # noqa: E402
from ember_import.onnx import load_model  # noqa: E402
from onnx_finetune import OnnxClassifier, evaluate, export_onnx, finetune, pretrain_torch  # noqa: E402
from onnx_finetune._torch import arrays  # noqa: E402


@pytest.fixture(scope="module")
def subsets(mnist_root: Path):
    train = PartialDataset(MnistDataset.train(mnist_root), 0, 640)
    test = PartialDataset(MnistDataset.test(mnist_root), 0, 300)
    return train, test


def test_imported_model_predicts_as_pytorch_and_fine_tunes(subsets, tmp_path: Path) -> None:
    train, test = subsets
    net = pretrain_torch(train, steps=10)
    path = export_onnx(net, tmp_path / "cnn.onnx")
    backend = ember.backend("numpy", float_dtype="float32")
    model = OnnxClassifier(net=load_model(path, Autodiff(backend).device()))
    # the imported logits are PyTorch's (independent reference: the torch model itself)
    images, labels = arrays(test)
    with torch.no_grad():
        want = net(torch.from_numpy(images)).numpy()
    got = model.valid().forward(Tensor.from_data(images, backend.device())).to_numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    # the accuracy the example prints is PyTorch's (a near-tie may flip one image of 300)
    before = evaluate(model.valid(), test, backend.device())
    assert before == pytest.approx(100.0 * float(np.mean(want.argmax(1) == labels)), abs=0.34)
    tuned = finetune(model, train, test, Autodiff(backend).device(), tmp_path / "learner", epochs=1, lr=1e-3)
    # every imported weight was trained, and training lowered the loss on the data it saw
    w0, w1 = model.net.weights, tuned.net.weights
    assert set(w0) == set(w1) and all(not np.array_equal(w0[k].val().to_numpy(), w1[k].val().to_numpy()) for k in w0)
    loss = [float(line.split(",")[0]) for line in (tmp_path / "learner/train/epoch-1/Loss.log").read_text().split()]
    assert np.mean(loss[-3:]) < np.mean(loss[:3])


def test_cli_reports_accuracy_before_and_after(examples_dir: Path, mnist_root: Path, tmp_path: Path) -> None:
    run = subprocess.run([sys.executable, "-m", "onnx_finetune", "--data-dir", str(mnist_root), "--torch-steps", "5",
                          "--limit", "256", "--artifact-dir", str(tmp_path)], cwd=examples_dir, capture_output=True,
                         text=True, timeout=600, env={**os.environ, "PYTHONPATH": str(examples_dir)})
    assert run.returncode == 0, run.stderr
    assert "test accuracy before fine-tuning" in run.stdout and "after 1 epoch(s)" in run.stdout
    assert (tmp_path / "guide_cnn.onnx").is_file()
