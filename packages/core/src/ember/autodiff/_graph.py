"""The autodiff graph: wrapped primitives, nodes, and the reverse-mode sweep.

An autodiff primitive (:class:`AutodiffPrimitive`) holds the inner backend's primitive ``p`` and
a graph node ``node``; ``node is None`` means untracked, and then an op costs one attribute test
more than on the inner backend. A node holds only what its backward rule needs: the parent nodes,
the rule and a tuple of saved inner primitives / shapes / arguments. Nodes never reference
autodiff primitives or tensors, so the graph is a DAG of plain objects freed by reference
counting alone (no cycles), and :func:`backward` clears every node it visits.

Leaves (:class:`Leaf`) are the tensors that asked for a gradient (``require_grad``); each has an
id, unique in the process, which keys :class:`~ember.autodiff.Gradients`.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

from ._errors import AutodiffError
from ._slice_grads import SliceGrad, accumulate, dense

__all__ = ["AutodiffPrimitive", "Leaf", "Node", "backward", "new_leaf"]

#: rule(inner_backend, grad_out, saved, parents) -> one gradient (or None) per parent
Rule = Callable[[Any, Any, Any, tuple[Any, ...]], Any]

_ids = itertools.count(1)


class Leaf:
    """A tracked leaf: a tensor created by ``require_grad()``; its gradient is kept."""

    __slots__ = ("id",)
    parents: tuple[Any, ...] = ()
    rule: Any = None

    def __init__(self) -> None:
        self.id = next(_ids)

    def __repr__(self) -> str:
        return f"Leaf(id={self.id})"


_new = object.__new__


def new_leaf() -> Leaf:
    """``Leaf()`` without the ``__init__`` frame (``require_grad`` runs per parameter per step)."""
    leaf = _new(Leaf)
    leaf.id = next(_ids)
    return leaf


class Node:
    """An op recorded in the graph: ``rule(B, g, saved, parents)`` gives the parents' gradients."""

    __slots__ = ("parents", "rule", "saved", "__weakref__")

    def __init__(self, parents: tuple[Any, ...], rule: Rule, saved: Any) -> None:
        self.parents = parents
        self.rule = rule
        self.saved = saved

    def __repr__(self) -> str:
        name = getattr(self.rule, "__name__", "consumed")
        return f"Node({name}, {len(self.parents)} parents)"


def _consumed(B: Any, g: Any, saved: Any, parents: tuple[Any, ...]) -> Any:
    raise AutodiffError(
        "backward: the graph of this tensor was already consumed by an earlier backward() (Ember "
        "frees the graph and its saved tensors as Burn does); recompute the forward pass, or "
        "detach() the tensor if it should be a constant."
    )


class AutodiffPrimitive:
    """The primitive of a Float tensor on an autodiff backend: the inner primitive ``p`` and the
    graph ``node`` (``None`` when untracked, a :class:`Leaf` or a :class:`Node`)."""

    __slots__ = ("p", "node")

    def __init__(self, p: Any, node: Any = None) -> None:
        self.p = p
        self.node = node

    @property
    def shape(self) -> Any:
        return self.p.shape

    @property
    def dtype(self) -> Any:
        return self.p.dtype

    def __repr__(self) -> str:
        return f"AutodiffPrimitive({self.p!r}, node={self.node!r})"


def backward(B: Any, root: Any, seed: Any, on_ready: Callable[[int, Any], None] | None = None) -> dict[int, Any]:
    """Reverse-mode sweep from ``root`` (a node) with gradient ``seed`` (inner primitive).

    Nodes are processed once all their consumers have contributed (Kahn's order on the reversed
    graph), gradients of a node used several times are summed, and each processed node is
    cleared (parents, saved tensors), which frees the graph as the sweep goes.

    Leaves are not scheduled: their gradients are summed where they arrive and collected at the end.
    With ``on_ready``, a leaf's consumers are counted too, and when the last of them has been processed
    the leaf's gradient is final: ``on_ready(leaf id, gradient)`` is called at that moment (once per leaf
    that gets a gradient, in the sweep's order; the primitive passed is the one returned).

    Returns:
        ``{leaf id: gradient}`` (inner primitives) for every leaf reached.

    Raises:
        AutodiffError: the sweep reached a node consumed by an earlier ``backward()``.
    """
    if root.rule is None:  # a leaf: its own gradient
        if on_ready is not None:
            on_ready(root.id, seed)
        return {root.id: seed}
    # count, for each node, the edges from nodes that will send it a gradient (a leaf has no parents: not
    # pushed, so the walk does not visit it)
    deps: dict[Any, int] = {root: 0}
    stack = [root]
    pop, push, get_dep = stack.pop, stack.append, deps.get
    while stack:
        for p in pop().parents:
            if p is not None:
                c = get_dep(p)
                if c is None:
                    deps[p] = 1
                    if p.rule is not None:
                        push(p)
                else:
                    deps[p] = c + 1
    grads: dict[Any, Any] = {root: seed}
    ready = [root]
    pop_ready, push_ready, pop_grad, get_grad = ready.pop, ready.append, grads.pop, grads.get
    while ready:
        n = pop_ready()
        g = pop_grad(n, None)
        if g.__class__ is SliceGrad:  # the pieces of a slice's gradient, written out once
            g = dense(B, g)
        parents = n.parents
        gs = (None,) * len(parents) if g is None else n.rule(B, g, n.saved, parents)
        n.parents = ()
        n.saved = None
        n.rule = _consumed
        for p, gp in zip(parents, gs):
            if p is None:
                continue
            if gp is not None:
                prev = get_grad(p)
                grads[p] = gp if prev is None else accumulate(B, prev, gp)
            c = deps[p] - 1
            if c:
                deps[p] = c
            elif p.rule is not None:
                push_ready(p)
            elif on_ready is not None:  # a leaf's last consumer: its gradient is final
                lg = get_grad(p)
                if lg is not None:
                    if lg.__class__ is SliceGrad:
                        lg = grads[p] = dense(B, lg)
                    on_ready(p.id, lg)
    # every node reached was processed and its gradient popped: what is left belongs to leaves
    return {p.id: dense(B, g) if g.__class__ is SliceGrad else g for p, g in grads.items()}
