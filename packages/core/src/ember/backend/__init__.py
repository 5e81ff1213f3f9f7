"""The backend contract, devices and the plugin registry (ARCHITECTURE.md, "The backend contract")."""

from ._base import Backend
from ._capabilities import BackendCapabilities
from ._collectives import Collectives, Work
from ._device import Device
from ._hookspec import BackendSpec, hookimpl, hookspec
from ._mesh import DeviceMesh
from ._registry import BackendInfo, backend, backends, device, register

__all__ = [
    "Backend",
    "BackendCapabilities",
    "BackendInfo",
    "BackendSpec",
    "Collectives",
    "Work",
    "Device",
    "DeviceMesh",
    "backend",
    "backends",
    "device",
    "hookimpl",
    "hookspec",
    "register",
]

import sys as _sys
import types as _types


class _CallableModule(_types.ModuleType):
    """Lets ``ember.backend("numpy")`` call :func:`backend` while ``ember.backend.Backend`` stays
    the contract's namespace."""

    def __call__(self, name: str | None = None, **options: object) -> Backend:
        return backend(name, **options)


_sys.modules[__name__].__class__ = _CallableModule
