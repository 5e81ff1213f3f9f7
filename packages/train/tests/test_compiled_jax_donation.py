"""The Learner's jax training step donates a private copy of the model (``copy_donated``): the caller's model is
never changed, nothing that holds the model between steps (validation, checkpoints, early stopping, resume, the
result) reads a deleted array, and a donated run equals a non-donating one bit for bit. Skipped without jax."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import helpers as h

jax = pytest.importorskip("jax")
ember_jax = pytest.importorskip("ember_jax")

from ember.optim import AdamConfig  # noqa: E402
from ember.optim.lr_scheduler import ExponentialLrSchedulerConfig  # noqa: E402
from ember.record import FullPrecisionSettings, NamedMpkFileRecorder  # noqa: E402
from ember_train import (  # noqa: E402
    KeepLastNCheckpoints,
    LearnerBuilder,
    MetricEarlyStoppingStrategy,
    StoppingCondition,
    _compiled,  # noqa: E402
)
from ember_train.metric import AccuracyMetric, LossMetric  # noqa: E402


def _arrays(model: Any) -> list[np.ndarray]:
    """Copies of every parameter and running-state value of ``model`` (reading a deleted array raises)."""
    out = [p.val().to_numpy().copy() for p in model.params()]
    out += [s.value().to_numpy().copy() for _, s in model.running_states()]
    return out


def _same_bits(a: list[np.ndarray], b: list[np.ndarray]) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.dtype == y.dtype and x.shape == y.shape
        assert x.tobytes() == y.tobytes()


def _same_bits_or_false(a: list[np.ndarray], b: list[np.ndarray]) -> bool:
    return all(x.tobytes() == y.tobytes() for x, y in zip(a, b))


def _watch(monkeypatch: Any, dev: Any, donate: bool) -> dict[str, Any]:
    """Record the options and the returned models of each step the Learner compiles; ``donate=False`` drops the
    donation options (the Learner's step before this change). The step donates on the CPU too here (the Learner
    donates on accelerators only: see ``donates_on``)."""
    monkeypatch.setattr(_compiled, "donates_on", lambda _device: True)
    seen: dict[str, Any] = {"options": {}, "returned": {}}
    compile_ = dev.backend.compile

    def recording(fn: Any, **options: Any) -> Any:
        seen["options"][fn.__name__] = dict(options)
        step = compile_(fn, **(options if donate else {}))
        returned = seen["returned"].setdefault(fn.__name__, [])

        def call(*args: Any, **kwargs: Any) -> Any:
            out = step(*args, **kwargs)
            returned.append(out[0] if isinstance(out, tuple) else out)
            return out

        return _Counting(step, call)

    monkeypatch.setattr(dev.backend, "compile", recording)
    return seen


class _Counting:
    """The compiled step behind ``call`` (the Learner reads ``trace_count``)."""

    def __init__(self, step: Any, call: Any) -> None:
        self.step, self.call = step, call

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.call(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.step, name)


def _fit(tmp: Path, dev: Any, model: Any, epochs: int, checkpoint: int | None = None, stop: bool = False,
         accumulation: int | None = None) -> Any:
    b = (LearnerBuilder(tmp)
         .metric_train_numeric(AccuracyMetric()).metric_valid_numeric(AccuracyMetric())
         .metric_train_numeric(LossMetric()).metric_valid_numeric(LossMetric())
         .with_file_checkpointer(NamedMpkFileRecorder(FullPrecisionSettings()))
         .with_checkpointing_strategy(KeepLastNCheckpoints(10))  # a checkpoint every epoch, all kept
         .devices([dev]).num_epochs(epochs).seed(3).plots(False))
    if stop:  # no epoch improves the validation loss by 10: stops after epoch 2
        b = b.early_stopping(MetricEarlyStoppingStrategy(
            LossMetric(), condition=StoppingCondition.no_improvement_since(1, min_delta=10.0)))
    if checkpoint is not None:
        b = b.checkpoint(checkpoint)
    if accumulation is not None:
        b = b.grads_accumulation(accumulation)
    learner = b.build(model, AdamConfig().init(), ExponentialLrSchedulerConfig(0.05, 0.95))
    return learner.fit(*h.loaders())


def _model(dev: Any, kind: str) -> Any:
    dev.backend.seed(0)
    return h.BnMlp.init(dev) if kind == "bn" else h.Mlp.init(dev, dropout=0.3)


def _logs(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.glob("*/epoch-*/*.log"))}


@pytest.mark.parametrize("kind", ["bn", "dropout"])
def test_the_donated_step_trains_a_copy_and_equals_a_non_donating_run(tmp_path: Path, monkeypatch: Any,
                                                                      kind: str) -> None:
    dev = h.devices("jax")
    runs = {}
    for donate in (True, False):
        with monkeypatch.context() as mp:
            seen = _watch(mp, dev, donate)
            model = _model(dev, kind)
            before = _arrays(model)
            res = _fit(tmp_path / str(donate), dev, model, epochs=4, stop=True)
            assert res.stopped_early and res.epoch == 2  # validation, checkpoints of epochs 1 and 2, early stop
            if donate:  # the caller's model: readable and unchanged (running states included)
                _same_bits(_arrays(model), before)
            else:  # without the copy, the first step wrote batch norm's statistics into the caller's cells
                n = len(model.params())
                _same_bits(_arrays(model)[:n], before[:n])
            runs[donate] = (res, seen)
    (res, seen), (plain, plain_seen) = runs[True], runs[False]
    assert seen["options"]["_train"] == {"donate_argnums": (0,), "copy_donated": True}
    assert seen["options"]["_valid"] == {}
    # the first call trained a copy; every later call updated that copy in place and returned it
    returned = seen["returned"]["_train"]
    assert len(returned) == 12 and all(m is res.model for m in returned)
    assert len({id(m) for m in plain_seen["returned"]["_train"]}) > 1  # without donation: a new model per step
    _same_bits(_arrays(res.model), _arrays(plain.model))
    assert _logs(tmp_path / "True") == _logs(tmp_path / "False")  # every step's metrics, as logged
    assert res.checkpoints == plain.checkpoints == [1, 2]
    # the checkpoints hold the same values (the model of each epoch, written while the step owned its arrays; the
    # files differ in the parameter ids, new for each model made)
    files = sorted(p.name for p in (tmp_path / "True" / "checkpoint").glob("model-*"))
    assert len(files) == 2
    recorder = NamedMpkFileRecorder(FullPrecisionSettings())
    for name in files:
        saved = [_arrays(_model(dev, kind).load_file(tmp_path / str(d) / "checkpoint" / name, recorder))
                 for d in (True, False)]
        _same_bits(*saved)
    assert not _same_bits_or_false(saved[0], before)
    # the result is an ordinary model afterwards: it trains again from the caller's side
    again = _fit(tmp_path / "again", dev, res.model, epochs=1)
    assert again.epoch == 1
    _arrays(res.model)


def test_resume_donates_a_copy_of_the_restored_model(tmp_path: Path, monkeypatch: Any) -> None:
    dev = h.devices("jax")
    first_model = _model(dev, "dropout")
    _fit(tmp_path / "run", dev, first_model, epochs=2)
    results = {}
    for donate in (True, False):
        d = tmp_path / f"resumed-{donate}"
        shutil.copytree(tmp_path / "run", d)
        with monkeypatch.context() as mp:
            seen = _watch(mp, dev, donate)
            model = _model(dev, "dropout")
            before = _arrays(model)
            res = _fit(d, dev, model, epochs=4, checkpoint=2)
            assert res.epoch == 4
            _same_bits(_arrays(model), before)
            results[donate] = res
            if donate:
                assert all(m is res.model for m in seen["returned"]["_train"])
    _same_bits(_arrays(results[True].model), _arrays(results[False].model))


def test_gradient_accumulation_donates_the_update_only(tmp_path: Path, monkeypatch: Any) -> None:
    dev = h.devices("jax")
    results = {}
    for donate in (True, False):
        with monkeypatch.context() as mp:
            seen = _watch(mp, dev, donate)
            model = _model(dev, "bn")
            before = _arrays(model)
            res = _fit(tmp_path / str(donate), dev, model, epochs=2, accumulation=2)
            # the parameters are unchanged; the running states are not: the gradient step (not donated) writes
            # batch norm's new statistics into the cells of the model it is given, the caller's at the first
            # steps, with or without donation (an older limit, see docs/jax.md)
            n = len(model.params())
            _same_bits(_arrays(model)[:n], before[:n])
            results[donate] = res
            if donate:
                assert seen["options"]["_update"] == {"donate_argnums": (0,), "copy_donated": True}
                assert seen["options"]["_grad"] == {}
                assert all(m is res.model for m in seen["returned"]["_update"])
    _same_bits(_arrays(results[True].model), _arrays(results[False].model))


def test_on_the_cpu_the_learner_does_not_donate(tmp_path: Path, monkeypatch: Any) -> None:
    """XLA's CPU programs run slower with the model donated (``donates_on``): the CPU step compiles without."""
    dev = h.devices("jax")
    assert dev.inner.name.startswith("cpu") and not _compiled.donates_on(dev)
    seen: dict[str, Any] = {}
    compile_ = dev.backend.compile

    def recording(fn: Any, **options: Any) -> Any:
        seen[fn.__name__] = options
        return compile_(fn, **options)

    monkeypatch.setattr(dev.backend, "compile", recording)
    model = _model(dev, "bn")
    res = _fit(tmp_path, dev, model, epochs=1)
    assert res.epoch == 1 and seen == {"_train": {}, "_valid": {}}

    class _Gpu:
        name = "cuda:0"

    class _Device:
        inner = _Gpu()

    assert _compiled.donates_on(_Device())
