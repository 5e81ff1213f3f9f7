"""The Learner on jax trains through ``ember_jax.jit`` (issue 10): each step is traced once per argument structure
(no recompilation in a second epoch), a compiled run equals an eager one (``compile(False)``), checkpoints resume,
and a host read inside a step is a clear error. Skipped without jax."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import helpers as h

jax = pytest.importorskip("jax")
ember_jax = pytest.importorskip("ember_jax")

from ember.optim import AdamConfig, MomentumConfig, SgdConfig  # noqa: E402
from ember.optim.lr_scheduler import ExponentialLrSchedulerConfig  # noqa: E402
from ember.record import FullPrecisionSettings, NamedMpkFileRecorder  # noqa: E402
from ember_train import LearnerBuilder, LearnerError, TrainOutput  # noqa: E402
from ember_train.metric import AccuracyMetric, LossMetric  # noqa: E402
from ember_train.renderer import MetricsRenderer  # noqa: E402


class TraceLog(MetricsRenderer):
    """Records ``(split, epoch, iteration, traces of each compiled step)`` at every render (``log_interval(1)``)."""

    def __init__(self, steps: dict[str, object]) -> None:
        self.steps = steps
        self.rows: list[tuple[str, int, int, dict[str, int]]] = []

    def _row(self, split: str, p) -> None:
        self.rows.append((split, p.epoch, p.iteration,
                          {name: s.trace_count for name, s in self.steps.items()}))  # type: ignore[attr-defined]

    def render_train(self, progress) -> None:
        self._row("train", progress)

    def render_valid(self, progress) -> None:
        self._row("valid", progress)


def _record_compiled(monkeypatch, dev) -> dict[str, object]:
    """The CompiledStep objects the Learner makes, by step name (the real ``ember_jax.jit`` is used)."""
    made: dict[str, object] = {}
    compile_ = dev.backend.compile

    def recording(fn, **options):
        step = compile_(fn, **options)
        made[fn.__name__] = step
        return step

    monkeypatch.setattr(dev.backend, "compile", recording)
    return made


def _builder(tmp: Path, dev, epochs: int, renderer: MetricsRenderer) -> LearnerBuilder:
    return (LearnerBuilder(tmp)
            .metric_train_numeric(AccuracyMetric()).metric_valid_numeric(AccuracyMetric())
            .metric_train_numeric(LossMetric()).metric_valid_numeric(LossMetric())
            .with_file_checkpointer(NamedMpkFileRecorder(FullPrecisionSettings()))
            .devices([dev]).num_epochs(epochs).seed(3).log_interval(1).renderer(renderer))


def _fit(tmp: Path, dev, epochs: int = 2, renderer: MetricsRenderer | None = None, compile: bool = True,
         checkpoint: int | None = None, optim=None, accumulation: int | None = None):
    dev.backend.seed(0)
    model = h.Mlp.init(dev, dropout=0.3)
    b = _builder(tmp, dev, epochs, renderer or MetricsRenderer()).compile(compile)
    if checkpoint is not None:
        b = b.checkpoint(checkpoint)
    if accumulation is not None:
        b = b.grads_accumulation(accumulation)
    learner = b.build(model, AdamConfig().init() if optim is None else optim, ExponentialLrSchedulerConfig(0.05, 0.95))
    return learner.fit(*h.loaders())  # 96 training and 48 validation items in batches of 16: one shape


def _params(res) -> list[np.ndarray]:
    return [p.val().to_numpy() for p in res.model.params()]


@pytest.fixture(scope="module")
def eager(tmp_path_factory) -> dict[int, tuple[Path, object]]:
    """The same runs with compile(False), by number of epochs (2, and 4 for the resume test): (directory, result)."""
    dev = h.devices("jax")
    out = {}
    for epochs in (2, 4):
        d = tmp_path_factory.mktemp(f"eager{epochs}")
        out[epochs] = (d, _fit(d, dev, epochs=epochs, compile=False))
    return out


def test_a_second_epoch_does_not_recompile(tmp_path, monkeypatch, eager):
    dev = h.devices("jax")
    made = _record_compiled(monkeypatch, dev)
    log = TraceLog(made)
    res = _fit(tmp_path, dev, renderer=log)

    assert sorted(made) == ["_train", "_valid"]
    assert all(isinstance(s, ember_jax.CompiledStep) for s in made.values())
    end = {(split, epoch): counts for split, epoch, _, counts in log.rows}  # the last row of each epoch
    # epoch 1: the validation probe traces _valid once; _train is traced at the first step only: the Learner gives
    # Adam its initial state (zero moments, count 0) before the first step, so the state layout never changes
    assert end["train", 1] == {"_train": 1, "_valid": 1}
    by_step = {it: counts["_train"] for split, epoch, it, counts in log.rows if split == "train" and epoch == 1}
    assert by_step == {1: 1, 2: 1, 3: 1, 4: 1, 5: 1, 6: 1}
    # epoch 2: no new trace at all
    assert end["train", 2] == end["valid", 2] == {"_train": 1, "_valid": 1}
    assert made["_train"].cache_size == 1 and made["_valid"].cache_size == 1  # type: ignore[attr-defined]

    # the compiled run equals the eager one: same seeds, the same PRNG key threading (dropout masks), float32
    eager_dir, eager_res = eager[2]
    for a, b in zip(_params(res), _params(eager_res)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    for split, epoch, name in [(s, e, n) for s in ("train", "valid") for e in (1, 2) for n in ("Loss", "Accuracy")]:
        rel = Path(split) / f"epoch-{epoch}" / f"{name}.log"  # every step's metric, as logged
        np.testing.assert_allclose(np.loadtxt(tmp_path / rel, delimiter=","),
                                   np.loadtxt(eager_dir / rel, delimiter=","), rtol=1e-5, atol=1e-6)


def test_a_stateless_optimizer_traces_the_train_step_once(tmp_path, monkeypatch):
    """SGD keeps no per-parameter state, so every step has the first one's structure: one trace in 2 epochs,
    although the scheduler gives a new learning rate at every step (a tensor: dynamic)."""
    dev = h.devices("jax")
    made = _record_compiled(monkeypatch, dev)
    res = _fit(tmp_path, dev, optim=SgdConfig().init())
    assert res.epoch == 2
    assert {name: s.trace_count for name, s in made.items()} == {"_train": 1, "_valid": 1}  # type: ignore[attr-defined]


def test_gradient_accumulation_compiles_the_gradient_and_the_update_once_each(tmp_path, monkeypatch):
    """With grads_accumulation(2) the forward/backward and the optimizer update are compiled apart (the gradients
    are summed eagerly between them): each is traced once, and the run equals the eager one."""
    dev = h.devices("jax")
    eager = _fit(tmp_path / "eager", dev, compile=False, accumulation=2)
    made = _record_compiled(monkeypatch, dev)
    res = _fit(tmp_path / "compiled", dev, accumulation=2)
    assert {name: s.trace_count for name, s in made.items()} == {  # type: ignore[attr-defined]
        "_grad": 1, "_update": 1, "_valid": 1}
    for a, b in zip(_params(res), _params(eager)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_a_rule_without_an_initial_state_traces_twice_then_never(tmp_path, monkeypatch):
    """SGD with momentum starts its buffer from the first gradient (no initial state can give that): the first
    step has no state, the second the steady layout; later steps and epochs reuse it."""
    dev = h.devices("jax")
    made = _record_compiled(monkeypatch, dev)
    res = _fit(tmp_path, dev, optim=SgdConfig(momentum=MomentumConfig(momentum=0.9)).init())
    assert res.epoch == 2
    assert {name: s.trace_count for name, s in made.items()} == {"_train": 2, "_valid": 1}  # type: ignore[attr-defined]


def test_resume_from_a_checkpoint_on_jax(tmp_path, eager):
    dev = h.devices("jax")
    first = _fit(tmp_path, dev, epochs=2)
    assert first.epoch == 2
    res = _fit(tmp_path, dev, epochs=4, checkpoint=2)  # Adam's state (its step count an Int tensor) reloads
    assert res.epoch == 4
    for a, b in zip(_params(res), _params(eager[4][1])):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_compile_false_runs_eagerly_on_jax(tmp_path, monkeypatch):
    dev = h.devices("jax")
    made = _record_compiled(monkeypatch, dev)
    prints: list[float] = []

    class Printing(h.Mlp):
        def train_step(self, batch: h.Batch) -> TrainOutput:
            out = super().train_step(batch)
            prints.append(out.item.loss.into_scalar())  # a host read: fine when eager
            return out

    dev.backend.seed(0)
    m = h.Mlp.init(dev, dropout=0.3)
    res = (_builder(tmp_path, dev, 1, MetricsRenderer()).compile(False)
           .build(Printing(l1=m.l1, drop=m.drop, l2=m.l2, loss=m.loss), AdamConfig().init(), 0.01)
           .fit(*h.loaders()))
    assert made == {} and res.epoch == 1
    assert len(prints) == 6 and all(np.isfinite(prints))


def test_a_host_read_inside_a_compiled_step_says_what_to_do(tmp_path):
    dev = h.devices("jax")

    class Reading(h.Mlp):
        def train_step(self, batch: h.Batch) -> TrainOutput:
            out = super().train_step(batch)
            if out.item.loss.into_scalar() > 100.0:  # host read of a traced value
                raise AssertionError("unreachable")
            return out

    m = h.Mlp.init(dev, dropout=0.3)
    learner = (_builder(tmp_path, dev, 1, MetricsRenderer())
               .build(Reading(l1=m.l1, drop=m.drop, l2=m.l2, loss=m.loss), AdamConfig().init(), 0.01))
    with pytest.raises(LearnerError) as e:
        learner.fit(*h.loaders())
    msg = str(e.value)
    assert msg.startswith("model.train_step raised BackendError on the first training batch (Batch): ")
    assert "Tensor.into_scalar()" in msg and "test_compiled_jax.py" in msg  # the op and the user's line
    assert "compiled by the jax backend" in msg and "LearnerBuilder.compile(False)" in msg
    assert not list(tmp_path.glob("train/epoch-*/*.log")) or all(
        not p.read_text() for p in tmp_path.glob("train/epoch-*/*.log"))
