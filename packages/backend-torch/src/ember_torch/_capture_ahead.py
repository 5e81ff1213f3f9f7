"""A captured step's results flattened ahead for the next call (the fast path of
:mod:`ember.backend.step_tree`, see :func:`~ember.backend.step_tree.fast_spec`).

``model, loss = step(model, optim, batch, lr)``: the next call's arguments are this call's results. The
generated builder (:mod:`._capture_codegen`) makes the same objects, in the same order, at every call, so the
walk of a result module, and of each optimizer's new state, is done once (:func:`plan`, on the call that made the
entry, from the real objects) and recorded as positions in the list of what the builder made followed by the
caller's objects (``pool``), and in the graph's outputs followed by its inputs (``lpool``). Every later call
takes the objects at those positions (:func:`ahead`; C code, no walk), and the next call's flatten takes each
module or state as it is after identity checks (running-state cells: the tensors they held when built).
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

from ember.backend.step_tree import Flat, fast_spec, pool_spec, shift_spec
from ember.module import Module

from ._capture_flatten import TREE

__all__ = ["Plan", "plan", "ahead"]

Getter = Callable[[list[Any]], tuple[Any, ...]]


def _getter(positions: tuple[int, ...]) -> Getter:
    """A function taking the items at ``positions`` of a list, as a tuple."""
    if not positions:
        return lambda s: ()
    if len(positions) == 1:
        i = positions[0]
        return lambda s: (s[i],)
    return operator.itemgetter(*positions)  # type: ignore[return-value]


class Plan:
    """The results of one entry flattened ahead: per result module ``(pool position, structure, position
    independent, objects, leaves, cells, cell values)``; per optimizer ``(object number, states structure,
    objects, leaves, position)`` (getters of ``pool`` / ``lpool``)."""

    __slots__ = ("modules", "optims")

    def __init__(self) -> None:
        self.modules: list[tuple[int, Any, bool, Getter, Getter, Getter, Getter]] = []
        self.optims: list[tuple[int, Any, Getter, Getter, Any]] = []


def plan(result: Any, made: list[Any], fl: Flat, outs: Any, optims: list[int]) -> Plan | None:
    """The plan of an entry from one call's results (``made``: what the builder made; ``fl``: this call's
    complete walk of the arguments; ``outs``: the graph's outputs; ``optims``: the optimizers' object numbers),
    or ``None`` when nothing can be taken ahead."""
    pool = made + fl.objs
    objs_at = {id(o): i for i, o in reversed(list(enumerate(pool)))}
    lpool = [*outs, *fl.leaves]
    leaves_at = {id(p): i for i, p in reversed(list(enumerate(lpool)))}
    out = Plan()
    tops = list(result) if isinstance(result, (tuple, list)) else [result]
    for m in tops:
        if not isinstance(m, Module) or id(m) not in objs_at:
            continue
        spec = fast_spec(TREE, m)
        ps = pool_spec(spec, objs_at, leaves_at) if spec is not None else None
        if ps is not None:
            node, free, op, lp, cp, vp = ps
            out.modules.append((objs_at[id(m)], node, free, _getter(op), _getter(lp), _getter(cp), _getter(vp)))
    for n in optims:
        o = fl.objs[n]
        try:
            spec = fast_spec(TREE, o._states)
        except Exception:  # a Python number or TensorData in the state: the next call walks it
            spec = None
        pos = None
        if spec is not None and not spec[1]:  # back-references (a shared step counter): only at this position
            pos = fl.marks.get(id(o))
            spec = shift_spec(spec, pos) if pos is not None else None
        ps = pool_spec(spec, objs_at, leaves_at) if spec is not None else None
        if ps is not None:
            out.optims.append((n, ps[0], _getter(ps[2]), _getter(ps[3]), pos))
    return out if out.modules or out.optims else None


def ahead(p: Plan, made: list[Any], objs: list[Any], outs: Any, leaves: list[Any]) -> dict[int, Any]:
    """This call's results flattened ahead, keyed by object id, for the next call's ``Flat(TREE, fast)``."""
    pool = made + objs
    lpool = [*outs, *leaves]
    fast: dict[int, Any] = {}
    for i, node, free, og, lg, cg, vg in p.modules:
        m = pool[i]
        fast[id(m)] = (m, node, free, og(pool), lg(lpool), cg(pool), vg(pool))
    for n, node, og, lg, pos in p.optims:
        o = objs[n]
        st = o._states
        fast[id(o)] = (o, st, tuple(st.values()), node, og(pool), lg(lpool), pos)
    return fast
