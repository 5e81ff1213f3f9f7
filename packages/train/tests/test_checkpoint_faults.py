"""Checkpoints under faults (ARCHITECTURE.md, "Trust", issue 28): a SIGKILL at every file operation of the saves, the
kill -9 soak, manifests, earlier Ember's checkpoint directories, full-precision optimizer state.

The run is the soak's (``tests/fault/soak.py``): a tiny MLP with Dropout on numpy float64, a seed, Adam, a schedule,
a shuffled loader, validation, ``KeepLastNCheckpoints(2)``. Expected values are an uninterrupted run's, bit for bit.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import traceback
from pathlib import Path

import numpy as np
import pytest

from ember_train import CheckpointError, TrainingInterrupter, last_checkpoint

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from tests.fault import soak  # noqa: E402

EPOCHS = 2

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork")


def _forked(fn) -> int:
    """Run ``fn()`` in a forked child; its wait status. (jax, when another test imported it, warns that a fork of
    its multithreaded process may deadlock: the children here run numpy only, never jax.)"""
    import warnings

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "os.fork", RuntimeWarning)
        pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 0
        try:
            fn()
        except BaseException:
            traceback.print_exc()
            code = 1
        os._exit(code)
    return os.waitpid(pid, 0)[1]


def _stop_at(epoch: int, iteration: int) -> tuple[TrainingInterrupter, object]:
    stopper = TrainingInterrupter()

    def on_step(p):
        if p.epoch == epoch and p.iteration == iteration:
            stopper.stop("test")

    return stopper, on_step


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    d = tmp_path_factory.mktemp("ref")
    res = soak.train(d, EPOCHS)
    return soak.params(res.model), soak.logs(d)


@pytest.fixture(scope="module")
def interrupted(tmp_path_factory):
    """A run stopped by the interrupter after iteration 3 of epoch 1: checkpoint 1 is mid-epoch."""
    d = tmp_path_factory.mktemp("interrupted")
    stopper, on_step = _stop_at(1, 3)
    res = soak.train(d, EPOCHS, on_step=on_step, interrupter=stopper)
    assert res.interrupted and last_checkpoint(d) == 1
    assert json.loads((d / "checkpoint" / "manifest-1.json").read_text())["progress"]["iteration"] == 3
    return d


def _same(d: Path, res, reference) -> None:
    ref_params, ref_logs = reference
    got = soak.params(res.model)
    for a, b in zip(got, ref_params):
        np.testing.assert_array_equal(a, b)   # bitwise
    assert soak.logs(d) == ref_logs


def test_mid_epoch_resume_with_dropout_is_bitwise(tmp_path, reference, interrupted):
    d = tmp_path / "run"
    shutil.copytree(interrupted, d)
    res = soak.train(d, EPOCHS, checkpoint=1)
    _same(d, res, reference)


def test_a_sigkill_at_every_file_operation_of_the_saves_never_skips_or_repeats_work(tmp_path, reference, interrupted):
    """Resume the mid-epoch checkpoint (its end-of-epoch save replaces checkpoint 1: the case where deleting the
    progress file before the scheduler file turned it into a finished epoch), killed with SIGKILL before or after
    file operation k of the saves and deletes, for every k; resuming from the last checkpoint then ends as the
    uninterrupted run."""
    count_file = tmp_path / "count"

    def count():
        d = tmp_path / "count-run"
        shutil.copytree(interrupted, d)
        ops = soak.FileOps(scope="checkpoint").install()
        soak.train(d, EPOCHS, checkpoint=1, keep=1)
        ops.depth = -(1 << 30)
        count_file.write_text(json.dumps(ops.log))

    assert _forked(count) == 0
    log = json.loads(count_file.read_text())
    # two saves (epochs 1 and 2), each: three parts and the manifest written atomically; then checkpoint 1 deleted
    assert sum(op.startswith("after replace") for op in log) == 8
    assert [op for op in log if op.startswith("after unlink") and "manifest-1.json" in op]
    starts = {}
    for k in range(len(log)):
        d = tmp_path / f"k{k}"
        shutil.copytree(interrupted, d)

        def killed(d=d, k=k):
            soak.FileOps(kill_at=k, scope="checkpoint").install()
            soak.train(d, EPOCHS, checkpoint=1, keep=1)

        status = _forked(killed)
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, (k, log[k], status)
        start = last_checkpoint(d)
        assert start in (1, 2), (k, log[k])
        starts[start] = starts.get(start, 0) + 1
        res = soak.train(d, EPOCHS, checkpoint=start, keep=1)
        _same(d, res, reference)
        assert not list((d / "checkpoint").glob(".*.tmp")), (k, log[k])  # the resumed saves removed the leftovers
        shutil.rmtree(d)
    assert starts.get(1) and starts.get(2)   # kills before and after the second save's manifest
    print(f"{len(log)} kill points (before and after each file operation) in the saves; resumed from checkpoint 1 "
          f"after {starts[1]} kills, from checkpoint 2 after {starts[2]}")


def test_kill_9_soak_a_few_rounds(tmp_path):
    assert soak.main(3, seed=5, workdir=str(tmp_path), verbose=False) == 0


def test_a_damaged_part_file_is_a_clear_error_and_a_checkpoint_without_manifest_is_ignored(tmp_path, interrupted):
    d = tmp_path / "run"
    shutil.copytree(interrupted, d)
    cdir = d / "checkpoint"
    model = next(cdir.glob("model-1-3.*"))   # the interrupted epoch's files: <part>-<epoch>-<iteration>
    data = bytearray(model.read_bytes())
    data[-1] ^= 1                                  # same size: only the digest can tell
    model.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match=r"model-1-3\.mpk does not match its manifest.*SHA-256"):
        soak.train(d, EPOCHS, checkpoint=1)
    (cdir / "manifest-1.json").unlink()            # the part files alone are not a checkpoint any more
    assert last_checkpoint(d) is None
    with pytest.raises(CheckpointError, match="no complete checkpoint for epoch 1"):
        soak.train(d, EPOCHS, checkpoint=1)


def test_an_earlier_embers_checkpoints_are_read_and_adopted(tmp_path, reference):
    """A directory without manifests (an earlier Ember): model/optim/scheduler files make a checkpoint, resuming from
    it works; the first save adopts it (writes its manifest and the directory marker); from then on part files without
    a manifest (a killed save) are ignored."""
    d = tmp_path / "run"
    soak.train(d, 1)
    cdir = d / "checkpoint"
    (cdir / "manifest-1.json").unlink()
    (cdir / "checkpoints.json").unlink()
    assert last_checkpoint(d) == 1
    res = soak.train(d, EPOCHS, checkpoint=1)      # no random states saved: a note, training goes on
    assert res.epoch == EPOCHS
    assert (cdir / "checkpoints.json").exists() and (cdir / "manifest-1.json").exists()
    for part in ("model", "optim", "scheduler"):
        shutil.copy(next(cdir.glob(f"{part}-2.*")), cdir / f"{part}-7.mpk")
    assert last_checkpoint(d) == 2


def test_checkpoints_are_full_precision_with_a_half_precision_recorder(tmp_path):
    """CompactRecorder picks the file format of checkpoints, not their precision: the model, the optimizer's and the
    scheduler's records keep every bit (float16 would turn 1e5 into inf and 1e-9 into 0, and a resume would differ)."""
    import ember
    from ember import TensorData
    from ember.record import CompactRecorder
    from ember_train._checkpointer import LearnerCheckpointer

    moments = TensorData(np.array([1e-9, 1e5, 0.1 + 2e-9]))
    weights = np.array([0.1, 1e5, 3e-8], np.float32)
    ck = LearnerCheckpointer(CompactRecorder(), tmp_path)
    ck.save(1, {"w": TensorData(weights)}, {"m": moments, "v": TensorData(np.array([3.0], np.float32))},
            {"lr": 0.1 + 1e-12})
    model, optim, sched = ck.restore(1)
    assert model["w"].dtype is ember.DType.FLOAT32
    np.testing.assert_array_equal(model["w"].to_numpy(), weights)
    np.testing.assert_array_equal(optim["m"].to_numpy(), moments.to_numpy())
    assert optim["m"].dtype is ember.DType.FLOAT64 and sched == {"lr": 0.1 + 1e-12}
    assert next(tmp_path.glob("model-1.*")).name == "model-1.mpk.gz"   # the user's kind of recorder
    assert next(tmp_path.glob("optim-1.*")).name == "optim-1.mpk.gz"


