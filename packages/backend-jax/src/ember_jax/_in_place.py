"""A donated input module paired with the step's new module: the writes that turn the one into the other.

When a compiled step's module argument is donated (``donate_argnums``), jax deletes its arrays at the call, so
the caller's module object is dead to the user; instead of building a new object tree for the result module at
every call (a Param, a Tensor and its Autodiff wrapper per parameter, the running-state cells, the modules), the
generated code writes the program's new arrays into the caller's tensor objects and hands the caller's module
back. This module pairs the two trees object by object; a tree that does not pair one to one (another class,
a new or dropped field value, another parameter id or ``require_grad``, a tensor's device, kind or tracking
changed, objects shared differently) is rebuilt as usual.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ember import Tensor
from ember.backend.contract import AutodiffPrimitive
from ember.module import Module, Param, RunningState

__all__ = ["pair_module", "pair_donated_modules"]


def pair_donated_modules(result: Any, args: tuple[Any, ...], memo: dict[int, int], donated: frozenset[int],
                         take: Callable[[Any, Any], bool]) -> None:
    """Pair each top-level module of ``result`` (the step's result, or the items of a tuple / list result) with
    the first donated module argument of its class (``args`` whose object number in ``memo`` is in ``donated``)
    that ``take(old, new)`` accepts; an argument is paired at most once."""
    olds = [a for a in args if isinstance(a, Module) and memo.get(id(a)) in donated]
    for x in list(result) if isinstance(result, (tuple, list)) else [result]:
        if not isinstance(x, Module):
            continue
        for old in olds:
            if old.__class__ is x.__class__ and take(old, x):
                olds.remove(old)
                break


def pair_module(old: Any, new: Any, memo: dict[int, int], objs: dict[int, int], tensors: dict[int, Any]) -> bool:
    """Pair the caller's tree ``old`` (its objects numbered by ``memo``, the flatten's) with the step's ``new``.

    On success ``objs`` maps the id of each new module, param and running state to the number of the caller's
    object it stands for, and ``tensors`` maps each caller tensor's number to the new tensor whose array it
    takes; ``False`` when the trees differ (the dicts are then partly filled: discard them)."""
    c = old.__class__
    if c is not new.__class__:
        return False
    if c is Tensor:
        return _pair_tensor(old, new, memo, objs, tensors)
    if c is Param:
        return (old.id == new.id and old.require_grad == new.require_grad and _enter(old, new, memo, objs)
                and old._tensor.__class__ is Tensor and _pair_tensor(old._tensor, new._tensor, memo, objs, tensors))
    if c is RunningState:
        return (old.id == new.id and _enter(old, new, memo, objs)
                and _pair_tensor(old._tensor, new._tensor, memo, objs, tensors))
    if isinstance(old, Module):
        if not _enter(old, new, memo, objs):
            return False
        od, nd = old.__dict__, new.__dict__
        if od.keys() != nd.keys():
            return False
        fields = c.__ember_fields__
        for f, v in od.items():
            w = nd[f]
            if f in fields:
                if not pair_module(v, w, memo, objs, tensors):
                    return False
            elif v is not w:  # a plain attribute the step replaced
                return False
        return True
    if c is list or c is tuple:  # a field's layers: the caller's list stays, holding the caller's objects
        return len(old) == len(new) and all(pair_module(a, b, memo, objs, tensors) for a, b in zip(old, new))
    if c is dict:
        return old.keys() == new.keys() and all(pair_module(v, new[k], memo, objs, tensors) for k, v in old.items())
    return old is new  # static values (None, configs) come back as they went in


def _enter(old: Any, new: Any, memo: dict[int, int], objs: dict[int, int]) -> bool:
    """Record ``new`` as standing for ``old``; an object met again must pair with the same one."""
    n = memo.get(id(old))
    if n is None:
        return False
    seen = objs.get(id(new))
    if seen is not None:
        return seen == n
    objs[id(new)] = n
    return True


def _pair_tensor(old: Any, new: Any, memo: dict[int, int], objs: dict[int, int], tensors: dict[int, Any]) -> bool:
    if new.__class__ is not Tensor or old.device != new.device or old.kind is not new.kind:
        return False
    po, pn = old.primitive, new.primitive
    if (po.__class__ is AutodiffPrimitive) != (pn.__class__ is AutodiffPrimitive):
        return False
    if po.__class__ is AutodiffPrimitive and (po.node is None) != (pn.node is None):
        return False
    n = memo.get(id(old))
    if n is None:
        return False
    seen = objs.get(id(new))
    if seen is not None:
        return seen == n and tensors.get(n) is new
    if n in tensors:  # one caller tensor, two new ones
        return False
    objs[id(new)] = n
    tensors[n] = new
    return True
