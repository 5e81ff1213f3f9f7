"""Ember's objects as JAX pytrees (``jax.tree_util``): ``jax.tree_util.tree_leaves(model)`` gives the arrays.

Registered when the jax backend loads: ``Tensor``, ``Param``, ``RunningState``, ``GradientsParams``,
``Optimizer`` and every ``Module`` subclass, including those defined later (through
``ember.module._module.SUBCLASS_HOOKS``; the core never imports jax).

The leaves are the same arrays :func:`ember_jax.jit` passes to the compiled program, and the conventions are
the same (:mod:`ember.backend.step_tree`):

- a ``Tensor`` is one leaf: its jax array, or for a Float tensor on an ``Autodiff(jax)`` device the inner array;
  the device, kind and tracking flag are static. Unflattening makes a new tensor holding the leaf without
  running any op (jax may unflatten with placeholder leaves); a tracked tensor comes back as a fresh
  ``require_grad`` leaf, as from a compiled step.
- a ``Param`` is its tensor (id and ``require_grad`` static); a ``RunningState`` its tensor (a new cell).
- a ``Module``'s fields holding tensors, params, running states, modules or containers of them are children;
  its plain fields (numbers, strings, configs) are static, so they never show up as leaves.
- an ``Optimizer``'s children are its per-parameter states in order (ids and the rule static);
  ``GradientsParams``' are its gradients (ids static).

These registrations are for jax's own transformations (``jax.tree_util.tree_map``, ``jax.jit`` of a function
written with raw jax). ``ember_jax.jit`` does not use them: it walks the objects itself to keep shared objects
shared and to write state back.
"""

from __future__ import annotations

from typing import Any

import jax

from ember import Tensor
from ember.backend.contract import SUBCLASS_HOOKS, new_leaf
from ember.backend.contract import AutodiffPrimitive as AP
from ember.module import Module, Param, RunningState
from ember.optim import GradientsParams, Optimizer

__all__ = ["register"]

_new = object.__new__
_set = object.__setattr__
_done: set[type] = set()


class _Static:
    """A static value in pytree aux data: equal by value when hashable, by identity otherwise."""

    __slots__ = ("v", "_h")

    def __init__(self, v: Any) -> None:
        self.v = v
        try:
            self._h: int | None = hash((type(v), v))
        except TypeError:
            self._h = None

    def __hash__(self) -> int:
        return self._h if self._h is not None else id(self.v)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not _Static:
            return False
        o: Any = other
        if self._h is None or o._h is None:
            return bool(self.v is o.v)
        return bool(type(self.v) is type(o.v) and self.v == o.v)

    def __repr__(self) -> str:
        return repr(self.v)


# ---------------------------------------------------------------------- tensors
def _flatten_tensor(t: Tensor) -> tuple[tuple[Any], tuple[Any, Any, int]]:
    p = t.primitive
    if p.__class__ is AP:
        return (p.p,), (t.device, t.kind, 1 if p.node is None else 2)
    return (p,), (t.device, t.kind, 0)


def _unflatten_tensor(aux: tuple[Any, Any, int], children: Any) -> Tensor:
    dev, kind, flag = aux
    p = children[0]
    if flag:
        ap = _new(AP)
        ap.p = p
        ap.node = new_leaf() if flag == 2 else None
        p = ap
    t = _new(Tensor)
    t.primitive = p
    t.device = dev
    t.kind = kind
    t.ops = dev.ops[kind.index]
    return t


# ---------------------------------------------------------------------- params and running states
def _flatten_param(p: Param) -> tuple[tuple[Any], tuple[Any, bool]]:
    return (p._tensor,), (p.id, p.require_grad)


def _unflatten_param(aux: tuple[Any, bool], children: Any) -> Param:
    p = _new(Param)
    _set(p, "id", aux[0])
    _set(p, "require_grad", aux[1])
    _set(p, "_tensor", children[0])
    return p


def _flatten_state(s: RunningState) -> tuple[tuple[Any], Any]:
    return (s._tensor,), s.id


def _unflatten_state(aux: Any, children: Any) -> RunningState:
    s = _new(RunningState)
    _set(s, "id", aux)
    _set(s, "_tensor", children[0])
    return s


# ---------------------------------------------------------------------- gradients and optimizers
def _flatten_grads(g: GradientsParams) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    return tuple(g._grads.values()), tuple(g._grads)


def _unflatten_grads(aux: tuple[Any, ...], children: Any) -> GradientsParams:
    g = _new(GradientsParams)
    g._grads = dict(zip(aux, children))
    return g


def _flatten_optim(o: Optimizer) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    attrs = tuple((k, _Static(v)) for k, v in o.__dict__.items() if k != "_states")
    return tuple(o._states.values()), (tuple(o._states), attrs)


def _unflatten_optim(aux: tuple[Any, ...], children: Any) -> Optimizer:
    ids, attrs = aux
    o = _new(Optimizer)
    for k, v in attrs:
        o.__dict__[k] = v.v
    o._states = dict(zip(ids, children))
    return o


# ---------------------------------------------------------------------- modules
def _dynamic(v: Any) -> bool:
    """Whether a field value holds arrays (then it is a child, else static aux data)."""
    if isinstance(v, (Tensor, Param, RunningState, Module, GradientsParams)):
        return True
    if isinstance(v, (list, tuple)):
        return any(_dynamic(x) for x in v)
    if isinstance(v, dict):
        return any(_dynamic(x) for x in v.values())
    return False


def _flatten_module(m: Any) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    d = m.__dict__
    fields = set(m.__class__.__ember_fields__)
    names: list[str] = []
    children: list[Any] = []
    static: list[tuple[str, _Static]] = []
    for k, v in d.items():
        if k in fields and _dynamic(v):
            names.append(k)
            children.append(v)
        else:
            static.append((k, _Static(v)))
    return tuple(children), (tuple(names), tuple(static))


def _unflatten_module(cls: type, aux: tuple[Any, ...], children: Any) -> Any:
    names, static = aux
    m: Any = _new(cls)
    d = {k: s.v for k, s in static}
    d.update(zip(names, children))
    _set(m, "__dict__", d)
    return m


def _register_module(cls: type) -> None:
    if cls in _done:
        return
    _done.add(cls)

    def unflatten(aux: Any, children: Any, cls: type = cls) -> Any:
        return _unflatten_module(cls, aux, children)

    jax.tree_util.register_pytree_node(cls, _flatten_module, unflatten)


def _subclasses(cls: type) -> list[type]:
    out: list[type] = []
    c: type
    for c in cls.__subclasses__():
        out.append(c)
        out.extend(_subclasses(c))
    return out


def register() -> None:
    """Register Ember's types with ``jax.tree_util`` (idempotent); later ``Module`` subclasses register as they
    are defined."""
    if Tensor in _done:
        return
    table: list[tuple[type, Any, Any]] = [
        (Tensor, _flatten_tensor, _unflatten_tensor),
        (Param, _flatten_param, _unflatten_param),
        (RunningState, _flatten_state, _unflatten_state),
        (GradientsParams, _flatten_grads, _unflatten_grads),
        (Optimizer, _flatten_optim, _unflatten_optim),
    ]
    for cls, flat, unflat in table:
        _done.add(cls)
        jax.tree_util.register_pytree_node(cls, flat, unflat)
    for sub in _subclasses(Module):
        _register_module(sub)
    SUBCLASS_HOOKS.append(_register_module)
