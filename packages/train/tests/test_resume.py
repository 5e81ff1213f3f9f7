"""Resume: from a checkpoint, after an interrupt (interrupter and a real SIGINT), after SIGKILL mid-epoch."""

from __future__ import annotations

import signal
from pathlib import Path

import numpy as np
import pytest

import helpers as h
import resume_run
from ember_train import TrainingInterrupter, last_checkpoint

HERE = Path(__file__).parent


def _logs(d: Path) -> dict[str, str]:
    return {str(p.relative_to(d)): p.read_text() for p in sorted(d.glob("*/epoch-*/*.log"))}


def _manifest(d: Path, epoch: int) -> dict:
    import json

    return json.loads((d / "checkpoint" / f"manifest-{epoch}.json").read_text())


def _params(model) -> list[np.ndarray]:
    return [p.val().to_numpy() for p in model.params()]


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    d = tmp_path_factory.mktemp("ref")
    res = resume_run.run(d, 4)
    return d, res


def _same_as_reference(d: Path, res, reference) -> None:
    ref_dir, ref = reference
    for a, b in zip(_params(res.model), _params(ref.model)):
        np.testing.assert_array_equal(a, b)   # bitwise: numpy float64, full-precision checkpoints
    assert _logs(d) == _logs(ref_dir)
    assert res.summary.table() == ref.summary.table()


def test_resume_from_checkpoint_is_identical(tmp_path, reference):
    first = resume_run.run(tmp_path, 2)
    assert first.epoch == 2 and last_checkpoint(tmp_path) == 2
    res = resume_run.run(tmp_path, 4, checkpoint=2)
    assert res.epoch == 4
    _same_as_reference(tmp_path, res, reference)


def test_interrupter_mid_epoch_then_resume(tmp_path, reference):
    stopper = TrainingInterrupter()

    def fn(p):
        if p.epoch == 2 and p.iteration == 3:
            stopper.stop("test")

    res = resume_run.run(tmp_path, 4, resume_run.Hook(fn), interrupter=stopper)
    assert res.interrupted and res.epoch == 2 and res.resume_epoch == 2
    assert _manifest(tmp_path, 2)["progress"]["iteration"] == 3
    assert len((tmp_path / "train/epoch-2/Loss.log").read_text().splitlines()) == 3
    assert not (tmp_path / "valid/epoch-2").exists()
    res = resume_run.run(tmp_path, 4, checkpoint=2)
    assert last_checkpoint(tmp_path) == 4 and _manifest(tmp_path, 4)["progress"] is None
    _same_as_reference(tmp_path, res, reference)


@pytest.fixture
def sigint_at_start(request):
    """Run the test with SIGINT in a given state, whatever state pytest was started in."""
    found = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, request.param)
    try:
        yield request.param
    finally:
        signal.signal(signal.SIGINT, found)


@pytest.mark.parametrize("sigint_at_start", [signal.default_int_handler], indirect=True, ids=["interactive"])
def test_ctrl_c_stops_gracefully_and_says_how_to_resume(tmp_path, reference, sigint_at_start):
    notes = []

    class R(resume_run.Hook):
        def message(self, text):
            notes.append(text)

    def fn(p):
        if p.epoch == 1 and p.iteration == 4 and not notes:
            signal.raise_signal(signal.SIGINT)   # what Ctrl-C sends

    res = resume_run.run(tmp_path, 4, R(fn))
    assert res.interrupted and res.epoch == 1
    # the step in flight finished; nothing after it ran
    assert len((tmp_path / "train/epoch-1/Loss.log").read_text().splitlines()) == 4
    text = "\n".join(notes)
    assert "Ctrl-C" in text and ".checkpoint(1)" in text and "after iteration 4" in text
    assert signal.getsignal(signal.SIGINT) is sigint_at_start  # handler restored
    res = resume_run.run(tmp_path, 4, checkpoint=1)
    _same_as_reference(tmp_path, res, reference)


