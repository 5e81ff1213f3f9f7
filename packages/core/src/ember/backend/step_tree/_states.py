"""Optimizer states made ready for a compiled step: Python numbers and loaded ``TensorData`` become tensors."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._kind import Bool, Float, Int
from ..._tensor_data import TensorData
from ...optim import Optimizer
from ...tensor import Tensor
from .._device import Device
from ._flat import Flat

__all__ = ["normalize_states", "number_tensor"]


def normalize_states(o: Optimizer, fl: Flat) -> None:
    """Replace, in ``o``'s state, Python ints/floats by Int/Float ``[1]`` tensors and loaded ``TensorData`` by
    tensors (what a compiled step needs: numbers would be static, compiling again at every step). The device is
    that of the state's other tensors, else the inner device of the first tensor of the call, else the tree's
    ``default_device()``. Equal numbers on one device become one tensor shared by the states (the step counters of
    all parameters: one ``[1]`` array, incremented once per step, see ``ember.optim._scalar.shared``). Runs once
    after an eager step or ``load_record``; later states already hold tensors. The tree's ``place_states`` hook,
    when set, places the new tensors (jax: over the devices the call spans)."""
    states = o._states
    changed = None
    made: dict[Any, Tensor] = {}
    for pid, st in states.items():
        if _needs_normalizing(st):
            if changed is None:
                changed = dict(states)
            changed[pid] = _normalized(st, _state_device(st) or _default_device(fl), made)
    if changed is not None:
        place = fl.tree.place_states
        o._states = changed if place is None else place(o, fl, changed)


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
    return fl.tree.default_device()  # type: ignore[no-any-return]


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
