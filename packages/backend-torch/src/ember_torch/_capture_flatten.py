"""The arguments of a captured step (:func:`ember_torch.compile`) flattened into torch tensors and structure.

:func:`flatten` (every call) gives the torch tensors the graph takes (``Flat.leaves``, one per distinct array), the
caller's objects with an identity by number (``Flat.objs``) and a hashable *structure*, the cache key: classes,
devices, kinds, shapes, dtypes, parameter ids, optimizer-state layout and the values of plain arguments. The walk
is by type (not annotation); :func:`kind_of` names the kind of a class for every walk (this one, the rebuild and
the results' walk in :mod:`._capture_tree`).

=======================  ==============================================================================
``Tensor``               one leaf (the inner torch tensor of a Float tensor on an ``Autodiff(torch)`` device);
                         the structure keeps its device, kind, tracking flag, shape and dtype.
``Param``                its tensor; the ``ParamId`` and ``require_grad`` are static.
``RunningState``         its tensor; a new value set inside the step is written back to the caller's cell.
``Module``               its fields (``__ember_fields__``); the class is static.
``Optimizer``            its per-parameter ``_states`` (a Python int/float in them becomes an Int/Float ``[1]``
                         tensor first, so that Adam's step count is not a static value); other attributes static.
``GradientsParams``      its tensors; the ids are static.
dataclass instances      their fields (batches, outputs); list, tuple, namedtuple, dict: their items.
``torch.Tensor``         a raw leaf.
anything else            static: hashed by value (a float by its bits), or by identity when unhashable.
=======================  ==============================================================================

An object met twice is walked once (later: a back-reference), so a shared ``Param`` stays one leaf and one object.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from ember import Bool, Float, Int, Tensor, TensorData
from ember.backend.contract import AutodiffPrimitive as AP
from ember.module import Module, Param, RunningState
from ember.optim import GradientsParams, Optimizer

from ._float import TorchFloatOps

__all__ = ["Flat", "flatten", "kind_of", "static_key", "ForeignTensor"]

TENSOR, ALIAS, REF, PARAM, RSTATE, MODULE, OPTIM, GRADS, SEQ, DICT, DCLASS, STATIC, RAW = range(13)


class ForeignTensor(Exception):
    """A tensor of another backend among the arguments (the caller turns it into a ``BackendError``)."""

    def __init__(self, obj: Any) -> None:
        self.obj = obj


class Flat:
    """One call's flattened arguments: leaves (torch tensors), the caller's objects by number, and the memos
    (object id -> number, torch tensor id -> leaf index)."""

    __slots__ = ("leaves", "objs", "memo", "pmemo")

    def __init__(self) -> None:
        self.leaves: list[Any] = []
        self.objs: list[Any] = []
        self.memo: dict[int, int] = {}
        self.pmemo: dict[int, int] = {}


# ---------------------------------------------------------------------- kinds of types
_KINDS: dict[type, str] = {}


def kind_of(cls: type) -> str:
    """``tensor``, ``param``, ``state``, ``module``, ``optim``, ``grads``, ``gradients``, ``plain``, ``seq``,
    ``dict``, ``raw``, ``dclass`` or ``static`` (cached per class)."""
    k = _KINDS.get(cls)
    if k is not None:
        return k
    from ember.autodiff import Gradients

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
    elif cls is type(None) or cls in (int, float, bool, str, bytes, complex):
        k = "plain"
    elif issubclass(cls, (list, tuple)):
        k = "seq"
    elif cls is dict:
        k = "dict"
    elif issubclass(cls, torch.Tensor):
        k = "raw"
    elif dataclasses.is_dataclass(cls):
        k = "dclass"
    else:
        k = "static"
    _KINDS[cls] = k
    return k


def _dc_fields(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls))  # type: ignore[arg-type]


def static_key(x: Any) -> Any:
    """A hashable key of a plain value: itself (a float by its bits: 0.0 and -0.0 differ), else its identity."""
    if x.__class__ is float:
        return (float, x.hex())
    try:
        hash(x)
    except TypeError:
        return (id, id(x))
    return x


# ---------------------------------------------------------------------- flatten (every call)
_TORCH_DEVICES: dict[Any, bool] = {}


def _is_torch(dev: Any) -> bool:
    ok = _TORCH_DEVICES.get(dev)
    if ok is None:
        # the torch backend's kernels (TorchFloatOps sits below _backend.py, which imports this module)
        ok = _TORCH_DEVICES[dev] = isinstance(dev.inner.backend, TorchFloatOps)
    return ok


def flatten(fl: Flat, x: Any) -> Any:
    """The structure of ``x``; its leaves are appended to ``fl.leaves`` and its objects to ``fl.objs``."""
    return _F[kind_of(x.__class__)](fl, x)


def _enter(fl: Flat, x: Any) -> Any:
    n = fl.memo.get(id(x))
    if n is not None:
        return (REF, n)
    fl.memo[id(x)] = len(fl.objs)
    fl.objs.append(x)
    return None


def _f_tensor(fl: Flat, t: Any) -> Any:
    ref = _enter(fl, t)
    if ref is not None:
        return ref
    if not _is_torch(t.device):
        raise ForeignTensor(t)
    p = t.primitive
    flag = 0
    if p.__class__ is AP:
        flag = 1 if p.node is None else 2
        p = p.p
    return _leaf(fl, p, (t.device, t.kind, flag))


def _leaf(fl: Flat, p: Any, head: tuple[Any, ...]) -> Any:
    j = fl.pmemo.get(id(p))
    if j is not None:
        return (ALIAS, *head, j)
    fl.pmemo[id(p)] = len(fl.leaves)
    fl.leaves.append(p)
    return (TENSOR, *head, tuple(p.shape), p.dtype, p.device)


def _f_param(fl: Flat, x: Param) -> Any:
    ref = _enter(fl, x)
    return ref if ref is not None else (PARAM, x.id._value, x.require_grad, _f_tensor(fl, x._tensor))


def _f_state(fl: Flat, x: RunningState) -> Any:
    ref = _enter(fl, x)
    return ref if ref is not None else (RSTATE, x.id._value, _f_tensor(fl, x._tensor))


def _f_module(fl: Flat, m: Any) -> Any:
    ref = _enter(fl, m)
    if ref is not None:
        return ref
    cls = m.__class__
    return (MODULE, cls, tuple([flatten(fl, getattr(m, f)) for f in cls.__ember_fields__]))


def _f_optim(fl: Flat, o: Optimizer) -> Any:
    ref = _enter(fl, o)
    if ref is not None:
        return ref
    if any(_has_number(st) for st in o._states.values()):
        o._states = _tensor_states(o._states, fl)
    attrs = tuple([(a, static_key(v)) for a, v in o.__dict__.items() if a != "_states"])
    states = tuple([(pid._value, flatten(fl, st)) for pid, st in o._states.items()])
    return (OPTIM, o.__class__, attrs, states)


def _f_grads(fl: Flat, g: GradientsParams) -> Any:
    ref = _enter(fl, g)
    return ref if ref is not None else (GRADS, tuple([(pid._value, _f_tensor(fl, t)) for pid, t in g._grads.items()]))


def _f_gradients(fl: Flat, g: Any) -> Any:
    raise TypeError(
        "ember_torch.compile: a Gradients (the result of loss.backward()) cannot enter a compiled step: it refers "
        "to the graph of the eager computation that made it. Convert it first (GradientsParams.from_grads(grads, "
        "model)) or compute the loss inside the step."
    )


def _f_seq(fl: Flat, x: Any) -> Any:
    return (SEQ, x.__class__, tuple([flatten(fl, v) for v in x]))


def _f_dict(fl: Flat, x: dict[Any, Any]) -> Any:
    return (DICT, tuple([(static_key(k), flatten(fl, v)) for k, v in x.items()]))


def _f_dclass(fl: Flat, x: Any) -> Any:
    cls = x.__class__
    return (DCLASS, cls, tuple([flatten(fl, getattr(x, f)) for f in _dc_fields(cls)]))


def _f_raw(fl: Flat, x: Any) -> Any:
    return _leaf(fl, x, (RAW,))


def _f_static(fl: Flat, x: Any) -> Any:
    return (STATIC, static_key(x))


_F: dict[str, Callable[[Flat, Any], Any]] = {
    "tensor": _f_tensor, "param": _f_param, "state": _f_state, "module": _f_module, "optim": _f_optim,
    "grads": _f_grads, "gradients": _f_gradients, "plain": _f_static, "seq": _f_seq, "dict": _f_dict,
    "raw": _f_raw, "dclass": _f_dclass, "static": _f_static,
}


# ---------------------------------------------------------------------- optimizer states with numbers
def _has_number(x: Any) -> bool:
    c = x.__class__
    if c is int or c is float or c is TensorData:
        return True
    if c is dict:
        return any(_has_number(v) for v in x.values())
    if c is list or c is tuple:
        return any(_has_number(v) for v in x)
    return False


def _tensor_states(states: dict[Any, Any], fl: Flat) -> dict[Any, Any]:
    """``states`` with Python ints/floats as Int/Float ``[1]`` tensors and loaded ``TensorData`` as tensors, on the
    device of the first tensor of the call (a captured step needs them as graph inputs: numbers would be static
    and capture again at every step). Equal numbers share one tensor (Adam's step counter of every parameter)."""
    dev = next((t.device.inner for t in fl.objs if isinstance(t, Tensor)), None)
    if dev is None:
        import ember

        dev = ember.backend("torch").device()
    made: dict[Any, Tensor] = {}

    def conv(x: Any) -> Any:
        c = x.__class__
        if c is int or c is float:
            key = (c, x)
            if key not in made:
                data = np.asarray([x], np.int64 if c is int else np.float64)
                made[key] = Tensor.from_data(data, dev, Int if c is int else Float)
            return made[key]
        if c is TensorData:
            return Tensor.from_data(x, dev, Float if x.dtype.is_float else Int if x.dtype.is_int else Bool)
        if c is dict:
            return {k: conv(v) for k, v in x.items()}
        if c is list or c is tuple:
            return c(conv(v) for v in x)
        return x

    return {pid: conv(st) for pid, st in states.items()}
