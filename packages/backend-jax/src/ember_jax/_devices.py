"""The jax backend of an Ember device, found once per device: what the structure scan (:mod:`._scan`) and the
results (:mod:`._out`) check tensors against."""

from __future__ import annotations

from typing import Any

from ember.backend import Device

from ._array_backend import JaxArrayBackend

__all__ = ["ForeignTensor", "device_info"]

#: Device -> (is an Autodiff(jax) device, its jax backend); filled on first use of a device
_DEVICES: dict[Device, tuple[bool, Any]] = {}


class ForeignTensor(Exception):
    """Internal: a tensor of another backend was met (the caller turns it into a BackendError with its path)."""

    def __init__(self, obj: Any) -> None:
        self.obj = obj


def device_info(dev: Device, obj: Any = None) -> tuple[bool, Any]:
    """``(autodiff, jax backend)`` of an Ember device.

    Raises:
        ForeignTensor: the device does not belong to the jax backend (or ``Autodiff`` of it).
    """
    info = _DEVICES.get(dev)
    if info is None:
        inner = dev.inner.backend
        if not isinstance(inner, JaxArrayBackend):
            raise ForeignTensor(obj)
        info = _DEVICES[dev] = (bool(dev.backend.is_autodiff), inner)
    return info
