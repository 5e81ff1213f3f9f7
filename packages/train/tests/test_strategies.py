"""Learning strategies as objects: a custom ``LearningStrategy`` drives the Learner's loop through its
``LearningMethod``, and the built-in strategies choose their path from ``Backend.capabilities`` (never the backend's
name). Single process, numpy float64 (exact)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import helpers as h
from ember.backend import DeviceMesh
from ember.optim import GradientsParams, SgdConfig
from ember_train import LearnerBuilder, LearnerError, LearningStrategy, MultiDevice
from ember_train.renderer import MetricsRenderer
from ember_train.strategies import DistributedDataParallelMethod, SingleDeviceMethod

EPOCHS = 2
TRAIN_STEPS = 96 // 16  # h.loaders(): 96 training items, 48 validation items, batches of 16
VALID_STEPS = 48 // 16


def _fit(tmp: Path, dev: Any, strategy: LearningStrategy | None, lr: float = 0.1, valid: bool = True) -> Any:
    b = LearnerBuilder(tmp).devices([dev]).num_epochs(EPOCHS).renderer(MetricsRenderer()).seed(3)
    if strategy is not None:
        b = b.learning_strategy(strategy)
    train, valid_loader = h.loaders()
    return b.build(h.Classifier.init(dev), SgdConfig().init(), lr).fit(train, valid_loader if valid else None)


def _params(model: Any) -> dict[str, np.ndarray]:
    return {"weight": model.weight.val().to_numpy(), "bias": model.bias.val().to_numpy()}


class HalfGradients(SingleDeviceMethod):
    """Splits the step at the gradients and halves them before the update; records the loop's calls."""

    def __init__(self, calls: list[str], stop_at: int | None = None) -> None:
        super().__init__()
        self.calls = calls
        self.stop_at = stop_at
        self.train_steps = 0

    def __getattribute__(self, name: str) -> Any:
        attr = super().__getattribute__(name)
        if callable(attr) and not name.startswith("_") and name in type(self).LOOP:
            super().__getattribute__("calls").append(name)
        return attr

    LOOP = frozenset({"start", "prepare_loaders", "metric_sum", "prepare_model", "plan_step", "prepare", "place",
                      "train_step", "stop_after_step", "agree", "from_main", "local", "local_item", "end_epoch",
                      "gather", "finish", "log_stats", "close"})

    def plan_step(self, compile: bool, accumulating: bool, train: Any, valid: Any) -> bool:
        return True  # grad, then update

    def train_step(self, steps: Any, model: Any, optim: Any, batch: Any, lr: Any, stop: Any) -> tuple[Any, Any]:
        assert not hasattr(steps, "train")  # the Learner made the split step plan_step asked for
        self.train_steps += 1
        grads, item = steps.grad(model, batch)
        half = GradientsParams({pid: g.mul_scalar(0.5) for pid, g in grads.items()})
        return steps.update(model, optim, half, lr), item

    def stop_after_step(self, stop: Any) -> bool:
        return self.stop_at is not None and self.train_steps == self.stop_at


class HalfGradientsStrategy(LearningStrategy):
    def __init__(self, calls: list[str], stop_at: int | None = None) -> None:
        self.calls = calls
        self.stop_at = stop_at
        self.method: HalfGradients | None = None

    def learning_method(self) -> HalfGradients:
        self.method = HalfGradients(self.calls, self.stop_at)
        return self.method


def test_a_custom_strategy_drives_the_loop(tmp_path: Path) -> None:
    """Plain SGD (p - lr * g) on halved gradients is SGD at half the learning rate: the custom method's step is the
    one that ran, every step, in the order the LearningMethod protocol documents."""
    dev = h.devices()
    calls: list[str] = []
    strategy = HalfGradientsStrategy(calls)
    got = _fit(tmp_path / "custom", dev, strategy, lr=0.1)
    want = _fit(tmp_path / "half-lr", dev, None, lr=0.1 * 0.5)
    trained_full = _fit(tmp_path / "full-lr", dev, None, lr=0.1)
    for k, v in _params(want.model).items():
        np.testing.assert_allclose(_params(got.model)[k], v, rtol=1e-12, atol=0)
        assert not np.allclose(_params(trained_full.model)[k], v)  # the halving is visible
    assert strategy.method is not None and strategy.method.train_steps == EPOCHS * TRAIN_STEPS
    assert not got.interrupted and got.epoch == EPOCHS
    # the protocol's order: start ... close; one preparation; per epoch the steps, then end_epoch
    first = {name: calls.index(name) for name in dict.fromkeys(calls)}
    assert calls[0] == "start" and calls[-1] == "close" and calls[-2] == "log_stats"
    assert first["prepare_loaders"] < first["prepare_model"] < first["plan_step"] < first["prepare"] < first["place"]
    assert calls.count("train_step") == calls.count("stop_after_step") == EPOCHS * TRAIN_STEPS
    assert calls.count("end_epoch") == EPOCHS and calls.count("finish") == 1
    # training and validation batches are placed by the strategy (+1: the first validation batch, probed)
    assert calls.count("place") == EPOCHS * (TRAIN_STEPS + VALID_STEPS) + 1
    assert calls.index("finish") > max(i for i, c in enumerate(calls) if c == "train_step")


