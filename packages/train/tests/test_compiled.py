"""The Learner's compiled steps, seen from the Learner (numpy): what it hands to ``Backend.compile``, the learning
rate as a tensor when the backend compiles, the ``compile(False)`` option, and first-step error attribution.

A stand-in compiler (a wrapper that records its calls) makes the numpy backend look like a compiling one; the
real compiler (jax) is tested in test_compiled_jax.py.
"""

from __future__ import annotations

import io
import re
import time
from pathlib import Path

import numpy as np
import pytest

import helpers as h
from ember import BackendError, Float, Tensor
from ember.optim import AdamConfig, SgdConfig
from ember.optim.lr_scheduler import ExponentialLrSchedulerConfig
from ember_train import LearnerBuilder, LearnerError
from ember_train.metric import AccuracyMetric, LearningRateMetric, LossMetric
from ember_train.renderer import CliMetricsRenderer


class StandInCompiler:
    """``Backend.compile`` of a compiling backend, for numpy: returns a new function (so the Learner treats the
    step as compiled) that records each call's arguments and then runs the step eagerly."""

    def __init__(self) -> None:
        self.compiled: list[str] = []
        self.calls: list[tuple[str, tuple]] = []
        self.options: list[dict] = []

    def __call__(self, fn, **options):
        name = fn.__name__
        self.compiled.append(name)
        self.options.append(options)

        def compiled_step(*args):
            self.calls.append((name, args))
            return fn(*args)

        return compiled_step


def _builder(tmp: Path, dev, epochs: int = 2) -> LearnerBuilder:
    return (LearnerBuilder(tmp)
            .metric_train_numeric(AccuracyMetric()).metric_valid_numeric(AccuracyMetric())
            .metric_train_numeric(LossMetric()).metric_valid_numeric(LossMetric())
            .metric_train(LearningRateMetric())
            .devices([dev]).num_epochs(epochs).renderer(CliMetricsRenderer(lines_per_epoch=0)))


def _fit(tmp: Path, dev, builder=None, loaders=None):
    train, valid = loaders or h.loaders()
    b = builder or _builder(tmp, dev)
    return b.build(h.Classifier.init(dev), AdamConfig().init(), ExponentialLrSchedulerConfig(0.05, 0.9)).fit(
        train, valid)


def _weights(res) -> list[np.ndarray]:
    return [p.val().to_numpy() for p in res.model.params()]