@pytest.mark.parametrize("sigint_at_start", [signal.SIG_IGN], indirect=True, ids=["background-job"])
def test_ctrl_c_is_still_ignored_when_sigint_was_ignored_at_start(tmp_path, reference, sigint_at_start):
    # a job started with `&`, nohup or by a CI runner begins with SIGINT ignored: the Learner keeps it so
    seen = []

    def fn(p):
        if p.epoch == 1 and p.iteration == 4:
            seen.append(signal.getsignal(signal.SIGINT))
            signal.raise_signal(signal.SIGINT)

    res = resume_run.run(tmp_path, 4, resume_run.Hook(fn))
    assert seen == [signal.SIG_IGN]                       # no handler installed during fit
    assert not res.interrupted and res.epoch == 4         # the signal changed nothing
    assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    _same_as_reference(tmp_path, res, reference)


@pytest.mark.parametrize("sigint_at_start", [signal.SIG_IGN, signal.default_int_handler], indirect=True,
                         ids=["background-job", "interactive"])
def test_interrupter_stops_training_however_sigint_is_set(tmp_path, sigint_at_start):
    stopper = TrainingInterrupter()

    def fn(p):
        if p.epoch == 2 and p.iteration == 2:
            stopper.stop("from another thread")

    res = resume_run.run(tmp_path, 4, resume_run.Hook(fn), interrupter=stopper)
    assert res.interrupted and res.epoch == 2
    assert signal.getsignal(signal.SIGINT) is sigint_at_start


def test_sigkill_mid_epoch_then_resume_from_last_complete_checkpoint(tmp_path, reference):
    resume_run.run_killed(tmp_path, 4, 3, 2)
    assert (tmp_path / "train/epoch-3").exists()          # killed inside epoch 3
    k = last_checkpoint(tmp_path)
    assert k == 2
    res = resume_run.run(tmp_path, 4, checkpoint=k)
    _same_as_reference(tmp_path, res, reference)


def test_missing_checkpoint_is_a_clear_error(tmp_path):
    from ember_train import CheckpointError

    with pytest.raises(CheckpointError, match="no complete checkpoint for epoch 3"):
        resume_run.run(tmp_path, 4, checkpoint=3)
    assert h.NUM_CLASSES == 3


class Noisy(h.Classifier):
    """Adds uniform noise to the inputs in training (like Dropout, it draws from the backend's generator)."""

    def train_step(self, batch):
        from ember import Distribution, Tensor

        noise = Tensor.random(list(batch.inputs.shape), Distribution.uniform(-0.5, 0.5), batch.inputs.device)
        return super().train_step(h.Batch(batch.inputs.add(noise), batch.targets))


def _noisy_run(d, epochs, checkpoint=None, seed=11):
    from ember.optim import AdamConfig

    dev = h.devices()
    m = h.Classifier.init(dev)
    b = resume_run.builder(d, epochs, checkpoint=checkpoint).seed(seed)
    train, valid = h.loaders()
    return b.build(Noisy(weight=m.weight, bias=m.bias), AdamConfig().init(), 0.05).fit(train, valid)


def test_seed_makes_random_steps_resume_identically(tmp_path):
    ref = _noisy_run(tmp_path / "ref", 3)
    _noisy_run(tmp_path / "r", 1)
    res = _noisy_run(tmp_path / "r", 3, checkpoint=1)
    for a, b in zip(_params(res.model), _params(ref.model)):
        np.testing.assert_array_equal(a, b)
    _noisy_run(tmp_path / "o", 1, seed=12)   # the noise matters: another seed, another first epoch
    assert _logs(tmp_path / "o")["train/epoch-1/Loss.log"] != _logs(tmp_path / "ref")["train/epoch-1/Loss.log"]


def test_interrupt_at_the_last_training_step_resumes_with_validation(tmp_path, reference):
    stopper = TrainingInterrupter()

    def fn(p):
        if p.epoch == 2 and p.iteration == p.iterations_total:
            stopper.stop("test")

    res = resume_run.run(tmp_path, 4, resume_run.Hook(fn), interrupter=stopper)
    assert res.interrupted and res.resume_epoch == 2
    assert not (tmp_path / "valid/epoch-2").exists()     # validation is left to the resumed run
    res = resume_run.run(tmp_path, 4, checkpoint=2)
    _same_as_reference(tmp_path, res, reference)


