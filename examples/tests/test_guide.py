"""The guide example (examples/guide): model against PyTorch, batcher, a short training run, inference, CLI.

Fast: a few steps on a few hundred MNIST images; the full-epoch run is a manual check (see README.md).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import ember
from ember import Tensor
from ember.autodiff import Autodiff
from ember.data import PartialDataset
from ember.data.vision import MnistDataset, MnistItem
from ember.optim import AdamConfig, GradientsParams
from ember.record import CompactRecorder
from guide import MnistBatcher, ModelConfig, TrainingConfig, infer, train

REPO = Path(__file__).resolve().parents[2]


def _torch_reference():
    torch = pytest.importorskip("torch")
    spec = importlib.util.spec_from_file_location("mnist_torch_reference", REPO / "bench" / "mnist_torch_reference.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return torch, mod


def _np(t: Tensor) -> np.ndarray:
    return t.to_data().to_numpy()


def _images(root: Path, n: int) -> list[MnistItem]:
    ds = MnistDataset.test(root, download=False)
    return [ds.get(i) for i in range(n)]


def test_batcher_normalizes_as_the_guide(mnist_root: Path) -> None:
    dev = ember.backend("numpy").device()
    black = MnistItem(np.zeros((28, 28), np.uint8), 3)
    white = MnistItem(np.full((28, 28), 255, np.uint8), 7)
    batch = MnistBatcher().batch([black, white], dev)
    assert batch.images.shape == (2, 28, 28) and batch.targets.shape == (2,)
    assert batch.targets.kind is ember.Int
    images = _np(batch.images)
    np.testing.assert_allclose(images[0], -0.1307 / 0.3081, rtol=1e-6)  # ((0 / 255) - 0.1307) / 0.3081
    np.testing.assert_allclose(images[1], 0.8693 / 0.3081, rtol=1e-6)  # ((255 / 255) - 0.1307) / 0.3081
    assert _np(batch.targets).tolist() == [3, 7]
    real = _images(mnist_root, 4)
    expected = (np.stack([it.image for it in real]).astype(np.float64) / 255.0 - 0.1307) / 0.3081
    np.testing.assert_allclose(_np(MnistBatcher().batch(real, dev).images), expected, rtol=1e-5, atol=1e-6)


def test_model_matches_the_pytorch_reference(mnist_root: Path) -> None:
    """Same weights in the raw PyTorch model of bench/: same logits (dropout off), so the op order matches."""
    torch, ref = _torch_reference()
    dev = ember.backend("numpy", float_dtype="float64").device()
    model = ModelConfig(num_classes=10, hidden_size=512).init(dev)
    assert model.num_params() == 8 * 9 + 8 + 16 * 8 * 9 + 16 + 1024 * 512 + 512 + 512 * 10 + 10
    tmodel = ref.GuideModel().double().eval()
    with torch.no_grad():
        for name in ("conv1", "conv2"):
            getattr(tmodel, name).weight.copy_(torch.from_numpy(_np(getattr(model, name).weight.val())))
            getattr(tmodel, name).bias.copy_(torch.from_numpy(_np(getattr(model, name).bias.val())))
        for name in ("linear1", "linear2"):  # Burn's layout [d_in, d_out] is the transpose of PyTorch's
            getattr(tmodel, name).weight.copy_(torch.from_numpy(_np(getattr(model, name).weight.val()).T))
            getattr(tmodel, name).bias.copy_(torch.from_numpy(_np(getattr(model, name).bias.val())))
    batch = MnistBatcher().batch(_images(mnist_root, 16), dev)
    logits = model.forward(batch.images)
    assert logits.shape == (16, 10)
    with torch.no_grad():
        expected = tmodel(torch.from_numpy(_np(batch.images))).numpy()
    np.testing.assert_allclose(_np(logits), expected, rtol=1e-9, atol=1e-9)


def test_dropout_only_in_training(mnist_root: Path) -> None:
    dev = Autodiff(ember.backend("numpy")).device()
    model = ModelConfig(10, 32).init(dev)
    batch = MnistBatcher().batch(_images(mnist_root, 8), dev)
    a, b = _np(model.forward(batch.images)), _np(model.forward(batch.images))
    assert not np.allclose(a, b)  # fresh dropout masks each call
    valid = model.valid()
    inner = MnistBatcher().batch(_images(mnist_root, 8), dev.inner)
    np.testing.assert_array_equal(_np(valid.forward(inner.images)), _np(valid.forward(inner.images)))


def test_adam_steps_reduce_the_loss(mnist_root: Path) -> None:
    """train_step + Adam on one batch (dropout 0): the loss falls well below log(10) = 2.303."""
    backend = ember.backend("numpy", threads=1)
    dev = Autodiff(backend).device()
    backend.seed(0)
    model = ModelConfig(10, 512, dropout=0.0).init(dev)
    optim = AdamConfig().init()
    batch = MnistBatcher().batch(_images(mnist_root, 64), dev)
    first = model.train_step(batch)
    assert first.item.output.shape == (64, 10)
    assert isinstance(first.grads, GradientsParams)
    losses = [first.item.loss.into_scalar()]
    model = optim.step(1e-3, model, first.grads)
    for _ in range(14):
        out = model.train_step(batch)
        losses.append(out.item.loss.into_scalar())
        model = optim.step(1e-3, model, out.grads)
    assert abs(losses[0] - np.log(10)) < 0.3
    assert losses[-1] < 0.5 * losses[0], losses


def test_train_writes_the_artifacts_and_infer_predicts(mnist_root: Path, tmp_path: Path, capsys) -> None:
    artifact = tmp_path / "guide"
    artifact.mkdir()
    (artifact / "notes.txt").write_text("mine")  # the user's file: kept (overwrite replaces the run's files only)
    (artifact / "checkpoint").mkdir()
    (artifact / "checkpoint" / "model-7.mpk.gz").write_bytes(b"stale")  # a run entry: replaced
    config = TrainingConfig(ModelConfig(10, 512), AdamConfig(), num_epochs=1, num_workers=0)
    train_set = PartialDataset(MnistDataset.train(mnist_root, download=False), 0, 192)
    test_set = PartialDataset(MnistDataset.test(mnist_root, download=False), 0, 64)
    device = Autodiff(ember.backend("numpy", threads=1)).device()
    result = train(artifact, config, device, train_dataset=train_set, test_dataset=test_set, overwrite=True)

    assert (artifact / "notes.txt").read_text() == "mine"
    assert not (artifact / "checkpoint" / "model-7.mpk.gz").exists()
    assert json.loads((artifact / ".ember-run").read_text())["state"] == "finished"
    assert TrainingConfig.load(artifact / "config.json") == config
    assert json.loads((artifact / "config.json").read_text())["learning_rate"] == 1e-4
    for rel in ("model.mpk.gz", "experiment.log", "checkpoint/model-1.mpk.gz", "checkpoint/optim-1.mpk.gz",
                "train/epoch-1/Accuracy.log", "train/epoch-1/Loss.log", "valid/epoch-1/Accuracy.log",
                "valid/epoch-1/Loss.log"):
        assert (artifact / rel).is_file(), rel
    assert "Accuracy" in capsys.readouterr().out  # the summary table

    # the saved model (half precision) gives the trained model's logits
    inner = device.inner
    item = MnistDataset.test(mnist_root, download=False).get(42)
    loaded = config.model.init(inner).load_record(CompactRecorder().load(artifact / "model"))
    images = MnistBatcher().batch([item], inner).images
    np.testing.assert_allclose(_np(loaded.forward(images)), _np(result.model.valid().forward(images)),
                               rtol=2e-2, atol=2e-2)

    predicted, expected = infer(artifact, inner, item)
    assert capsys.readouterr().out.strip() == f"Predicted {predicted} Expected {expected}"
    assert expected == item.label and 0 <= predicted <= 9


def test_train_on_jax_compiles_each_step(mnist_root: Path, tmp_path: Path, monkeypatch) -> None:
    """On jax the guide's Learner trains through ember_jax.jit: the train step is traced once (the Learner gives
    Adam its initial state before the first step), the validation step once (3 batches of 64, 1 of 64: one shape
    each)."""
    pytest.importorskip("jax")
    ember_jax = pytest.importorskip("ember_jax")
    device = Autodiff(ember.backend("jax")).device()
    made = {}
    compile_ = device.backend.compile

    def recording(fn, **options):
        made[fn.__name__] = step = compile_(fn, **options)
        return step

    monkeypatch.setattr(device.backend, "compile", recording)
    config = TrainingConfig(ModelConfig(10, 512), AdamConfig(), num_epochs=1, num_workers=0)
    train_set = PartialDataset(MnistDataset.train(mnist_root, download=False), 0, 192)
    test_set = PartialDataset(MnistDataset.test(mnist_root, download=False), 0, 64)
    result = train(tmp_path / "guide", config, device, train_dataset=train_set, test_dataset=test_set)

    assert all(isinstance(s, ember_jax.CompiledStep) for s in made.values())
    assert {name: s.trace_count for name, s in made.items()} == {"_train": 1, "_valid": 1}
    losses = np.loadtxt(tmp_path / "guide" / "train" / "epoch-1" / "Loss.log", delimiter=",")
    assert losses.shape == (3, 2) and np.all(losses[:, 1] == 64) and np.all(np.isfinite(losses[:, 0]))
    assert abs(losses[0, 0] - np.log(10)) < 0.3  # the first step's loss, before any update: about log(10)
    assert (tmp_path / "guide" / "model.mpk.gz").is_file() and result.epoch == 1


def test_cli_train_then_infer(mnist_root: Path, tmp_path: Path, examples_dir: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(examples_dir), os.environ.get("PYTHONPATH", "")])}
    common = ["--artifact-dir", str(tmp_path / "a"), "--data-dir", str(mnist_root)]
    tracking = []
    if importlib.util.find_spec("tensorboardX"):
        tracking += ["--tensorboard", str(tmp_path / "tb")]
    if importlib.util.find_spec("mlflow"):
        tracking += ["--mlflow", (tmp_path / "mlruns").as_uri()]
    run = subprocess.run([sys.executable, "-m", "guide", "train", "--epochs", "1", "--train-items", "128",
                          "--test-items", "64", "--num-workers", "0", *common, *tracking],
                         cwd=examples_dir, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    assert "Trained 1 epoch(s) on numpy" in run.stdout
    if importlib.util.find_spec("matplotlib"):   # plots by default
        assert (tmp_path / "a" / "plots" / "Loss.png").is_file() and (tmp_path / "a" / "plots" / "index.html").is_file()
    else:
        assert "Plots are off: matplotlib is not installed" in run.stdout
    if "--tensorboard" in tracking:
        assert list((tmp_path / "tb" / "iterations" / "train").glob("events.out.tfevents.*"))
    if "--mlflow" in tracking:
        saved = json.loads((tmp_path / "a" / "mlflow-run.json").read_text())
        assert saved["tracking_uri"] == (tmp_path / "mlruns").as_uri()
        assert (tmp_path / "mlruns").is_dir()
    run = subprocess.run([sys.executable, "-m", "guide", "infer", "--index", "42", *common],
                         cwd=examples_dir, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    label = MnistDataset.test(mnist_root, download=False).get(42).label
    assert re.fullmatch(rf"Predicted [0-9] Expected {label}", run.stdout.strip()), run.stdout


def test_cli_train_with_two_processes(mnist_root: Path, tmp_path: Path, examples_dir: Path) -> None:
    """``--nproc 2`` re-launches the guide as two DDP ranks (global batch 64, 32 per rank): rank 0 writes the
    artifacts and prints; the logged accuracy is that of the whole test subset."""
    pytest.importorskip("ember_torch")  # gloo for the numpy backend's collectives
    run = subprocess.run([sys.executable, "-m", "guide", "train", "--epochs", "1", "--train-items", "256",
                          "--test-items", "64", "--num-workers", "0", "--nproc", "2",
                          "--artifact-dir", str(tmp_path / "a"), "--data-dir", str(mnist_root)],
                         cwd=examples_dir, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.count("Trained 1 epoch(s) on numpy") == 1
    assert (tmp_path / "a" / "model.mpk.gz").is_file()
    assert len((tmp_path / "a" / "train" / "epoch-1" / "Loss.log").read_text().split()) == 4  # 256 / 64 steps
    assert len((tmp_path / "a" / "valid" / "epoch-1" / "Accuracy.log").read_text().split()) == 1
