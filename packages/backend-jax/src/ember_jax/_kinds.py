"""What the values of a compiled step's arguments are: node tags of the structure, the kind of each type, static
values as cache keys, and the jax backend of a device.

The tables here are shared by the walks over arguments (:mod:`._tree`), the structure scan (:mod:`._scan`), the
rebuilding while tracing (:mod:`._rebuild`) and the results (:mod:`._out`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import numpy as np

from ember import Tensor
from ember.autodiff import Gradients
from ember.backend import Device
from ember.module import Module, Param, RunningState
from ember.optim import GradientsParams, Optimizer

from ._array_backend import JaxArrayBackend

__all__ = [
    "TENSOR", "ALIAS", "REF", "PARAM", "RSTATE", "MODULE", "OPTIM", "GRADS", "SEQ", "DICT", "DCLASS", "STATIC",
    "STATIC_ID", "ARRAY", "NONE", "Id", "ForeignTensor", "device_info", "static_key", "dc_fields", "kind_of", "KINDS",
]

# node tags (first item of every structure tuple)
TENSOR, ALIAS, REF, PARAM, RSTATE, MODULE, OPTIM, GRADS, SEQ, DICT, DCLASS, STATIC, STATIC_ID, ARRAY, NONE = range(15)

class Id:
    """A static value compared by identity (unhashable plain values: the cache key keeps it alive)."""

    __slots__ = ("obj",)

    def __init__(self, obj: Any) -> None:
        self.obj = obj

    def __hash__(self) -> int:
        return id(self.obj)

    def __eq__(self, other: object) -> bool:
        return other.__class__ is Id and other.obj is self.obj  # type: ignore[attr-defined]

    def __repr__(self) -> str:
        return f"Id({type(self.obj).__name__} at {id(self.obj):#x})"


# ---------------------------------------------------------------------- devices
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


def static_key(x: Any) -> Any:
    """The cache-key form of a plain value: itself (with its type, so ``1``, ``1.0`` and ``True`` differ) when
    hashable (a float by its bits), a list as a tuple, else its identity."""
    try:
        hash(x)
    except TypeError:
        if x.__class__ is list:
            return (SEQ, list, tuple(static_key(v) for v in x))
        return (STATIC_ID, Id(x))
    if x.__class__ is float:  # by its bits: 0.0 and -0.0 differ, a NaN equals itself
        return (STATIC, float, x.hex())
    return (STATIC, x.__class__, x)


_DC_FIELDS: dict[type, tuple[str, ...]] = {}


def dc_fields(cls: type) -> tuple[str, ...]:
    names = _DC_FIELDS.get(cls)
    if names is None:
        names = _DC_FIELDS[cls] = tuple(f.name for f in dataclasses.fields(cls))
    return names


# ---------------------------------------------------------------------- classification of types
#: what a type is, for the walks here and in :mod:`._rebuild` (one classification, several handler tables)
KINDS: dict[type, str] = {}


def kind_of(cls: type) -> str:
    """The kind of a type: ``tensor``, ``param``, ``state``, ``module``, ``optim``, ``grads``, ``gradients``,
    ``none``, ``plain``, ``seq``, ``dict``, ``array``, ``dclass`` or ``static`` (cached)."""
    k = KINDS.get(cls)
    if k is not None:
        return k
    if issubclass(cls, Tensor):
        k = "tensor"
    elif issubclass(cls, Param):
        k = "param"
    elif issubclass(cls, RunningState):
        k = "state"
    elif issubclass(cls, Module):
        k = "module"
    elif issubclass(cls, Optimizer):
        k = "optim"
    elif issubclass(cls, GradientsParams):
        k = "grads"
    elif issubclass(cls, Gradients):
        k = "gradients"
    elif cls is type(None):
        k = "none"
    elif cls in (int, float, bool, str, bytes, complex):
        k = "plain"
    elif issubclass(cls, (list, tuple)):
        k = "seq"
    elif cls is dict or (issubclass(cls, dict) and _rebuildable_dict(cls)):
        k = "dict"
    elif issubclass(cls, (jax.Array, np.ndarray)):
        k = "array"
    elif dataclasses.is_dataclass(cls):
        k = "dclass"
    else:
        k = "static"
    KINDS[cls] = k
    return k


def _rebuildable_dict(cls: type) -> bool:
    try:
        cls([("k", 1)])  # type: ignore[call-arg]
    except Exception:
        return False
    return True
