"""Optimizer states made ready for a compiled step: Python numbers and loaded ``TensorData`` become tensors."""

from __future__ import annotations

from typing import Any

import jax
import numpy as np

import ember
from ember import Bool, Float, Int, Tensor, TensorData
from ember.backend import Device
from ember.optim import Optimizer

from ._flat import Flat
from ._sharding import _place, put

__all__ = ["normalize_states", "number_tensor"]


def normalize_states(o: Optimizer, fl: Flat) -> None:
    """Replace, in ``o``'s state, Python ints/floats by Int/Float ``[1]`` tensors and loaded ``TensorData`` by
    tensors (what a compiled step needs: numbers would be static, recompiling at every step). The device is
    that of the state's other tensors (else that of the first jax tensor of the call, else the jax backend's
    default device). Equal numbers on one device become one tensor, shared by the states (the step counters of
    all parameters: one ``[1]`` array, incremented once per step, see :func:`ember.optim._scalar.shared`).
    Runs once after an eager step or ``load_record``; later states already hold tensors.

    When the call's arrays are spread over several devices (:func:`ember_jax.replicate`), the new tensors are
    replicated over the same devices, as the step requires of every input."""
    states = o._states
    changed = None
    made: dict[Any, Tensor] = {}
    for pid, st in states.items():
        if _needs_normalizing(st):
            if changed is None:
                changed = dict(states)
            changed[pid] = _normalized(st, _state_device(st) or _default_device(fl), made)
    if changed is not None:
        spread = _spread(fl, states)
        if spread is not None:
            placed = _place(list(changed.values()),  # a list: jax sorts dict keys, and ParamIds do not order
                            lambda a: a if len(a.sharding.device_set) > 1 else put(a, spread))
            changed = dict(zip(changed, placed))
        o._states = changed


def _spread(fl: Flat, states: dict[Any, Any]) -> Any:
    """The replicated sharding over the mesh of the first array of the call (or of the states) that lives on
    several devices, else ``None``."""
    from jax.sharding import NamedSharding, PartitionSpec

    arrays = list(fl.leaves) + jax.tree_util.tree_leaves(list(states.values()))
    for a in arrays:
        sh = getattr(a, "sharding", None)
        if sh is not None and len(sh.device_set) > 1 and hasattr(sh, "mesh"):
            return NamedSharding(sh.mesh, PartitionSpec())
    return None


def _needs_normalizing(x: Any) -> bool:
    c = x.__class__
    if c is int or c is float or c is TensorData:
        return True
    if c is dict:
        return any(_needs_normalizing(v) for v in x.values())
    if c is list or c is tuple:
        return any(_needs_normalizing(v) for v in x)
    return False


def _state_device(x: Any) -> Device | None:
    if isinstance(x, Tensor):
        return x.device
    if isinstance(x, dict):
        x = list(x.values())
    if isinstance(x, (list, tuple)):
        for v in x:
            d = _state_device(v)
            if d is not None:
                return d
    return None


def _default_device(fl: Flat) -> Device:
    for t in fl.objs:
        if isinstance(t, Tensor):
            return t.device.inner
    return ember.backend("jax").device()


def _normalized(x: Any, dev: Device, made: dict[Any, Tensor]) -> Any:
    c = x.__class__
    if c is int or c is float:
        key = (c, x, dev)
        t = made.get(key)
        if t is None:
            t = made[key] = number_tensor(x, dev)
        return t
    if c is TensorData:
        if x.shape == (1,) and x.dtype.is_int:  # a loaded counter: shared like the numbers
            key = (int, int(x.to_numpy()[0]), dev)
            t = made.get(key)
            if t is None:
                t = made[key] = number_tensor(key[1], dev)
            return t
        return Tensor.from_data(x, dev, Float if x.dtype.is_float else Int if x.dtype.is_int else Bool)
    if c is dict:
        return {k: _normalized(v, dev, made) for k, v in x.items()}
    if c is list or c is tuple:
        return c(_normalized(v, dev, made) for v in x)
    return x


def number_tensor(x: int | float, dev: Device) -> Tensor:
    """A Python int/float as an Int/Float tensor of shape ``[1]`` on ``dev`` (int64/float64 data: the backend
    stores it in its default dtype of the kind)."""
    if x.__class__ is int:
        return Tensor.from_data(np.asarray([x], np.int64), dev, Int)
    return Tensor.from_data(np.asarray([x], np.float64), dev, Float)


