"""The arguments of a compiled step rebuilt while the backend traces it: the same objects, in the same order as
:func:`~._flatten.flatten` walked them, holding the backend's tracers (jax) or proxies (torch's ``make_fx``) in
place of the leaves.

Tensors on an ``Autodiff`` device are rebuilt from their inner leaf and tracked again (``require_grad``) when they
were tracked. Params and running states are rebuilt (a running state is a new cell: what the step stores in it is
written back to the caller's cell afterwards). An optimizer is a shallow copy (a stand-in) holding the traced
state; its state at the end of the step is written back. Objects met twice are rebuilt once.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from ..._kind import Float
from ...autodiff._graph import AutodiffPrimitive as AP
from ...module import Param, RunningState
from ...module._tree import rebuild as rebuild_module
from ...optim import GradientsParams, Optimizer
from ...tensor import Tensor
from ._flat import Flat
from ._kinds import dc_fields

__all__ = ["Rebuild", "rebuild"]

_new = object.__new__
_set = object.__setattr__


class Rebuild:
    """State of one rebuild: the traced leaves (in the order of ``fl.leaves``), the caller's memos (same objects,
    same order), the inner objects built so far (``inner[n]`` for the caller's ``objs[n]``), and what may need
    writing back: ``cells`` ``(n, new cell, the tensor it started with)`` and ``optims`` ``(n, stand-in)``."""

    def __init__(self, leaves: Any, fl: Flat) -> None:
        self.tree = fl.tree
        self.leaves = leaves
        self.memo = fl.memo
        self.pmemo = fl.pmemo
        self.inner: list[Any] = [None] * len(fl.objs)
        self.cells: list[tuple[int, RunningState, Any]] = []
        self.optims: list[tuple[int, Any]] = []


def rebuild(rb: Rebuild, x: Any) -> Any:
    """The object the step receives for ``x``: same structure, traced leaves in place of the arrays."""
    table = rb.tree.build
    h = table.get(x.__class__)
    if h is None:
        h = table[x.__class__] = _BY_KIND[rb.tree.kind_of(x.__class__)]
    return h(rb, x)


def _seen(rb: Rebuild, x: Any) -> tuple[int, Any]:
    n = rb.memo[id(x)]
    return n, rb.inner[n]


def _b_tensor(rb: Rebuild, t: Any) -> Any:
    n, done = _seen(rb, t)
    if done is not None:
        return done
    p = t.primitive
    tracked = False
    if p.__class__ is AP:
        tracked = p.node is not None
        p = p.p
    leaf = rb.leaves[rb.pmemo[id(p)]]
    dev = t.device
    kind = t.kind
    if dev.backend.is_autodiff and kind is Float:
        out = Tensor.from_inner(Tensor(leaf, dev.inner, Float), dev)
        if tracked:
            out = out.require_grad()
    else:
        out = Tensor(leaf, dev, kind)
    rb.inner[n] = out
    return out


def _b_param(rb: Rebuild, x: Param) -> Any:
    n, done = _seen(rb, x)
    if done is not None:
        return done
    t = x._tensor
    out = Param(_b_tensor(rb, t) if t.__class__ is Tensor else rebuild(rb, t), x.id, x.require_grad)
    rb.inner[n] = out
    return out


def _b_state(rb: Rebuild, x: RunningState) -> Any:
    n, done = _seen(rb, x)
    if done is not None:
        return done
    out = RunningState(_b_tensor(rb, x._tensor), x.id)
    rb.inner[n] = out
    rb.cells.append((n, out, out._tensor))
    return out


def _b_module(rb: Rebuild, m: Any) -> Any:
    n, done = _seen(rb, m)
    if done is not None:
        return done
    out = rebuild_module(m, {f: rebuild(rb, getattr(m, f)) for f in m.__class__.__ember_fields__})
    rb.inner[n] = out
    return out


def _b_optim(rb: Rebuild, o: Optimizer) -> Any:
    n, done = _seen(rb, o)
    if done is not None:
        return done
    stand_in = copy.copy(o)
    stand_in._states = {pid: rebuild(rb, st) for pid, st in o._states.items()}
    rb.inner[n] = stand_in
    rb.optims.append((n, stand_in))
    return stand_in


def _b_grads(rb: Rebuild, g: GradientsParams) -> Any:
    n, done = _seen(rb, g)
    if done is not None:
        return done
    out = GradientsParams()
    out._grads = {pid: _b_tensor(rb, t) for pid, t in g._grads.items()}
    rb.inner[n] = out
    return out


def same_seq(like: Any, items: list[Any]) -> Any:
    """A sequence of ``like``'s class (list, tuple, namedtuple or another tuple subclass) holding ``items``."""
    if like.__class__ is list:
        return items
    if hasattr(like, "_fields"):
        return like.__class__(*items)
    return like.__class__(items)


def _b_seq(rb: Rebuild, x: Any) -> Any:
    return same_seq(x, [rebuild(rb, v) for v in x])


def _b_dict(rb: Rebuild, x: dict[Any, Any]) -> Any:
    return x.__class__((k, rebuild(rb, v)) for k, v in x.items())


def copy_dclass(x: Any, fields: dict[str, Any]) -> Any:
    """A copy of dataclass instance ``x`` (without running ``__init__``) with its fields set from ``fields``."""
    out = _new(x.__class__)
    if hasattr(x, "__dict__"):
        _set(out, "__dict__", dict(x.__dict__))
    for f, v in fields.items():
        _set(out, f, v)
    return out


def _b_dclass(rb: Rebuild, x: Any) -> Any:
    return copy_dclass(x, {f: rebuild(rb, getattr(x, f)) for f in dc_fields(x.__class__)})


def _b_array(rb: Rebuild, x: Any) -> Any:
    return rb.leaves[rb.pmemo[id(x)]]


def _b_static(rb: Rebuild, x: Any) -> Any:
    return x


_BY_KIND: dict[str, Callable[[Rebuild, Any], Any]] = {
    "tensor": _b_tensor, "param": _b_param, "state": _b_state, "module": _b_module, "optim": _b_optim,
    "grads": _b_grads, "gradients": _b_static, "none": _b_static, "plain": _b_static, "seq": _b_seq,
    "dict": _b_dict, "array": _b_array, "dclass": _b_dclass, "static": _b_static,
}
