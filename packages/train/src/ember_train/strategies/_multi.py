"""``MultiDevice``: data-parallel training on several devices of this process, one compiled program over them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .._errors import LearnerError
from ._base import LearningStrategy
from ._placement import MeshPlacement
from ._single import SingleDeviceMethod

__all__ = ["MultiDevice", "MultiDeviceMethod"]


@dataclass(frozen=True)
class MultiDevice(LearningStrategy):
    """Data-parallel training on several devices of this process (Burn's ``LearningStrategy::MultiDevice``):
    each step's batch is split across the devices and the gradients averaged, inside one program: the backend
    must compile one program over several devices (``Backend.capabilities.spmd_devices``; jax: the step runs
    sharded over the devices, GSPMD all-reduces the gradients).

    Args:
        devices: two or more autodiff devices of one backend.
    """

    devices: tuple[Any, ...] = ()

    def learning_method(self) -> MultiDeviceMethod:
        return MultiDeviceMethod(list(self.devices))

    def training_devices(self) -> list[Any] | None:
        return list(self.devices)

    def check(self, devices: list[Any]) -> None:
        """Raises:
            LearnerError: fewer than two devices, devices of several backends, or a backend that cannot compile one
                program over several devices (``capabilities.spmd_devices`` false).
        """
        if len(devices) < 2:
            raise LearnerError(f"MultiDevice: expected two or more devices, got {len(devices)}.")
        if any(d.backend is not devices[0].backend for d in devices):
            raise LearnerError(f"MultiDevice: the devices must be of one autodiff backend, got {devices!r}.")
        backend = devices[0].backend
        if not backend.capabilities.spmd_devices:
            raise LearnerError(
                f"MultiDevice: training on several devices of one process needs a backend that compiles one program "
                f"over them (capabilities.spmd_devices: jax); the {devices[0].inner.backend.name!r} backend cannot. "
                "Start one process per device with the DistributedDataParallel strategy (python -m ember_train.launch "
                "--nproc N train.py)."
            )


class MultiDeviceMethod(SingleDeviceMethod):
    """The model and optimizer replicated on the devices' mesh (``Backend.device_mesh``), each batch split along dim
    0 over them (:class:`~ember_train.strategies._placement.MeshPlacement`); the compiled step runs over all of them.
    The loader's batch is the global batch. Everything else is one process's (:class:`SingleDeviceMethod`)."""

    def __init__(self, devices: list[Any]) -> None:
        super().__init__()
        self.devices = devices

    def start(self, device: Any) -> None:
        MultiDevice(tuple(self.devices)).check(self.devices)
        super().start(device)
        self.placement = MeshPlacement(device.backend.device_mesh(self.devices))
