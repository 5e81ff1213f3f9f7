"""``SingleDevice``: train on one device of this process (the default strategy), and its method, the base of the
others."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ._base import LearningMethod, LearningStrategy
from ._placement import Placement

__all__ = ["SingleDevice", "SingleDeviceMethod"]


@dataclass(frozen=True)
class SingleDevice(LearningStrategy):
    """Train on one device of this process (Burn's ``LearningStrategy::SingleDevice``; the default).

    Args:
        device: the training device (an autodiff device); ``None`` takes ``LearnerBuilder.devices`` or the
            model's device.
    """

    device: Any = None

    def learning_method(self) -> SingleDeviceMethod:
        return SingleDeviceMethod()

    def training_devices(self) -> list[Any] | None:
        return None if self.device is None else [self.device]


class SingleDeviceMethod(LearningMethod):
    """One process, one device: every :class:`~ember_train.strategies.LearningMethod` call for that case, where
    most are the identity. Other strategies subclass it and override what they do differently.

    Attributes:
        device: the training device (set by :meth:`start`).
        placement: where a step's inputs go (:class:`~ember_train.strategies._placement.Placement`: as they are).
    """

    def __init__(self) -> None:
        self.device: Any = None
        self.placement = Placement()

    def start(self, device: Any) -> None:
        self.device = device

    def prepare_loaders(self, train: Any, valid: Any) -> tuple[Any, Any]:
        """Training batches made on the training device, validation batches on its inner (non-autodiff) device."""
        if hasattr(train, "to_device"):
            train = train.to_device(self.device)
        if valid is not None and hasattr(valid, "to_device"):
            valid = valid.to_device(self.device.inner)
        return train, valid

    def prepare_model(self, model: Any) -> Any:
        return model

    def plan_step(self, compile: bool, accumulating: bool, train: Any, valid: Any) -> bool:
        return False  # one step: train (or grad and update for accumulation, which the Learner asks for itself)

    def prepare(self, model: Any, optim: Any, steps: Any) -> tuple[Any, Any]:
        model, optim = self.placement.replicate(model), self.placement.replicate(optim)
        steps.place = self.placement.replicate
        return model, optim

    def place(self, batch: Any) -> Any:
        return self.placement.place_batch(batch)

    def train_step(self, steps: Any, model: Any, optim: Any, batch: Any, lr: Any,
                   stop: Callable[[], bool]) -> tuple[Any, Any]:
        return steps.train(model, optim, batch, lr)  # type: ignore[no-any-return]

    def reduce_grads(self, grads: Any) -> Any:
        return grads

    def stop_after_step(self, stop: Callable[[], bool]) -> bool:
        return stop()

    def agree(self, flag: bool) -> bool:
        return flag

    def from_main(self, flag: bool) -> bool:
        return flag

    def local(self, obj: Any) -> Any:
        return self.placement.local(obj)

    def local_item(self, item: Any) -> Any:
        return self.placement.local_item(item)

    def end_epoch(self, model: Any) -> Any:
        return model

    def gather(self, state: dict[str, Any]) -> list[dict[str, Any]]:
        return [state]

    def finish(self, model: Any, steps: Any) -> Any:
        return model
