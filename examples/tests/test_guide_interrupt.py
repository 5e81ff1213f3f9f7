"""Ctrl-C during ``python -m guide train`` (issue 28): exit status 130, a checkpoint to resume from, the command
that resumes, no final model (``infer`` refuses the run), and ``--resume`` finishes the run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from _guide_files import one_line_error

STEPS = 100  # training steps an epoch: 6400 images in batches of 64


# `python -m guide` with Ctrl-C reaching Python even when this test runs with SIGINT ignored (a background job
# starts so, and Python then leaves it ignored); set in the child, since a preexec_fn would make subprocess fork
# (jax, imported by other tests of this process, warns about forks)
_INTERRUPTIBLE = ("import runpy, signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
                  "runpy.run_module('guide', run_name='__main__', alter_sys=True)")


def _guide(examples_dir: Path, *args: str, interruptible: bool = False) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(examples_dir), os.environ.get("PYTHONPATH", "")])}
    command = ["-c", _INTERRUPTIBLE] if interruptible else ["-m", "guide"]
    return subprocess.Popen([sys.executable, *command, *args], cwd=examples_dir, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _wait_for_training(proc: subprocess.Popen, log: Path, timeout: float = 300.0) -> None:
    """Until the Learner logged that it starts fitting (the data is loaded, the artifact dir prepared)."""
    deadline = time.monotonic() + timeout
    while not (log.is_file() and "Fitting" in log.read_text(encoding="utf-8")):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "training did not start"
        time.sleep(0.05)


def test_ctrl_c_leaves_a_resumable_run_and_resume_finishes_it(mnist_root: Path, tmp_path: Path,
                                                              examples_dir: Path) -> None:
    run = tmp_path / "run"
    argv = ["train", "--epochs", "2", "--train-items", str(64 * STEPS), "--test-items", "64", "--num-workers", "0",
            "--artifact-dir", str(run), "--data-dir", str(mnist_root)]
    proc = _guide(examples_dir, *argv, interruptible=True)
    _wait_for_training(proc, run / "experiment.log")
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=300)

    assert proc.returncode == 130, out + err
    resume = f"python -m guide {' '.join(argv)} --resume"
    assert f"Resume with:\n  {resume}\n" in err, err
    assert not (run / "model.mpk.gz").exists()  # a half-trained model is no final model
    assert "Trained" not in out
    marker = json.loads((run / ".ember-run").read_text())
    assert marker["state"] == "interrupted" and marker["checkpoint"] == 1
    progress = json.loads((run / "checkpoint" / "manifest-1.json").read_text())["progress"]
    assert 1 <= progress["iteration"] < STEPS  # stopped inside epoch 1 (the manifest makes checkpoint 1 complete)

    infer = _guide(examples_dir, "infer", "--artifact-dir", str(run), "--data-dir", str(mnist_root))
    _, err = infer.communicate(timeout=300)
    assert infer.returncode == 2
    assert f"has no final model yet: resume it with `{resume}`" in one_line_error(err)

    again = _guide(examples_dir, *argv)  # the same command without --resume: refused, the run kept
    _, err = again.communicate(timeout=300)
    assert again.returncode == 2 and "holds an unfinished run that can be resumed" in one_line_error(err)
    assert (run / "checkpoint" / "manifest-1.json").is_file()

    resumed = _guide(examples_dir, *argv, "--resume")
    out, err = resumed.communicate(timeout=600)
    assert resumed.returncode == 0, out + err
    assert "Trained 2 epoch(s) on numpy" in out
    assert json.loads((run / ".ember-run").read_text())["state"] == "finished"
    assert (run / "model.mpk.gz").is_file()
    for epoch in (1, 2):  # every step of both epochs logged once: nothing skipped, nothing repeated
        assert len((run / "train" / f"epoch-{epoch}" / "Loss.log").read_text().split()) == STEPS

    infer = _guide(examples_dir, "infer", "--artifact-dir", str(run), "--data-dir", str(mnist_root))
    out, err = infer.communicate(timeout=300)
    assert infer.returncode == 0 and out.startswith("Predicted "), out + err