def test_a_custom_strategy_decides_when_to_stop(tmp_path: Path) -> None:
    dev = h.devices()
    strategy = HalfGradientsStrategy([], stop_at=4)
    result = _fit(tmp_path, dev, strategy, valid=False)
    assert result.interrupted and result.epoch == 1 and result.resume_epoch is None
    assert strategy.method is not None and strategy.method.train_steps == 4


def test_the_base_strategy_says_what_to_implement(tmp_path: Path) -> None:
    dev = h.devices()
    learner = LearnerBuilder(tmp_path).devices([dev]).learning_strategy(LearningStrategy()).renderer(
        MetricsRenderer()).build(h.Classifier.init(dev), SgdConfig().init(), 0.1)
    with pytest.raises(NotImplementedError, match=r"learning_method\(\) must return the LearningMethod"):
        learner.fit(h.loaders()[0])
    with pytest.raises(LearnerError, match="trains on one device of this process, got 2 devices"):
        LearnerBuilder(tmp_path).devices([dev, dev]).learning_strategy(LearningStrategy()).build(
            h.Classifier.init(dev), SgdConfig().init(), 0.1)


class RecordingMesh(DeviceMesh):
    """A mesh of two parts that keeps every tensor where it is (so training equals one device's) and records what
    the strategy put on it."""

    local_parts = 2

    def __init__(self, devices: list[Any]) -> None:
        self.devices = devices
        self.sharded: list[tuple[int, ...]] = []
        self.replicated: list[str] = []

    def replicate(self, obj: Any) -> Any:
        self.replicated.append(type(obj).__name__)
        return obj

    def shard(self, obj: Any) -> Any:
        self.sharded.append(tuple(obj.shape))
        return obj


def test_multi_device_follows_the_backend_capability(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """MultiDevice asks ``capabilities.spmd_devices`` and ``Backend.device_mesh``, not the backend's name: numpy
    refuses it, and a numpy backend that declares the capability (and gives a mesh) trains through the mesh."""
    dev = h.devices()
    with pytest.raises(LearnerError, match="capabilities.spmd_devices"):
        LearnerBuilder(tmp_path).learning_strategy(MultiDevice((dev, dev))).build(
            h.Classifier.init(dev), SgdConfig().init(), 0.1)
    inner = dev.inner.backend
    meshes: list[RecordingMesh] = []

    def device_mesh(devices: Any) -> RecordingMesh:
        meshes.append(RecordingMesh(list(devices)))
        return meshes[-1]

    monkeypatch.setattr(inner, "spmd_devices", True)
    monkeypatch.setattr(inner, "device_mesh", device_mesh)
    assert dev.backend.capabilities.spmd_devices  # Autodiff answers for its inner backend
    got = _fit(tmp_path / "multi", dev, MultiDevice((dev, dev)))
    monkeypatch.undo()
    want = _fit(tmp_path / "single", dev, None)
    for k, v in _params(want.model).items():
        np.testing.assert_array_equal(_params(got.model)[k], v)
    (mesh,) = meshes
    assert mesh.devices == [dev, dev]
    assert mesh.replicated[:2] == ["Classifier", type(SgdConfig().init()).__name__]
    # every batch's two tensors split: the training batches, the probed validation batch and the validation batches
    assert set(mesh.sharded) == {(16, 4), (16,)}
    assert len(mesh.sharded) == 2 * (EPOCHS * (TRAIN_STEPS + VALID_STEPS) + 1)


class _Caps:
    def __init__(self, spmd_processes: bool) -> None:
        self.spmd_processes = spmd_processes
        self.compiles_steps = spmd_processes


class _Device:
    def __init__(self, spmd_processes: bool) -> None:
        self.backend = self
        self.inner = self
        self.name = "fake"
        self.capabilities = _Caps(spmd_processes)


def test_ddp_runs_one_program_only_where_the_backend_spans_processes() -> None:
    """The choice between the step split at the gradients and one compiled program over the ranks is the backend's
    ``capabilities.spmd_processes`` plus the run's settings (compiled steps, no accumulation, even batches)."""
    from ember.data import DataLoaderBuilder, InMemDataset
    from ember_train import DistributedDataParallel

    def loader(n: int) -> Any:
        return DataLoaderBuilder(lambda items, device: items).batch_size(8).build(
            InMemDataset(list(range(n)))).shard(0, 2)

    def plan(spmd: bool, compile: bool = True, accumulating: bool = False, n: int = 64,
             world: int = 2) -> tuple[bool, bool, int]:
        method = DistributedDataParallel().learning_method()
        assert isinstance(method, DistributedDataParallelMethod)
        method.device, method.rank, method.world_size = _Device(spmd), 1, world
        split = method.plan_step(compile, accumulating, loader(n), None)
        return split, method.one_program, method.seed_rank

    assert plan(spmd=True) == (False, True, 0)            # one program: drawn as one process
    assert plan(spmd=False) == (True, False, 1)           # collectives between the halves; this rank's draws
    assert plan(spmd=True, compile=False) == (True, False, 1)
    assert plan(spmd=True, accumulating=True) == (True, False, 1)
    assert plan(spmd=True, n=67) == (True, False, 1)      # 67 % 16 = 3 items: 2 and 1 rows on the ranks
    assert plan(spmd=True, world=1) == (True, False, 1)