def _dropout_run(d, backend, epochs, checkpoint=None, stop_at=None, seed=11, accumulation=None, loader_seed=7):
    """h.Mlp (Dropout 0.3) on ``backend``; ``stop_at=(epoch, iteration)`` stops it there with the interrupter;
    ``seed=None``: the Learner does not seed, the backend is seeded once before the model is made."""
    import ember
    from ember.optim import AdamConfig

    dev = h.devices(backend)
    stopper = TrainingInterrupter()

    def fn(p):
        if stop_at is not None and (p.epoch, p.iteration) == stop_at:
            stopper.stop("test")

    b = resume_run.builder(d, epochs, resume_run.Hook(fn), checkpoint=checkpoint).with_interrupter(stopper)
    b = b.devices([dev])
    if accumulation:
        b = b.grads_accumulation(accumulation)
    if seed is not None:
        b = b.seed(seed)
    ember.backend(backend, **({"float_dtype": "float64"} if backend == "numpy" else {})).seed(3)
    model = h.Mlp.init(dev, dropout=0.3)
    return b.build(model, AdamConfig().init(), 0.05).fit(*h.loaders(seed=loader_seed))


@pytest.mark.parametrize("backend", ["numpy", "torch", "jax"])
@pytest.mark.parametrize("seed", [11, None], ids=["seeded", "unseeded"])
def test_mid_epoch_resume_with_dropout_is_bitwise_on_every_backend(tmp_path, backend, seed):
    """The skipped iterations of a resumed epoch drew dropout masks in the interrupted run: the checkpoint's random
    states (restored after the skipped batches) continue exactly where it stopped (the difference was 0.15)."""
    pytest.importorskip(f"ember_{backend}")
    ref = _dropout_run(tmp_path / "ref", backend, 2, seed=seed)
    first = _dropout_run(tmp_path / "r", backend, 2, stop_at=(1, 3), seed=seed)
    assert first.interrupted and first.resume_epoch == 1
    res = _dropout_run(tmp_path / "r", backend, 2, checkpoint=1, seed=seed)
    assert res.epoch == 2 and not res.interrupted
    for a, b in zip(_params(res.model), _params(ref.model)):
        np.testing.assert_array_equal(a, b)
    assert _logs(tmp_path / "r") == _logs(tmp_path / "ref")
    other = _dropout_run(tmp_path / "o", backend, 1, seed=None if seed is None else seed + 1)   # dropout matters
    if seed is not None:
        assert _logs(tmp_path / "o")["train/epoch-1/Loss.log"] != _logs(tmp_path / "ref")["train/epoch-1/Loss.log"]
    assert other.epoch == 1


def test_resume_at_an_epoch_boundary_without_a_seed_continues_the_random_stream(tmp_path):
    ref = _dropout_run(tmp_path / "ref", "numpy", 3, seed=None)
    _dropout_run(tmp_path / "r", "numpy", 1, seed=None)
    res = _dropout_run(tmp_path / "r", "numpy", 3, checkpoint=1, seed=None)
    for a, b in zip(_params(res.model), _params(ref.model)):
        np.testing.assert_array_equal(a, b)


def test_a_stop_with_accumulated_gradients_waits_for_the_update_and_resumes_bitwise(tmp_path):
    """Accumulated gradients are not saved: a stop after iteration 3 of steps accumulated in pairs comes after
    iteration 4 (the update), and the resumed run equals the uninterrupted one."""
    ref = _dropout_run(tmp_path / "ref", "numpy", 2, accumulation=2)
    first = _dropout_run(tmp_path / "r", "numpy", 2, stop_at=(1, 3), accumulation=2)
    assert first.interrupted and _manifest(tmp_path / "r", 1)["progress"]["iteration"] == 4
    res = _dropout_run(tmp_path / "r", "numpy", 2, checkpoint=1, accumulation=2)
    for a, b in zip(_params(res.model), _params(ref.model)):
        np.testing.assert_array_equal(a, b)


def test_resuming_with_another_shuffle_seed_is_reported(tmp_path, caplog):
    _dropout_run(tmp_path, "numpy", 2, stop_at=(1, 3))
    with caplog.at_level("WARNING", logger="ember_train"):
        _dropout_run(tmp_path, "numpy", 2, checkpoint=1, loader_seed=8)
    assert any("training data loader differs from the checkpoint's (seed 7 then, 8 now)" in r.getMessage()
               for r in caplog.records)
