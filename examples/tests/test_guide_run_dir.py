"""The guide's artifact directory: the ``.ember-run`` marker decides what ``train`` may replace (issue 28).

A finished run is replaced by a fresh train (the README's command can be run twice); an unfinished one needs
``--resume`` or ``--overwrite``; a foreign non-empty folder needs ``--overwrite``; only the run's own entries are
ever removed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _guide_files import fake_run, one_line_error, snapshot

import ember
from ember.autodiff import Autodiff
from ember.optim import AdamConfig
from ember_train import LearnerError
from guide import ModelConfig, TrainingConfig, train
from guide.__main__ import main
from guide._errors import UsageError
from guide._run_dir import MARKER, RUN_ENTRIES, plan_run_dir


def _tiny(run: Path, mnist_root: Path, *extra: str) -> list[str]:
    return ["train", "--epochs", "1", "--train-items", "128", "--test-items", "64", "--num-workers", "0",
            "--artifact-dir", str(run), "--data-dir", str(mnist_root), *extra]


def test_plan_fresh_for_a_missing_or_empty_folder(tmp_path: Path) -> None:
    assert plan_run_dir(tmp_path / "new" / "run").action == "fresh"
    assert plan_run_dir(tmp_path).action == "fresh"
    assert not (tmp_path / "new").exists()  # planning reads only


def test_plan_replaces_a_finished_run_but_only_its_entries(tmp_path: Path) -> None:
    plan = plan_run_dir(fake_run(tmp_path, "finished", 1))
    assert plan.action == "replace"
    assert set(plan.remove) == {MARKER, "checkpoint", "config.json", "model.mpk.gz", "train"}
    assert "notes.txt" not in plan.remove and set(plan.remove) <= set(RUN_ENTRIES)


@pytest.mark.parametrize("state", ["interrupted", "failed", "running"])
def test_plan_refuses_to_replace_a_resumable_run(state: str, tmp_path: Path) -> None:
    run = fake_run(tmp_path, state, 1)
    with pytest.raises(UsageError) as info:
        plan_run_dir(run)
    msg = str(info.value)
    assert "holds an unfinished run that can be resumed" in msg
    assert f"`python -m guide train --epochs 2 --artifact-dir {run} --resume`" in msg and "--overwrite" in msg
    assert plan_run_dir(run, resume=True).resume_epoch == 1
    assert plan_run_dir(run, overwrite=True).action == "replace"


def test_plan_without_a_checkpoint(tmp_path: Path) -> None:
    """An ended run that never reached a checkpoint has nothing to resume: replaced; one still marked running
    (perhaps alive in another process) only with --overwrite."""
    assert plan_run_dir(fake_run(tmp_path / "a", "interrupted")).action == "replace"
    with pytest.raises(UsageError, match="has no checkpoint yet: wait for it, or pass --overwrite"):
        plan_run_dir(fake_run(tmp_path / "b", "running"))
    with pytest.raises(UsageError, match="stopped before its first checkpoint, so there is nothing to resume"):
        plan_run_dir(tmp_path / "a", resume=True)


def test_plan_for_a_foreign_folder(tmp_path: Path) -> None:
    (tmp_path / "train").mkdir()
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(UsageError, match="holds no Ember run"):
        plan_run_dir(tmp_path)
    with pytest.raises(UsageError, match="nothing to resume"):
        plan_run_dir(tmp_path, resume=True)
    assert plan_run_dir(tmp_path, overwrite=True).remove == ("train",)
    (tmp_path / MARKER).write_text("not json")  # an unreadable marker is no marker
    with pytest.raises(UsageError, match="holds no Ember run"):
        plan_run_dir(tmp_path)
    (tmp_path / "file").write_text("")
    with pytest.raises(UsageError, match="is a file, not a directory"):
        plan_run_dir(tmp_path / "file")


def test_the_same_train_twice_replaces_the_finished_run(mnist_root: Path, tmp_path: Path, capsys) -> None:
    """The README's command, run twice: the second run replaces the first (its files only)."""
    run = tmp_path / "nested" / "run"
    assert main(_tiny(run, mnist_root)) == 0
    marker = json.loads((run / MARKER).read_text())
    assert marker["state"] == "finished" and marker["written_by"] == "python -m guide train"
    assert marker["argv"] == _tiny(run, mnist_root) and marker["epochs"] == 1
    (run / "notes.txt").write_text("mine")
    (run / "checkpoint" / "model-9.mpk.gz").write_bytes(b"left by an older run")
    assert main(_tiny(run, mnist_root)) == 0
    assert (run / "notes.txt").read_text() == "mine"
    assert not (run / "checkpoint" / "model-9.mpk.gz").exists()
    assert (run / "model.mpk.gz").is_file() and json.loads((run / MARKER).read_text())["state"] == "finished"
    assert main(["infer", "--artifact-dir", str(run), "--data-dir", str(mnist_root)]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1].startswith("Predicted ")


