"""The arguments and results of a captured step (:func:`ember_torch.compile`) as torch tensors and structure.

Three walks over trees of Ember objects, all by type (not annotation):

- :func:`flatten` (every call): the torch tensors the graph takes (``Flat.leaves``, one per distinct array), the
  caller's objects with an identity by number (``Flat.objs``) and a hashable *structure*, the cache key: classes,
  devices, kinds, shapes, dtypes, parameter ids, optimizer-state layout and the values of plain arguments;
- :func:`rebuild` (once per capture): the same objects in the same order, holding ``make_fx``'s proxy tensors;
  running-state cells and optimizers are stand-ins whose new state the capture reads afterwards;
- :class:`OutWalk` (once per capture): the step's results turned into graph outputs and a *builder*, a small tree
  of nodes that :func:`build` runs after each replay to make the caller's results around the graph's outputs.

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
from ember.backend.contract import rebuild_module
from ember.module import Module, Param, RunningState
from ember.optim import GradientsParams, Optimizer

from ._float import TorchFloatOps

__all__ = ["Flat", "flatten", "rebuild", "Rebuild", "OutWalk", "build", "ForeignTensor"]

TENSOR, ALIAS, REF, PARAM, RSTATE, MODULE, OPTIM, GRADS, SEQ, DICT, DCLASS, STATIC, RAW = range(13)
_new = object.__new__
_set = object.__setattr__


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


# ---------------------------------------------------------------------- rebuild (at capture)
class Rebuild:
    """The arguments rebuilt around the proxies: ``inner[n]`` is the object the step receives for the caller's
    ``objs[n]``; ``cells`` and ``optims`` are the stand-ins whose state is read after the step."""

    def __init__(self, proxies: Any, fl: Flat) -> None:
        self.proxies = proxies
        self.memo = fl.memo
        self.pmemo = fl.pmemo
        self.inner: list[Any] = [None] * len(fl.objs)
        self.cells: list[tuple[int, RunningState, Any]] = []
        self.optims: list[tuple[int, Any]] = []


def rebuild(rb: Rebuild, x: Any) -> Any:
    """The object the step receives for ``x``: same structure, proxies in place of the leaves."""
    return _B[kind_of(x.__class__)](rb, x)


def _b_tensor(rb: Rebuild, t: Any) -> Any:
    n = rb.memo[id(t)]
    done = rb.inner[n]
    if done is not None:
        return done
    p = t.primitive
    tracked = False
    if p.__class__ is AP:
        tracked = p.node is not None
        p = p.p
    leaf = rb.proxies[rb.pmemo[id(p)]]
    dev, kind = t.device, t.kind
    if dev.backend.is_autodiff and kind is Float:
        out = Tensor.from_inner(Tensor(leaf, dev.inner, Float), dev)
        if tracked:
            out = out.require_grad()
    else:
        out = Tensor(leaf, dev, kind)
    rb.inner[n] = out
    return out


def _b_param(rb: Rebuild, x: Param) -> Any:
    n = rb.memo[id(x)]
    if rb.inner[n] is None:
        rb.inner[n] = Param(_b_tensor(rb, x._tensor), x.id, x.require_grad)
    return rb.inner[n]


def _b_state(rb: Rebuild, x: RunningState) -> Any:
    n = rb.memo[id(x)]
    if rb.inner[n] is None:
        out = RunningState(_b_tensor(rb, x._tensor), x.id)
        rb.inner[n] = out
        rb.cells.append((n, out, out._tensor))
    return rb.inner[n]


def _b_module(rb: Rebuild, m: Any) -> Any:
    n = rb.memo[id(m)]
    if rb.inner[n] is None:
        rb.inner[n] = rebuild_module(m, {f: rebuild(rb, getattr(m, f)) for f in m.__class__.__ember_fields__})
    return rb.inner[n]


def _b_optim(rb: Rebuild, o: Optimizer) -> Any:
    import copy

    n = rb.memo[id(o)]
    if rb.inner[n] is None:
        stand_in = copy.copy(o)
        stand_in._states = {pid: rebuild(rb, st) for pid, st in o._states.items()}
        rb.inner[n] = stand_in
        rb.optims.append((n, stand_in))
    return rb.inner[n]


def _b_grads(rb: Rebuild, g: GradientsParams) -> Any:
    n = rb.memo[id(g)]
    if rb.inner[n] is None:
        out = GradientsParams()
        out._grads = {pid: _b_tensor(rb, t) for pid, t in g._grads.items()}
        rb.inner[n] = out
    return rb.inner[n]


def _b_seq(rb: Rebuild, x: Any) -> Any:
    return _same_seq(x, [rebuild(rb, v) for v in x])


def _same_seq(x: Any, items: list[Any]) -> Any:
    if x.__class__ is list:
        return items
    if hasattr(x, "_fields"):
        return x.__class__(*items)
    return x.__class__(items)


def _b_dict(rb: Rebuild, x: dict[Any, Any]) -> Any:
    return {k: rebuild(rb, v) for k, v in x.items()}


def _b_dclass(rb: Rebuild, x: Any) -> Any:
    cls = x.__class__
    out = _new(cls)
    if hasattr(x, "__dict__"):
        _set(out, "__dict__", dict(x.__dict__))
    for f in _dc_fields(cls):
        _set(out, f, rebuild(rb, getattr(x, f)))
    return out


def _b_raw(rb: Rebuild, x: Any) -> Any:
    return rb.proxies[rb.pmemo[id(x)]]


def _b_static(rb: Rebuild, x: Any) -> Any:
    return x


_B: dict[str, Callable[[Rebuild, Any], Any]] = {
    "tensor": _b_tensor, "param": _b_param, "state": _b_state, "module": _b_module, "optim": _b_optim,
    "grads": _b_grads, "gradients": _b_static, "plain": _b_static, "seq": _b_seq, "dict": _b_dict,
    "raw": _b_raw, "dclass": _b_dclass, "static": _b_static,
}


# ---------------------------------------------------------------------- results (at capture) and build (each call)
# builder nodes: ("in", n) the caller's object n; ("out", j, make) a tensor around output j; ("const", v);
# ("param", id, rg, node); ("state", id, node); ("module", template, ((field, node), ...)); ("grads", ((pid, node),
# ...)); ("seq", like, (nodes)); ("dict", ((k, node), ...)); ("dclass", template, ((field, node), ...)).
# Nodes of objects with an identity carry a slot number so that an object met twice is built once.
class OutWalk:
    """Turns the step's results (holding proxies) into graph outputs (``outputs``) and builder nodes."""

    def __init__(self, rb: Rebuild) -> None:
        self.inner_n = {id(o): n for n, o in enumerate(rb.inner) if o is not None}
        self.outputs: list[Any] = []
        self._out_index: dict[int, int] = {}
        self._memo: dict[int, Any] = {}
        self.slots = 0

    def output(self, p: Any) -> int:
        j = self._out_index.get(id(p))
        if j is None:
            j = self._out_index[id(p)] = len(self.outputs)
            self.outputs.append(p)
        return j

    def tensor(self, t: Tensor) -> Any:
        """A node making a new caller-side tensor for ``t`` (untracked; never the caller's input object)."""
        p = t.primitive
        if p.__class__ is AP:
            p = p.p
        dev, kind = t.device, t.kind
        return ("out", self.output(p), (dev, kind, dev.backend.is_autodiff and kind is Float))

    def walk(self, x: Any, where: str) -> Any:
        n = self.inner_n.get(id(x))
        if n is not None:
            return ("in", n)
        k = kind_of(x.__class__)
        if k in ("plain", "static"):
            return ("const", x)
        if k == "seq":
            return ("seq", x, tuple([self.walk(v, f"{where}[{i}]") for i, v in enumerate(x)]))
        if k == "dict":
            return ("dict", tuple([(key, self.walk(v, f"{where}[{key!r}]")) for key, v in x.items()]))
        if k == "raw":
            return ("raw", self.output(x))
        if k == "gradients":
            raise TypeError(
                f"ember_torch.compile: the step returned a Gradients at {where}: it refers to the graph inside the "
                "step and cannot leave it. Return GradientsParams.from_grads(grads, model) instead."
            )
        done = self._memo.get(id(x))
        if done is not None:
            return done
        slot = self.slots
        self.slots += 1
        if k == "tensor":
            node: Any = (*self.tensor(x), slot)
        elif k == "param":
            node = ("param", x.id, x.require_grad, self.walk(x._tensor, where), slot)
        elif k == "state":
            node = ("state", x.id, self.walk(x._tensor, where), slot)
        elif k == "module":
            fields = tuple([(f, self.walk(getattr(x, f), f"{where}.{f}")) for f in x.__class__.__ember_fields__])
            node = ("module", x, fields, slot)
        elif k == "grads":
            node = ("grads", tuple([(pid, self.walk(t, where)) for pid, t in x._grads.items()]), slot)
        elif k == "dclass":
            fields = tuple([(f, self.walk(getattr(x, f), f"{where}.{f}")) for f in _dc_fields(x.__class__)])
            node = ("dclass", x, fields, slot)
        else:  # an optimizer that was not an argument: a static object
            node = ("const", x)
        self._memo[id(x)] = node
        return node


