"""The checkpoints of one ``Learner.fit``: resume from one, save after an epoch, save an interrupted epoch.

A checkpoint is the model, optimizer and scheduler records plus the run state (every process's random states and
the training loader's order, :mod:`._run_state`), written by :class:`~ember_train.LearnerCheckpointer` with its
manifest last. With several processes every one reads the checkpoint it resumes (the artifact directory must be
shared), gathers its random states into each save (a collective every process calls) and only the main process
writes (``saving``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from ._app_logger import LOGGER
from ._checkpointer import LearnerCheckpointer, complete_checkpoints
from ._errors import LearnerError
from ._records import load_state, state_record
from ._run_state import capture, check_loader, loader_info
from ._store import MetricStore
from ._strategy import CheckpointingAction

__all__ = ["FitCheckpoints"]


class FitCheckpoints:
    """The checkpoints of one fit.

    Args:
        settings: the Learner's settings (recorder, artifact directory, checkpoint to resume, checkpointing strategy).
        method: the fit's :class:`~ember_train.LearningMethod` (rank, gathering, this process's model).
        note: logs a message and shows it on the renderer.
        loader_train: the prepared training loader (its order and global batch are saved).

    Attributes:
        checkpointer: reads and writes the checkpoints; ``None`` without a recorder.
        saved: the epochs whose checkpoints exist (complete ones of an earlier run up to the one resumed, then those
            this fit saved and did not delete).
    """

    def __init__(self, settings: Any, method: Any, note: Callable[..., None], loader_train: Any) -> None:
        self.s = settings
        self.method = method
        self.note = note
        self.checkpointer = (LearnerCheckpointer(settings.recorder, settings.artifact_dir / "checkpoint")
                             if settings.recorder else None)
        self.saving = self.checkpointer if method.is_main else None
        self.saved: set[int] = set()
        self.loader_info = loader_info(loader_train)
        self.global_batch: int | None = getattr(loader_train, "global_batch_size", None)

    # -- resuming --------------------------------------------------------------------------------------
    def restore(self, model: Any, optim: Any, scheduler: Any) -> tuple[Any, Any, Any, int, int]:
        """``(model, optim, scheduler, start_epoch, skip)`` from checkpoint ``settings.checkpoint``: an interrupted
        epoch resumes after its saved iteration (re-counted in items when the global batch changed), a finished one
        at the next epoch.

        Raises:
            LearnerError: no checkpointer is configured.
        """
        k = self.s.checkpoint
        assert k is not None
        checkpointer = self.checkpointer
        if checkpointer is None:
            raise LearnerError(
                f"LearnerBuilder.checkpoint({k}): resuming needs the checkpointer that wrote the files; add "
                ".with_file_checkpointer(recorder) with the same recorder."
            )
        model_rec, optim_rec, sched_rec = checkpointer.restore(k)
        model = model.load_record(model_rec)
        optim = load_state(optim, optim_rec, "optimizer")
        scheduler = load_state(scheduler, sched_rec, "scheduler")
        self.saved = {e for e in complete_checkpoints(checkpointer.directory) if e <= k}
        progress = checkpointer.progress(k)
        if progress is None:
            self.note(f"Resuming from checkpoint {k}: training starts at epoch {k + 1}.")
            return model, optim, scheduler, k + 1, 0
        skip = int(progress["iteration"])
        items, batch, global_batch = progress.get("items"), progress.get("global_batch"), self.global_batch
        if global_batch and batch and items is not None and batch != global_batch:
            # another global batch (another number of ranks): skip the items already trained on
            skip = int(items) // global_batch
            self.note(f"The interrupted run's global batch was {batch}, this run's is {global_batch}: skipping "
                      f"{skip} batches ({skip * global_batch} of the {items} items already trained on).")
        self.note(f"Resuming epoch {k} after iteration {skip} (interrupted checkpoint {k}).")
        return model, optim, scheduler, k, skip

    def resumed_state(self, loader_train: Any) -> dict[str, Any] | None:
        """This process's saved random states of the checkpoint being resumed (``None`` when it has none: a
        checkpoint of an earlier Ember, or another number of ranks; both reported)."""
        k = self.s.checkpoint
        assert k is not None and self.checkpointer is not None
        state = self.checkpointer.state(k)
        check_loader(state.get("loader") or {}, loader_train, lambda text: self.note(text, logging.WARNING))
        ranks = state.get("ranks")
        rank, world = self.method.rank, self.method.world_size
        if not isinstance(ranks, list) or not ranks:
            self.note(f"Checkpoint {k} holds no random states (written by an earlier Ember): random ops (dropout) "
                      "of the resumed run differ from an uninterrupted run's.", logging.WARNING)
            return None
        if len(ranks) != world:
            self.note(f"Checkpoint {k} was written by {len(ranks)} process(es), this run has {world}: the random "
                      "states are not restored, so random ops (dropout) differ from an uninterrupted run's.",
                      logging.WARNING)
            return None
        return ranks[rank] if isinstance(ranks[rank], dict) else None

    # -- saving ----------------------------------------------------------------------------------------
    def run_state(self, mine: dict[str, Any] | None = None) -> dict[str, Any]:
        """The state a checkpoint saves beside the records: every process's random states (this process's now, or
        ``mine``; with several processes gathered from all, a collective every process must call) and the training
        loader's order."""
        if mine is None:
            mine = capture(self.s.device.backend)
        return {"ranks": self.method.gather(mine), "loader": self.loader_info}

    def _save(self, epoch: int, model: Any, optim: Any, scheduler: Any, run_state: dict[str, Any],
              progress: dict[str, Any] | None = None) -> None:
        if self.saving is not None:
            self.saving.save(epoch, self.method.local(model).into_record(),
                             state_record(self.method.local(optim), "optimizer"), state_record(scheduler, "scheduler"),
                             progress=progress, state=run_state)

    def after_epoch(self, store: MetricStore, stopping: bool, model: Any, optim: Any, scheduler: Any,
                    epoch: int) -> None:
        """After epoch ``epoch``: the checkpointing strategy's saves and deletions, and a save when ``stopping`` so
        that the run stays resumable. Nothing without a checkpointer."""
        if self.checkpointer is None:
            return
        actions = self.s.strategy.checkpointing(epoch, store, self.saved)
        if stopping and epoch not in self.saved and not any(a.kind == "save" for a in actions):
            actions.insert(0, CheckpointingAction.save(epoch))  # an interrupted run must stay resumable
        run_state = self.run_state()  # on every process (a collective under DDP), whatever the actions
        for action in actions:
            if action.kind == "save":
                self._save(epoch, model, optim, scheduler, run_state)
                self.saved.add(epoch)
                LOGGER.info("Saved checkpoint %d", epoch)
        for action in actions:
            if action.kind == "delete" and action.epoch != epoch:
                if self.saving is not None:
                    self.saving.delete(action.epoch)
                self.saved.discard(action.epoch)
                LOGGER.info("Deleted checkpoint %d", action.epoch)

    def save_interrupted(self, model: Any, optim: Any, scheduler: Any, epoch: int, iteration: int,
                         after_train: dict[str, Any] | None) -> int | None:
        """Save epoch ``epoch`` interrupted after ``iteration`` (with its progress, so that a resumed run continues
        after it); ``after_train``: the random states as the epoch's training left them when it stopped during
        validation (which then runs again). Returns the epoch to resume from, ``None`` without a checkpointer."""
        if self.checkpointer is None:
            self.note(f"Training interrupted at epoch {epoch}, iteration {iteration}. No checkpointer is configured "
                      "(LearnerBuilder.with_file_checkpointer), so nothing was saved to resume from.")
            return None
        progress: dict[str, Any] = {"epoch": epoch, "iteration": iteration}
        if self.global_batch:
            progress.update(global_batch=self.global_batch, items=iteration * self.global_batch)
        run_state = self.run_state(after_train)  # on every process (a collective under DDP)
        self._save(epoch, model, optim, scheduler, run_state, progress)
        self.note(
            f"Training interrupted at epoch {epoch}, iteration {iteration}; checkpoint saved in "
            f"{self.checkpointer.directory}. Resume with LearnerBuilder({str(self.s.artifact_dir)!r})...."
            f"checkpoint({epoch}).build(...).fit(...): it continues epoch {epoch} after iteration {iteration}."
        )
        return epoch
