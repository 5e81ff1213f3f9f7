"""``TensorBoardLogger``: TensorBoard event files through tensorboardX's ``SummaryWriter`` (optional extra
``ember-train[tensorboard]``)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from ._errors import LearnerError
from ._tracking import EpochEndSteps, RunInfo, TrackingLogger, flat_hparams

__all__ = ["TensorBoardLogger"]

_RUNS = {("epoch", "train"): "train", ("epoch", "valid"): "valid",
         ("iteration", "train"): "iterations/train", ("iteration", "valid"): "iterations/valid",
         ("batch", "valid"): "valid_batches"}


def _summary_writer() -> Any:
    try:
        from tensorboardX import SummaryWriter
    except ImportError as exc:
        from ember import install_command

        raise LearnerError(
            "TensorBoardLogger needs tensorboardX, which is not installed: "
            f"{install_command('ember-train', 'tensorboard')} "
            "(or pip install tensorboardX; `pip install tensorboard` for the viewer)."
        ) from exc
    return SummaryWriter


class TensorBoardLogger(TrackingLogger):
    """Writes every metric to TensorBoard event files under ``log_dir``, one TensorBoard run per series:

    ==========================  =======================  ======================================================
    run (sub-directory)         tag                      step
    ==========================  =======================  ======================================================
    ``iterations/train``        ``iteration/<Metric>``   the global training step (1-based): each iteration
    ``iterations/valid``        ``iteration/<Metric>``   the global training step at which the epoch ended: the
                                                         validation's epoch mean (as Keras and Lightning log it)
    ``train``, ``valid``        ``epoch/<Metric>``       the epoch (train and valid on one chart)
    ``valid_batches``           ``valid_batch/<Metric>`` the validation's own global iteration: each batch
    ``.`` (``log_dir`` itself)  HParams, ``config``      the hyper-parameters (``with_hyperparameters``)
    ==========================  =======================  ======================================================

    So each chart has one x axis: ``iteration/Loss`` shows the training loss of every step and the validation loss
    as one point at the end of each epoch, where the model it measured stopped training.

    Values are TensorBoard's ``simple_value`` (float32). The event files are flushed (tensorboardX flushes with an
    ``fsync``, about 2 ms a file) at most every ``flush_secs`` seconds, at each epoch end and when ``fit`` ends. Each
    writer starts with a ``purge_step`` (TensorBoard's
    restart marker): a fresh run hides whatever an earlier run left in ``log_dir``, and a resumed run
    (``LearnerBuilder.checkpoint``) hides only what the interrupted run logged after its resume point, so its
    curves continue without a gap or overlap. Event files are flushed at each logging interval and epoch end.

    View with ``tensorboard --logdir LOG_DIR``.

    Args:
        log_dir: the directory (created); a relative path is taken inside the artifact directory
            (default ``tensorboard``).
        flush_secs: the longest time between two flushes during an epoch (default 10 s; TensorBoard itself reloads
            every 30 s).

    Raises:
        LearnerError: (at the start of ``fit``) tensorboardX is not installed.
    """

    def __init__(self, log_dir: str | os.PathLike[str] = "tensorboard", flush_secs: float = 10.0) -> None:
        self.log_dir = Path(log_dir)
        self.flush_secs = flush_secs
        self._last_flush = 0.0
        self._writers: dict[tuple[str, str], Any] = {}
        self._root: Any = None
        self._ends = EpochEndSteps()

    def start(self, run: RunInfo) -> None:
        writer_cls = _summary_writer()
        root = self.log_dir if self.log_dir.is_absolute() else run.artifact_dir / self.log_dir
        self.log_dir = root
        r = run.resume
        purge = {
            ("epoch", "train"): 1 if r is None else r.epoch + (1 if r.iteration else 0),
            ("epoch", "valid"): 1 if r is None else r.epoch,
            ("iteration", "train"): 1 if r is None else r.train_step + 1,
            # validation of the resumed epoch and after: at or after the end of the epoch before
            ("iteration", "valid"): self._ends.purge_step(run),
            ("batch", "valid"): 1 if r is None else r.valid_step + 1,
        }
        self._ends.start(run)
        # a name that sorts after the files of an interrupted run, even one started in the same second
        suffix = f".{time.time_ns()}.{os.getpid()}"
        for key, sub in _RUNS.items():
            self._writers[key] = writer_cls(str(root / sub), purge_step=purge[key], filename_suffix=suffix,
                                            flush_secs=max(1, int(self.flush_secs)), max_queue=1000)
        self._root = writer_cls(str(root), filename_suffix=suffix)
        self._last_flush = time.monotonic()
        if run.hparams:
            from tensorboardX.summary import hparams

            _exp, start, _end = hparams(flat_hparams(run.hparams), {})
            self._root.file_writer.add_summary(start)
            self._root.add_text("config", "```json\n" + json.dumps(run.hparams, indent=2) + "\n```", 0)
        self._hparams = bool(run.hparams)

    def log_iteration(self, split: str, name: str, value: float, epoch: int, iteration: int, step: int) -> None:
        if split == "train":
            self._writers[("iteration", split)].add_scalar(f"iteration/{name}", value, step)
            self._ends.train(step, epoch)
        else:
            self._writers[("batch", split)].add_scalar(f"valid_batch/{name}", value, step)

    def log_epoch(self, split: str, name: str, value: float, epoch: int) -> None:
        self._writers[("epoch", split)].add_scalar(f"epoch/{name}", value, epoch)
        if split == "valid":
            self._writers[("iteration", split)].add_scalar(f"iteration/{name}", value, self._ends.at(epoch))

    def flush(self) -> None:
        if time.monotonic() - self._last_flush >= self.flush_secs:
            self._flush_now()

    def end_epoch(self, epoch: int) -> None:
        self._flush_now()

    def _flush_now(self) -> None:
        for w in self._writers.values():
            w.flush()
        self._last_flush = time.monotonic()

    def close(self) -> None:
        if self._root is not None:
            if self._hparams:
                from tensorboardX.summary import hparams

                _exp, _start, end = hparams({}, {})
                self._root.file_writer.add_summary(end)
            self._root.close()
            self._root = None
        for w in self._writers.values():
            w.close()
        self._writers.clear()

    def __repr__(self) -> str:
        return f"TensorBoardLogger({str(self.log_dir)!r})"