def test_overwrite_writes_into_a_foreign_folder_keeping_its_files(mnist_root: Path, tmp_path: Path,
                                                                  capsys) -> None:
    project = tmp_path / "project"
    (project / "valid").mkdir(parents=True)
    (project / "valid" / "old.log").write_text("a run entry: replaced")
    (project / "data.csv").write_text("1,2\n")
    assert main(_tiny(project, mnist_root)) == 2
    assert "--overwrite" in one_line_error(capsys.readouterr().err)
    assert main(_tiny(project, mnist_root, "--overwrite")) == 0
    assert (project / "data.csv").read_text() == "1,2\n"
    assert not (project / "valid" / "old.log").exists() and (project / "model.mpk.gz").is_file()


def test_resume_refuses_other_settings(mnist_root: Path, tmp_path: Path, capsys) -> None:
    run = fake_run(tmp_path / "run", "interrupted", 1)
    assert main(_tiny(run, mnist_root, "--resume")) == 2
    err = one_line_error(capsys.readouterr().err)
    assert ("was started with --epochs 2, no --train-items, no --test-items (this command: --epochs 1, --train-items "
            "128, --test-items 64)") in err
    assert f"resume it with `python -m guide train --epochs 2 --artifact-dir {run} --resume`" in err


def test_train_checks_its_arguments_before_it_replaces_a_run(mnist_root: Path, tmp_path: Path) -> None:
    """guide.train from Python: a config the Learner refuses (0 epochs) leaves a finished run as it was."""
    run = fake_run(tmp_path / "run", "finished")
    before = snapshot(run)
    config = TrainingConfig(ModelConfig(10, 512), AdamConfig(), num_epochs=0)
    with pytest.raises(LearnerError, match="num_epochs"):
        train(run, config, Autodiff(ember.backend("numpy")).device(), data_dir=mnist_root)
    assert snapshot(run) == before
    with pytest.raises(UsageError, match=r"resume it with `guide.train\(\.\.\., resume=True\)`"):
        train(fake_run(tmp_path / "api", "interrupted", 1, argv=[]), config.with_num_epochs(1),
              Autodiff(ember.backend("numpy")).device(), data_dir=mnist_root)


def test_a_run_that_raises_is_marked_failed(mnist_root: Path, tmp_path: Path) -> None:
    """A run that ended with an error is not running any more: the marker says failed, and without a checkpoint
    the same command may start over."""
    from ember.data import Dataset

    class Broken(Dataset):
        def get(self, index: int):
            raise RuntimeError("a broken dataset")

        def __len__(self) -> int:
            return 128

    config = TrainingConfig(ModelConfig(10, 512), AdamConfig(), num_epochs=1, num_workers=0)
    device = Autodiff(ember.backend("numpy")).device()
    with pytest.raises(Exception, match="a broken dataset"):
        train(tmp_path / "run", config, device, train_dataset=Broken(), test_dataset=Broken())
    marker = json.loads((tmp_path / "run" / MARKER).read_text())
    assert marker["state"] == "failed" and marker["checkpoint"] is None
    assert plan_run_dir(tmp_path / "run").action == "replace"
