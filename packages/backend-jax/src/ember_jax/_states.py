"""Optimizer states made ready for a compiled step: Python numbers and loaded ``TensorData`` become tensors."""

from __future__ import annotations

from typing import Any

import numpy as np

from ember import Float, Int, Tensor
from ember._data import TensorData
from ember.backend import Device
from ember.optim import Optimizer

from ._tree import Flat

__all__ = ["normalize_states"]


def normalize_states(o: Optimizer, fl: Flat) -> None:
    """Replace, in ``o``'s state, Python ints/floats by Int/Float ``[1]`` tensors and loaded ``TensorData`` by
    tensors (what a compiled step needs: numbers would be static, recompiling at every step). The device is
    that of the state's other tensors (else that of the first jax tensor of the call, else the jax backend's
    default device). Runs once after an eager step or ``load_record``; later states already hold tensors."""
    states = o._states
    changed = None
    for pid, st in states.items():
        if _needs_normalizing(st):
            if changed is None:
                changed = dict(states)
            changed[pid] = _normalized(st, _state_device(st) or _default_device(fl))
    if changed is not None:
        o._states = changed


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
    import ember

    return ember.backend("jax").device()


def _normalized(x: Any, dev: Device) -> Any:
    c = x.__class__
    if c is int:
        return Tensor.from_data(np.asarray([x], np.int64), dev, Int)
    if c is float:
        return Tensor.from_data(np.asarray([x], np.float64), dev, Float)
    if c is TensorData:
        return Tensor.from_data(x, dev, Float)
    if c is dict:
        return {k: _normalized(v, dev) for k, v in x.items()}
    if c is list or c is tuple:
        return c(_normalized(v, dev) for v in x)
    return x


