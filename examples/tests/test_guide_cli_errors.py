"""python -m guide: every mistake is one line on stderr and exit status 2, checked before anything is written, so
a user's folder survives every bad invocation (issues 28 and 29)."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest
from _guide_files import fake_run, one_line_error, snapshot

import ember.data.vision._mnist as mnist_module
from guide.__main__ import main
from guide._errors import UsageError

_NO_NETWORK = ("http://127.0.0.1:9/a", "http://127.0.0.1:9/b")  # nothing listens on port 9: fails at once

# (extra arguments of `train`, a fragment the one-line error must contain)
BAD_TRAIN = [
    (["--epochs", "0"], "argument --epochs: expected a positive integer"),
    (["--epochs", "-1"], "argument --epochs: expected a positive integer"),
    (["--epochs", "two"], "got 'two'"),
    (["--nproc", "0"], "argument --nproc: expected a positive integer"),
    (["--train-items", "0"], "argument --train-items"),
    (["--test-items", "-3"], "argument --test-items"),
    (["--num-workers", "-1"], "argument --num-workers: expected a non-negative integer"),
    (["--devices", "0"], "argument --devices"),
    (["--seed", "-1"], "argument --seed"),
    (["--backend", "nope"], "argument --backend: invalid choice"),
    (["--resume", "--overwrite"], "not allowed with argument"),
    (["--device", "nope:7"], "--device nope:7: numpy backend has one device"),
    (["--devices", "3"], "--devices 3: the numpy backend has 1 device(s)"),
    (["--tensorboard", "TB"], "--tensorboard needs tensorboardX, which is not installed"),
    (["--mlflow", "file:/nowhere"], "--mlflow needs mlflow, which is not installed"),
    (["--resume"], "is finished (2 epoch(s)), so there is nothing to resume"),
    (["--data-dir", "MISTYPED/mnist"], "--data-dir MISTYPED/mnist: no such directory"),
]


@pytest.fixture
def no_loggers(monkeypatch) -> None:
    """tensorboardX and mlflow as if not installed (find_spec answers None for a None in sys.modules)."""
    for name in ("tensorboardX", "mlflow"):
        monkeypatch.setitem(sys.modules, name, None)


@pytest.mark.parametrize(("extra", "expected"), BAD_TRAIN, ids=[" ".join(e) for e, _ in BAD_TRAIN])
def test_a_bad_train_leaves_a_finished_run_untouched(extra, expected, mnist_root: Path, tmp_path: Path, capsys,
                                                     no_loggers) -> None:
    """A finished run may be replaced by a fresh train, so each mistake must be found before the replacing."""
    run = fake_run(tmp_path / "run", "finished")
    before = snapshot(run)
    extra = [str(tmp_path / a) if a in ("TB", "MISTYPED/mnist") else a for a in extra]
    expected = expected.replace("MISTYPED", str(tmp_path / "MISTYPED"))
    data = [] if "--data-dir" in extra else ["--data-dir", str(mnist_root)]
    assert main(["train", "--artifact-dir", str(run), *data, "--train-items", "64", *extra]) == 2
    assert expected in one_line_error(capsys.readouterr().err)
    assert snapshot(run) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]  # nothing else created (--data-dir, --tensorboard)


@pytest.mark.parametrize("extra", [[], ["--epochs", "0"], ["--tensorboard", "tb"], ["--resume"]])
def test_a_project_folder_is_never_used_as_an_artifact_dir(extra, mnist_root: Path, tmp_path: Path, monkeypatch,
                                                           capsys, no_loggers) -> None:
    """``--artifact-dir .`` in a project folder: refused (it holds no Ember run), whatever else is on the line."""
    project = tmp_path / "project"
    (project / "train").mkdir(parents=True)
    (project / "train" / "data.csv").write_text("1,2\n")
    (project / "config.json").write_text('{"mine": true}')
    before = snapshot(project)
    monkeypatch.chdir(project)
    assert main(["train", "--artifact-dir", ".", "--data-dir", str(mnist_root), *extra]) == 2
    err = one_line_error(capsys.readouterr().err)
    assert ("argument --epochs" in err or "--tensorboard needs" in err or "no Ember run" in err), err
    assert snapshot(project) == before


def test_a_foreign_folder_names_what_overwrite_would_replace(mnist_root: Path, tmp_path: Path, capsys) -> None:
    project = tmp_path / "project"
    (project / "checkpoint").mkdir(parents=True)
    (project / "notes.txt").write_text("mine")
    assert main(["train", "--artifact-dir", str(project), "--data-dir", str(mnist_root)]) == 2
    err = one_line_error(capsys.readouterr().err)
    assert "holds no Ember run (no .ember-run marker; it holds checkpoint, notes.txt)" in err
    assert "--overwrite to write the run there (replacing checkpoint and keeping the rest)" in err


@pytest.mark.parametrize("given", [True, False], ids=["--data-dir", "default"])
def test_missing_mnist_files_are_listed_and_nothing_is_created(given: bool, tmp_path: Path, monkeypatch,
                                                               capsys) -> None:
    """An existing --data-dir (or the default cache) without the files: the download is tried, fails, and the
    message lists the four files and where they were looked for; neither the data directory's content nor the
    artifact directory appears."""
    monkeypatch.setattr(mnist_module, "MIRRORS", _NO_NETWORK)
    monkeypatch.delenv("EMBER_DATA_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    data = tmp_path / "data"
    data.mkdir()
    args = ["--data-dir", str(data)] if given else []
    assert main(["train", "--artifact-dir", str(tmp_path / "run"), *args]) == 2
    err = one_line_error(capsys.readouterr().err)
    where = data if given else tmp_path / "cache" / "ember" / "mnist"
    assert (f"missing train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz, t10k-images-idx3-ubyte.gz, "
            f"t10k-labels-idx1-ubyte.gz (looked in {where}, gzipped or not) and the download failed") in err
    assert ("--data-dir" in err) and list(data.iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data"]  # no run folder, no cache folder


def test_debug_shows_the_traceback(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="argument --epochs"):
        main(["train", "--epochs", "0", "--artifact-dir", str(tmp_path), "--debug"])


@pytest.mark.parametrize(("extra", "expected"), [
    (["--index", "-1"], "argument --index: expected a non-negative integer"),
    (["--index", "10000"], "--index must be in 0..9999 (the MNIST test set), got 10000."),
    (["--device", "gpu:3"], "--device gpu:3:"),
])
def test_bad_infer(extra, expected, mnist_root: Path, tmp_path: Path, capsys) -> None:
    run = fake_run(tmp_path / "run", "finished")
    assert main(["infer", "--artifact-dir", str(run), "--data-dir", str(mnist_root), *extra]) == 2
    assert expected in one_line_error(capsys.readouterr().err)


def test_infer_without_a_model_says_train_first(mnist_root: Path, tmp_path: Path, capsys) -> None:
    assert main(["infer", "--artifact-dir", str(tmp_path / "none"), "--data-dir", str(mnist_root)]) == 2
    err = one_line_error(capsys.readouterr().err)
    assert "no trained model there (config.json and model.mpk.gz missing): train first" in err
    assert not (tmp_path / "none").exists()


@pytest.mark.parametrize(("checkpoint", "expected"), [
    (1, "was interrupted (last checkpoint: epoch 1 of 2), so it has no final model yet: resume it with `"),
    (None, "was interrupted, so it has no final model yet: train it again with `python -m guide train --epochs 2"),
])
def test_infer_on_an_unfinished_run_says_how_to_finish_it(checkpoint, expected, mnist_root: Path, tmp_path: Path,
                                                          capsys) -> None:
    run = fake_run(tmp_path / "run", "interrupted", checkpoint)
    (run / "model.mpk.gz").write_bytes(b"an older model")  # whatever is there: not the run's final model
    assert main(["infer", "--artifact-dir", str(run), "--data-dir", str(mnist_root)]) == 2
    err = one_line_error(capsys.readouterr().err)
    assert expected in err
    assert ("--resume`" in err) == (checkpoint is not None)


@pytest.mark.skipif(importlib.util.find_spec("tensorboardX") is None, reason="needs tensorboardX")
def test_an_installed_logger_passes_the_check(tmp_path: Path) -> None:
    from guide._cli_checks import check_loggers

    check_loggers(type("Args", (), {"tensorboard": str(tmp_path), "mlflow": None})())  # no error
    assert os.listdir(tmp_path) == []  # checking creates nothing