def build(node: Any, outs: Any, objs: list[Any], made: list[Any]) -> Any:
    """The caller's object for a builder ``node`` after a replay (``made``: one slot per identity node)."""
    tag = node[0]
    if tag == "in":
        return objs[node[1]]
    if tag == "const":
        return node[1]
    if tag == "raw":
        return outs[node[1]]
    if tag == "seq":
        return _same_seq(node[1], [build(v, outs, objs, made) for v in node[2]])
    if tag == "dict":
        return {k: build(v, outs, objs, made) for k, v in node[1]}
    slot = node[-1]
    done = made[slot]
    if done is not None:
        return done
    if tag == "out":
        dev, kind, lift = node[2]
        o = outs[node[1]]
        out: Any = Tensor.from_inner(Tensor(o, dev.inner, Float), dev) if lift else Tensor(o, dev, kind)
    elif tag == "param":
        out = Param(build(node[3], outs, objs, made), node[1], node[2])
    elif tag == "state":
        out = RunningState(build(node[2], outs, objs, made), node[1])
    elif tag == "module":
        out = rebuild_module(node[1], {f: build(v, outs, objs, made) for f, v in node[2]})
    elif tag == "grads":
        out = GradientsParams()
        out._grads = {pid: build(v, outs, objs, made) for pid, v in node[1]}
    else:  # dclass
        out = _new(node[1].__class__)
        if hasattr(node[1], "__dict__"):
            _set(out, "__dict__", dict(node[1].__dict__))
        for f, v in node[2]:
            _set(out, f, build(v, outs, objs, made))
    made[slot] = out
    return out
