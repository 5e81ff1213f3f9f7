"""Results flattened ahead: the fast path of the next call's flatten.

The step's results are usually its next call's arguments (``model, item = step(model, optim, ...)``, the
optimizer's new state). Their structure is known when the step is traced, so a backend's result code can also
record, per call, the objects and arrays of each result module and of each optimizer's new state in flatten
order; the next call's flatten then checks identity and takes them as they are instead of walking them.
Running-state cells are guarded (:func:`cell_guards`); raw arrays and identity-keyed static values are not
taken ahead (those modules are always walked).
"""

from __future__ import annotations

from typing import Any

from ...module import RunningState
from ._flat import Flat
from ._flatten import flatten, flatten_state
from ._kinds import (
    ALIAS,
    ARRAY,
    DCLASS,
    DICT,
    GRADS,
    MODULE,
    NONE,
    OPTIM,
    PARAM,
    REF,
    RSTATE,
    SEQ,
    STATIC,
    STATIC_ID,
    TENSOR,
    StepTree,
)

__all__ = ["Hashed", "fast_spec", "cell_guards", "shift_spec", "pool_spec"]


class Hashed(tuple):  # type: ignore[type-arg]
    """A structure whose hash is computed once: the structures of results flattened ahead come back at every
    call as the same object, so the cache key's hash and equality cost nothing for them (equality finds the
    same object first)."""

    _h: int

    def __new__(cls, node: tuple[Any, ...]) -> Hashed:
        self = super().__new__(cls, node)
        self._h = tuple.__hash__(self)
        return self

    def __hash__(self) -> int:
        return self._h


def fast_spec(tree: StepTree, x: Any) -> tuple[Any, bool, list[Any], list[Any]] | None:
    """For an object built inside the trace (a module, or an optimizer's ``_states`` dict): ``(structure,
    position independent, objects, leaves)`` as a walk from an empty :class:`Flat` gives them, or ``None`` when
    the object cannot take the fast path.

    Running-state cells are the one mutable part of a module tree: the objects include each cell followed by
    the tensor it holds, and the output code turns them into guards (:func:`cell_guards`): the next call takes
    the module as it is only while every cell still holds the tensor the step wrote into it."""
    fc = Flat(tree)
    if isinstance(x, dict):
        node: Any = tuple([(pid._value, flatten_state(fc, st)) for pid, st in x.items()])
    else:
        node = flatten(fc, x)
    tags = _tags(node) if node else set()
    if ARRAY in tags or STATIC_ID in tags or OPTIM in tags:
        return None
    return Hashed(node), not ({REF, ALIAS} & tags), fc.objs, fc.leaves


def cell_guards(objs: list[Any]) -> list[tuple[Any, Any]]:
    """The ``(cell, tensor it holds)`` pairs among the objects of a :func:`fast_spec` (its running states)."""
    return [(o, o._tensor) for o in objs if isinstance(o, RunningState)]


def shift_spec(spec: tuple[Any, bool, list[Any], list[Any]], mark: tuple[int, int]
               ) -> tuple[Any, bool, list[Any], list[Any]] | None:
    """An optimizer-state :func:`fast_spec` whose back-references (the step counter shared by every parameter's
    state) are numbered from ``mark`` = (objects, leaves) walked before the states, as the walk of a call
    numbers them when the states come at that position; ``None`` for states holding other nodes."""
    try:
        node = tuple([(pid, _shift(c, *mark)) for pid, c in spec[0]])
    except _Unshiftable:
        return None
    return Hashed(node), spec[1], spec[2], spec[3]


def pool_spec(spec: tuple[Any, bool, list[Any], list[Any]], objs_at: dict[int, int], leaves_at: dict[int, int]
              ) -> tuple[Any, bool, tuple[int, ...], tuple[int, ...], tuple[int, ...], tuple[int, ...]] | None:
    """A :func:`fast_spec` (or :func:`shift_spec`) of results made by code that makes the same objects at every
    call, as positions in the list of what it made: ``(structure, position independent, object positions, leaf
    positions, cell positions, cell value positions)`` by ``objs_at`` (object id -> position) and ``leaves_at``
    (array id -> position); ``None`` when an object or array is in neither. The cells and values are the
    :func:`cell_guards`. A backend computes it once from one call's results (walked completely), then takes the
    next calls' objects by position (``operator.itemgetter``), without walking them."""
    node, free, objs, leaves = spec
    op = [objs_at.get(id(o)) for o in objs]
    lp = [leaves_at.get(id(p)) for p in leaves]
    guards = cell_guards(objs)
    cp = [objs_at.get(id(c)) for c, _t in guards]
    vp = [objs_at.get(id(t)) for _c, t in guards]
    if None in op or None in lp or None in cp or None in vp:
        return None
    return node, free, tuple(op), tuple(lp), tuple(cp), tuple(vp)  # type: ignore[arg-type]


class _Unshiftable(Exception):
    pass


def _shift(node: Any, dobj: int, dleaf: int) -> Any:
    tag = node[0]
    if tag == REF:
        return (REF, node[1] + dobj)
    if tag == ALIAS:
        return node[:4] + (node[4] + dleaf,)
    if tag == DICT:
        return (DICT, node[1], node[2], tuple([_shift(c, dobj, dleaf) for c in node[3]]))
    if tag == SEQ:
        return (SEQ, node[1], tuple([_shift(c, dobj, dleaf) for c in node[2]]))
    if tag == TENSOR or tag == NONE or tag == STATIC:
        return node
    raise _Unshiftable


def _tags(node: Any, out: set[int] | None = None) -> set[int]:
    """The tags of every node under ``node`` (a structure, or the ``(pid, state)`` pairs of optimizer states)."""
    out = set() if out is None else out
    tag = node[0]
    if isinstance(tag, tuple):  # optimizer states: ((pid, node), ...)
        for _pid, c in node:
            _tags(c, out)
        return out
    out.add(tag)
    if tag == PARAM:
        _tags(node[3], out)
    elif tag == RSTATE:
        _tags(node[2], out)
    elif tag in (MODULE, SEQ, DCLASS):
        for c in node[2]:
            _tags(c, out)
    elif tag == DICT:
        for c in node[3]:
            _tags(c, out)
    elif tag == GRADS:
        for _pid, c in node[1]:
            _tags(c, out)
    elif tag == OPTIM:
        for _pid, c in node[3]:
            _tags(c, out)
    return out
