"""``LearningStrategy`` and ``LearningMethod``: where the Learner trains, and the calls its loop makes to do so.

After Burn's ``burn-train``: a ``LearningStrategy`` (Burn's enum of the same name) says where training runs, one
device, several devices of one process, or one process per device; its :meth:`LearningStrategy.learning_method`
makes, for each ``Learner.fit``, the :class:`LearningMethod` (Burn's ``LearningMethod`` trait, with its
``prepare_dataloaders`` and ``prepare_model``) whose methods the Learner's loop calls at fixed points. The loop itself
is the same for every strategy: it never asks which strategy it runs, and a strategy asks the backend what it can do
(``Backend.capabilities``), never its name.

A new strategy subclasses :class:`LearningStrategy` (a frozen description, safe to reuse across fits) and returns
a method object, usually a subclass of :class:`~ember_train.strategies.SingleDeviceMethod` overriding what it does
differently (``docs/training.md``, "Learning strategies").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._errors import LearnerError

__all__ = ["LearningStrategy", "LearningMethod"]


class LearningStrategy:
    """Base class of the learning strategies (Burn's ``LearningStrategy``): :class:`SingleDevice`,
    :class:`MultiDevice`, :class:`DistributedDataParallel`, or your own.

    A subclass implements :meth:`learning_method`; :meth:`training_devices` and :meth:`check` have defaults for a
    strategy that trains on one device of this process.
    """

    def learning_method(self) -> LearningMethod:
        """A new :class:`LearningMethod` for one ``Learner.fit`` (it may hold that fit's state: a process group, a
        device mesh).

        Raises:
            NotImplementedError: the subclass does not say how it trains.
        """
        raise NotImplementedError(
            f"{type(self).__name__}.learning_method() must return the LearningMethod the Learner's loop calls "
            "(e.g. a subclass of ember_train.strategies.SingleDeviceMethod)."
        )

    def training_devices(self) -> list[Any] | None:
        """The devices this strategy names (``LearnerBuilder.build`` trains on the first); ``None`` (the default):
        those of ``LearnerBuilder.devices``, else the model's."""
        return None

    def check(self, devices: list[Any]) -> None:
        """Refuse, when the Learner is built, ``devices`` (the training devices, the first the training device) that
        this strategy cannot train on. The default accepts one device.

        Raises:
            LearnerError: more than one device.
        """
        if len(devices) > 1:
            raise LearnerError(
                f"LearnerBuilder.build: {type(self).__name__} trains on one device of this process, got "
                f"{len(devices)} devices."
            )


class LearningMethod:
    """What the Learner's loop calls, in this order, during one ``fit`` (every method is called on every process of
    a multi-process run, at the same point: the collectives' rule). Subclass
    :class:`~ember_train.strategies.SingleDeviceMethod`, which implements all of them for one device.

    Attributes:
        rank: this process's rank (0 in one process).
        world_size: the number of processes (1 in one process).
    """

    rank: int = 0
    world_size: int = 1

    # -- the run ---------------------------------------------------------------------------------------
    def start(self, device: Any) -> None:
        """Begin the fit on the training ``device`` (an autodiff device): join a process group, make a mesh..."""
        raise NotImplementedError

    @property
    def is_main(self) -> bool:
        """Whether this process writes the files (checkpoints, metric logs, summary, plots) and renders."""
        return self.rank == 0

    def log_stats(self) -> None:
        """At the fit's end (also after an error), while the experiment log is open: log what the strategy counted."""

    def close(self) -> None:
        """After the fit (also after an error): free what :meth:`start` took (leave the process group)."""

    # -- preparing -------------------------------------------------------------------------------------
    def prepare_loaders(self, train: Any, valid: Any) -> tuple[Any, Any]:
        """The loaders as this process iterates them (Burn's ``prepare_dataloaders``): sharded by rank, batches made
        on the training device (``to_device``); ``valid`` may be ``None``."""
        raise NotImplementedError

    def metric_sum(self) -> Callable[[list[float]], list[float]] | None:
        """How the metrics' host numbers are summed over the processes before logging (``None``: one process)."""
        return None

    def prepare_model(self, model: Any) -> Any:
        """The model before training, after a checkpoint was restored (Burn's ``prepare_model``): e.g. rank 0's
        parameters on every rank."""
        raise NotImplementedError

    def plan_step(self, compile: bool, accumulating: bool, train: Any, valid: Any) -> bool:
        """Choose how the training step runs, given whether steps are compiled (``LearnerBuilder.compile``), whether
        gradients are accumulated, and the prepared loaders. Returns whether the step must be split at the
        gradients (``CompiledSteps.grad`` then ``CompiledSteps.update``, with :meth:`reduce_grads` between)."""
        raise NotImplementedError

    def prepare(self, model: Any, optim: Any, steps: Any) -> tuple[Any, Any]:
        """The model and optimizer placed where the steps run (e.g. replicated over a mesh), and ``steps.place`` set
        to put the steps' other inputs (the learning-rate tensor) there too."""
        raise NotImplementedError

    @property
    def seed_rank(self) -> int:
        """The rank mixed into each epoch's seed (processes that train on different samples draw different random
        numbers; one program over all of them draws as one process: 0)."""
        return 0

    # -- the epoch -------------------------------------------------------------------------------------
    def place(self, batch: Any) -> Any:
        """A training or validation ``batch`` where the step takes it (e.g. split over a mesh)."""
        raise NotImplementedError

    def train_step(self, steps: Any, model: Any, optim: Any, batch: Any, lr: Any,
                   stop: Callable[[], bool]) -> tuple[Any, Any]:
        """One training step with the optimizer update: ``(model, item)``. ``stop`` reads this process's
        interrupter; a strategy may send it with the step's own collectives (see :meth:`stop_after_step`)."""
        raise NotImplementedError

    def reduce_grads(self, grads: Any) -> Any:
        """Accumulated gradients (``GradientsParams``) before the optimizer update: e.g. averaged over the ranks."""
        raise NotImplementedError

    def stop_after_step(self, stop: Callable[[], bool]) -> bool:
        """After a training step and its metrics: whether to stop now, the same answer on every process."""
        raise NotImplementedError

    def agree(self, flag: bool) -> bool:
        """``flag`` set on any process (every process gets the same answer)."""
        raise NotImplementedError

    def from_main(self, flag: bool) -> bool:
        """Rank 0's ``flag`` on every process."""
        raise NotImplementedError

    def local(self, obj: Any) -> Any:
        """``obj`` (the model, the optimizer) as this process holds it, e.g. to save a checkpoint."""
        raise NotImplementedError

    def local_item(self, item: Any) -> Any:
        """A step's ``item`` with this process's rows of the last placed batch, for the metrics."""
        raise NotImplementedError

    def end_epoch(self, model: Any) -> Any:
        """The model after an epoch's training, before validation and checkpoints (e.g. running states averaged)."""
        raise NotImplementedError

    def gather(self, state: dict[str, Any]) -> list[dict[str, Any]]:
        """Every process's ``state`` (JSON data), in rank order, for a checkpoint's run state."""
        raise NotImplementedError

    def finish(self, model: Any, steps: Any) -> Any:
        """The trained model as this process returns it from ``fit`` (and the backend's state put back)."""
        raise NotImplementedError