def test_a_sigkill_while_a_resumed_epoch_cuts_its_metric_logs_keeps_the_kept_lines(tmp_path, reference, interrupted):
    """Resuming inside epoch 1 cuts its logs to the 3 iterations kept; that rewrite is atomic: killed at each of its
    file operations, the next resume still has the 3 lines (a plain rewrite truncated them to nothing)."""
    log_file = tmp_path / "ops"

    def count():
        d = tmp_path / "count-run"
        shutil.copytree(interrupted, d)
        ops = soak.FileOps().install()
        soak.train(d, EPOCHS, checkpoint=1)
        ops.depth = -(1 << 30)
        log_file.write_text(json.dumps(ops.log))

    assert _forked(count) == 0
    log = json.loads(log_file.read_text())
    points = [k for k, op in enumerate(log) if "Loss.log" in op and "epoch-1" in op and "train" in op]
    assert len(points) >= 8
    for k in points[:10]:
        d = tmp_path / f"k{k}"
        shutil.copytree(interrupted, d)

        def killed(d=d, k=k):
            soak.FileOps(kill_at=k).install()
            soak.train(d, EPOCHS, checkpoint=1)

        status = _forked(killed)
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, (k, log[k], status)
        res = soak.train(d, EPOCHS, checkpoint=last_checkpoint(d))
        _same(d, res, reference)