def test_a_compiling_backend_gets_whole_steps_and_a_tensor_learning_rate(tmp_path, monkeypatch):
    dev = h.devices()
    eager = _fit(tmp_path / "eager", dev, _builder(tmp_path / "eager", dev).compile(False))
    compiler = StandInCompiler()
    monkeypatch.setattr(dev.backend, "compile", compiler)
    res = _fit(tmp_path / "compiled", dev)

    assert sorted(compiler.compiled) == ["_train", "_valid"]  # once per fit, one function per step
    train_calls = [args for name, args in compiler.calls if name == "_train"]
    valid_calls = [args for name, args in compiler.calls if name == "_valid"]
    assert len(train_calls) == 2 * 6 and len(valid_calls) == 1 + 2 * 3  # 96/16 and 48/16 batches; the probe
    assert len({id(args[1]) for args in train_calls}) == 1  # the Learner's optimizer, its state written back
    for i, (model, _optim, batch, lr) in enumerate(train_calls):
        assert isinstance(lr, Tensor) and lr.kind is Float and lr.shape == (1,) and lr.device is dev.inner
        assert lr.to_numpy()[0] == pytest.approx(0.05 * 0.9**i, rel=1e-12)  # ExponentialLr: lr_0 gamma^i
        assert model.devices() == [dev] and batch.inputs.device is dev
    assert all(model.devices() == [dev.inner] for model, _ in valid_calls)  # model.valid()
    # the logged learning rate is still the scheduler's float
    assert float((tmp_path / "compiled/train/epoch-2/Learning_Rate.log").read_text().split()[0].split(",")[0]) == (
        pytest.approx(0.05 * 0.9**6))
    # the same run as an eager one (float64; the tensor learning rate only changes roundings)
    for a, b in zip(_weights(res), _weights(eager)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    assert res.summary.table() == eager.summary.table()


def test_gradient_accumulation_compiles_the_gradient_and_the_update(tmp_path, monkeypatch):
    dev = h.devices()
    loaders = h.loaders(batch_size=8)
    eager = _fit(tmp_path / "eager", dev, _builder(tmp_path / "eager", dev).grads_accumulation(2).compile(False),
                 loaders)
    compiler = StandInCompiler()
    monkeypatch.setattr(dev.backend, "compile", compiler)
    res = _fit(tmp_path / "compiled", dev, _builder(tmp_path / "compiled", dev).grads_accumulation(2),
               h.loaders(batch_size=8))
    assert sorted(compiler.compiled) == ["_grad", "_update", "_valid"]
    names = [name for name, _ in compiler.calls]
    assert names.count("_grad") == 2 * 12 and names.count("_update") == 2 * 6  # 96/8 batches, one update per 2
    for a, b in zip(_weights(res), _weights(eager)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def test_eager_backends_keep_plain_steps_and_a_float_learning_rate(tmp_path, monkeypatch):
    """numpy's ``compile`` returns the step itself: the Learner passes the float and calls the step directly."""
    dev = h.devices()
    seen = []
    original = dev.backend.compile

    def compile_spy(fn, **options):
        out = original(fn, **options)
        assert out is fn
        seen.append(fn.__name__)
        return out

    monkeypatch.setattr(dev.backend, "compile", compile_spy)
    lrs = []
    from ember.optim import Optimizer

    step = Optimizer.step
    monkeypatch.setattr(Optimizer, "step", lambda self, lr, module, grads: lrs.append(lr) or step(self, lr, module,
                                                                                                    grads))
    _fit(tmp_path, dev)
    assert sorted(seen) == ["_train", "_valid"]
    assert len(lrs) == 12 and all(type(lr) is float for lr in lrs)


def test_compile_false_never_asks_the_backend(tmp_path, monkeypatch):
    dev = h.devices()

    def no_compile(fn, **options):
        raise AssertionError("compile(False): Backend.compile must not be called")

    monkeypatch.setattr(dev.backend, "compile", no_compile)
    res = _fit(tmp_path, dev, _builder(tmp_path, dev).compile(False))
    assert res.epoch == 2
    with pytest.raises(LearnerError, match=r"LearnerBuilder.compile: expected True or False, got 'no'"):
        LearnerBuilder(tmp_path).compile("no")  # type: ignore[arg-type]


def test_compile_options_reach_the_backend_for_every_step(tmp_path, monkeypatch):
    dev = h.devices()
    compiler = StandInCompiler()
    monkeypatch.setattr(dev.backend, "compile", compiler)
    res = _fit(tmp_path, dev, _builder(tmp_path, dev).compile(mode="capture", backend="aot_eager"))
    assert res.epoch == 2 and sorted(compiler.compiled) == ["_train", "_valid"]
    assert compiler.options == [{"mode": "capture", "backend": "aot_eager"}] * 2
    with pytest.raises(LearnerError, match=r"options \['mode'\] given with compile\(False\)"):
        LearnerBuilder(tmp_path).compile(False, mode="capture")


def test_an_option_the_backend_refuses_is_a_learner_error(tmp_path):
    torch_backend = pytest.importorskip("ember_torch")
    assert torch_backend
    dev = h.devices("torch")
    with pytest.raises(LearnerError, match=r"the torch backend's compile refused the options \{'mode': 'fast'\}: "
                                           r"ember_torch.compile: mode must be one of capture, default"):
        _fit(tmp_path, dev, _builder(tmp_path, dev).compile(mode="fast"))
    # a mode it takes: the captured graph, as on this CPU by default; the run trains
    res = _fit(tmp_path / "ok", dev, _builder(tmp_path / "ok", dev, epochs=1).compile(mode="capture"))
    assert res.epoch == 1


def test_first_step_failures_are_attributed(tmp_path, monkeypatch):
    """Through a compiled step, a failure of the user's train_step or valid_step is reported as such (a
    BackendError, as raised for a host read while tracing, with how to run eagerly); an optimizer failure and a
    wrong return type keep their own errors."""
    dev = h.devices()
    monkeypatch.setattr(dev.backend, "compile", StandInCompiler())

    class Broken(h.Classifier):
        def train_step(self, batch: h.Batch):
            raise ValueError("boom")

    m = h.Classifier.init(dev)
    learner = _builder(tmp_path / "a", dev).build(Broken(weight=m.weight, bias=m.bias), SgdConfig().init(), 0.1)
    with pytest.raises(LearnerError, match=r"^model.train_step raised ValueError on the first training batch "
                                           r"\(Batch\): boom\. Check that the training loader's batcher produces "
                                           r"the batch train_step expects\.$") as e:
        learner.fit(*h.loaders())
    assert isinstance(e.value.__cause__, ValueError)

    class Untraceable(h.Classifier):  # what a compiling backend raises for a host read while tracing
        def train_step(self, batch: h.Batch):
            raise BackendError("jax backend: Tensor.into_scalar() is not possible inside a compiled function.")

    learner = _builder(tmp_path / "e", dev).build(Untraceable(weight=m.weight, bias=m.bias), SgdConfig().init(), 0.1)
    with pytest.raises(LearnerError, match=r"raised BackendError on the first training batch \(Batch\): jax backend: "
                                           r"Tensor.into_scalar\(\) is not possible inside a compiled function\. The "
                                           r"steps are compiled by the numpy backend; LearnerBuilder.compile\(False\) "
                                           r"runs them eagerly"):
        learner.fit(*h.loaders())

    class NotAnOutput(h.Classifier):
        def train_step(self, batch: h.Batch):
            return self.forward_classification(batch)

    learner = _builder(tmp_path / "b", dev).build(NotAnOutput(weight=m.weight, bias=m.bias), SgdConfig().init(), 0.1)
    with pytest.raises(LearnerError, match=r"must return TrainOutput\(model, grads, item\), got ClassificationOutput"):
        learner.fit(*h.loaders())

    class FailingOptimizer:
        def step(self, lr, model, grads):
            raise RuntimeError("optimizer failure")

    learner = _builder(tmp_path / "c", dev).build(h.Classifier.init(dev), FailingOptimizer(), 0.1)
    with pytest.raises(RuntimeError, match="optimizer failure"):
        learner.fit(*h.loaders())

    class BrokenValid(h.Classifier):
        def valid_step(self, batch: h.Batch):
            raise KeyError("nope")

    learner = _builder(tmp_path / "d", dev).build(BrokenValid(weight=m.weight, bias=m.bias), SgdConfig().init(), 0.1)
    with pytest.raises(LearnerError, match=r"valid_step raised KeyError on the first validation batch"):
        learner.fit(*h.loaders())


class SlowFirstCallCompiler:
    """A compiling backend's ``compile`` for numpy that takes ``delay`` seconds at the first call of each batch size
    (as jax traces and compiles each new shape) and counts those calls in ``trace_count``, as ``ember_jax.jit``."""

    def __init__(self, delay: float) -> None:
        self.delay = delay

    def __call__(self, fn, **options):
        delay = self.delay

        class Compiled:
            trace_count = 0
            seen: set[int] = set()

            def __call__(self, *args):
                rows = next(a.inputs.shape[0] for a in args if isinstance(a, h.Batch))
                if rows not in self.seen:
                    self.seen.add(rows)
                    self.trace_count += 1
                    time.sleep(delay)
                return fn(*args)

        return Compiled()


class _Events(CliMetricsRenderer):
    """The plain renderer's output, plus every ``compiling`` call and training progress, in order."""

    def __init__(self) -> None:
        self.out = io.StringIO()
        super().__init__(file=self.out, lines_per_epoch=6)
        self.events: list[tuple] = []

    def compiling(self, step, seconds):
        self.events.append(("compiling", step, seconds))
        super().compiling(step, seconds)

    def render_train(self, progress):
        self.events.append(("train", progress))
        super().render_train(progress)


def test_compiling_calls_are_announced_and_left_out_of_the_eta(tmp_path, monkeypatch):
    """A fake slow first step (1 s per new batch shape): the renderer hears "compiling" before the first call of each
    step and how long it took after; the ETA's rate leaves those calls out, so it predicts the steady steps."""
    delay = 1.0
    dev = h.devices()
    monkeypatch.setattr(dev.backend, "compile", SlowFirstCallCompiler(delay))
    events = _Events()
    # 100 training items in batches of 16: 6 of 16 and a last one of 4, a new shape that compiles again
    _fit(tmp_path, dev, _builder(tmp_path, dev).renderer(events).log_interval(1), h.loaders(n_train=100))
    ev = events.events
    compiles = [e for e in ev if e[0] == "compiling"]
    first_train = next(i for i, e in enumerate(ev) if e[0] == "train")
    # the validation step is compiled before training (its first batch checks the metrics), then the training step
    assert [(e[1], e[2] is None) for e in ev[:first_train]] == [
        ("validation step", True), ("validation step", False), ("training step", True), ("training step", False)]
    assert all(e[2] >= delay for e in ev[:first_train] if e[2] is not None)
    # the last batch's new shape compiles again: reported once, after the call (it could not be foreseen)
    assert [(e[1], e[2] is None) for e in compiles[4:]] == [("training step", False)]
    progress = [e[1] for e in ev if e[0] == "train"]
    epoch1 = [p for p in progress if p.epoch == 1]
    epoch2 = [p for p in progress if p.epoch == 2]
    assert epoch1[0].iteration == 1 and epoch1[0].compile_iterations == 1 and epoch1[0].eta is None  # no rate yet
    second = epoch1[1]
    assert second.compile_iterations == 1 and second.compile_seconds >= delay and second.elapsed >= delay
    naive = (second.items_total - second.items_processed) * second.elapsed / second.items_processed
    assert naive >= delay          # what the ETA said before: the compile time spread over the rest of the epoch
    # the steady rate: the time without the compiling call, over the steady iterations
    steady = (second.elapsed - second.compile_seconds) / (second.iteration - 1)
    assert second.items_processed == 32 and second.items_total == 100
    assert second.eta == pytest.approx((100 - 32) * steady / 16, rel=1e-9) and second.eta < delay / 4
    assert epoch1[-1].compile_iterations == 2 and epoch1[-1].compile_seconds >= 2 * delay
    assert all(p.compile_iterations == 0 for p in epoch2)   # compiled once: epoch 2 runs the cached programs
    lines = events.out.getvalue().splitlines()
    assert lines[0].startswith("Compiling the validation step: its first call traces and compiles it")
    assert any(re.fullmatch(r"Compiled the training step in \d+\.\d s \(left out of the ETA\)\.", ln) for ln in lines)
    # the progress lines' ETA after the compiling call: the steady rate's, well under the compile time
    etas = [ln for ln in lines if ln.startswith("[train] epoch 1/2 iter 2/7")]
    assert etas and re.search(r"ETA 0:00:00$", etas[0])
