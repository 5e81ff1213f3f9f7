"""Recording forward ops: one factory per pattern of the rule table (:mod:`._table`).

Each factory returns a plain function closed over the inner backend's bound primitive, installed
on the ``Autodiff`` instance under the primitive's name. The untracked path is: one attribute
read (``a.node``), the inner call and one small object (the wrapper). A tracked path adds one
:class:`~._graph.Node` holding a tuple. No dict, no isinstance chain, no look-up by name. The
wrapper and the node are built with ``object.__new__`` and slot stores, not through their
``__init__`` (a Python frame each, about a third of the cost of recording an op).

Arguments that are not autodiff primitives (the raw Int/Bool primitives that composite defaults
of the backend contract sometimes pass through Float ops) are forwarded untouched and give a raw
result: an autodiff primitive in, an autodiff primitive out.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._graph import AutodiffPrimitive as AP
from ._graph import Node
from ._table import Spec

__all__ = ["make_op", "make_delegate", "make_creation"]

_new = object.__new__


def _wrap(y: Any, node: Any) -> AP:
    """``AP(y, node)`` without the ``__init__`` frame (for the cold paths; hot ones inline it)."""
    r = _new(AP)
    r.p = y
    r.node = node
    return r


def _node(parents: tuple[Any, ...], rule: Any, saved: Any) -> Node:
    """``Node(parents, rule, saved)`` without the ``__init__`` frame."""
    m = _new(Node)
    m.parents = parents
    m.rule = rule
    m.saved = saved
    return m


def _unwrap_all(args: Any) -> tuple[list[Any], list[Any], bool, bool]:
    """``(raw, parents, wrapped, tracked)`` of ops taking several tensors: the inner primitives (anything else as
    given: ``None``, a raw primitive), their nodes (``None`` for untracked or raw arguments), whether any argument
    is an autodiff primitive and whether any is tracked."""
    raw, parents = [], []
    tracked = wrapped = False
    for v in args:
        if v.__class__ is AP:
            wrapped = True
            parents.append(v.node)
            tracked = tracked or v.node is not None
            raw.append(v.p)
        else:
            parents.append(None)
            raw.append(v)
    return raw, parents, wrapped, tracked


def _u(x: Any) -> Any:
    return x.p if x.__class__ is AP else x


def make_delegate(fwd: Callable[..., Any]) -> Callable[..., Any]:
    """An op whose result is not Float (comparisons, argmax, casts to Int ...): unwrap, delegate."""

    def op(a: Any, *args: Any) -> Any:
        if a.__class__ is AP:
            a = a.p
        if args:
            args = tuple([x.p if x.__class__ is AP else x for x in args])
        return fwd(a, *args)

    return op


def make_creation(I: Any, fwd: Callable[..., Any]) -> Callable[..., Any]:  # noqa: E741
    """A creation op: the inner result, wrapped untracked when it is a float primitive."""
    dtype = I.dtype

    def op(*args: Any) -> Any:
        r = fwd(*args)
        return _wrap(r, None) if dtype(r).is_float else r

    return op


def make_op(I: Any, spec: Spec) -> Callable[..., Any]:  # noqa: E741
    """The recording forward op of ``spec`` over the inner backend ``I``."""
    fwd = getattr(I, spec.name)
    return _FACTORIES[spec.pattern](I, fwd, spec)


# ---------------------------------------------------------------------------- unary
def _unary(I: Any, fwd: Callable[..., Any], spec: Spec) -> Callable[..., Any]:  # noqa: E741
    bw = spec.backward
    sx, ss, sy = "x" in spec.save, "s" in spec.save, "y" in spec.save
    shape = I.shape

    def rule(B: Any, g: Any, s: Any, ps: Any) -> Any:
        return (bw(B, g, s[0], s[1], s[2]),)  # type: ignore[misc]

    rule.__name__ = spec.name
    if spec.direct:  # written in the node's form: called by the sweep itself
        rule = bw  # type: ignore[assignment]

    if not sx and not ss and not sy:
        def op(a: Any, *args: Any) -> Any:
            try:
                n = a.node
            except AttributeError:
                return fwd(a, *args)
            r = _new(AP)
            r.p = fwd(a.p, *args)
            if n is None:
                r.node = None
            else:
                m = r.node = _new(Node)
                m.parents = (n,)
                m.rule = rule
                m.saved = (None, None, args)
            return r
        return op

    if sy and not sx and not ss:
        def op_y(a: Any, *args: Any) -> Any:
            try:
                n = a.node
            except AttributeError:
                return fwd(a, *args)
            r = _new(AP)
            y = r.p = fwd(a.p, *args)
            if n is None:
                r.node = None
            else:
                m = r.node = _new(Node)
                m.parents = (n,)
                m.rule = rule
                m.saved = (None, y, args)
            return r
        return op_y

    def op_g(a: Any, *args: Any) -> Any:
        try:
            n = a.node
        except AttributeError:
            return fwd(a, *args)
        x = a.p
        r = _new(AP)
        y = r.p = fwd(x, *args)
        if n is None:
            r.node = None
        else:
            m = r.node = _new(Node)
            m.parents = (n,)
            m.rule = rule
            m.saved = (x if sx else shape(x) if ss else None, y if sy else None, args)
        return r

    return op_g


# ---------------------------------------------------------------------------- binary
def _binary(I: Any, fwd: Callable[..., Any], spec: Spec) -> Callable[..., Any]:  # noqa: E741
    bw = spec.backward
    sx, sy = "x" in spec.save, "y" in spec.save
    shape = I.shape

    def rule(B: Any, g: Any, s: Any, ps: Any) -> Any:
        return bw(B, g, s[0], s[1], s[2], ps[0] is not None, ps[1] is not None)  # type: ignore[misc]

    rule.__name__ = spec.name
    if spec.direct:  # written in the node's form: called by the sweep itself
        rule = bw  # type: ignore[assignment]

    def op(a: Any, b: Any) -> Any:
        try:
            na = a.node
        except AttributeError:
            return fwd(a, _u(b))
        ap = a.p
        if b.__class__ is AP:
            nb = b.node
            bp = b.p
        else:
            nb = None
            bp = b
        r = _new(AP)
        y = r.p = fwd(ap, bp)
        if na is None and nb is None:
            r.node = None
            return r
        m = r.node = _new(Node)
        m.parents = (na, nb)
        m.rule = rule
        if sx:
            m.saved = (ap, bp, y if sy else None)
        else:
            m.saved = (shape(ap), shape(bp) if nb is not None else None, y if sy else None)
        return r

    return op


# ---------------------------------------------------------------------------- general
def _general(I: Any, fwd: Callable[..., Any], spec: Spec) -> Callable[..., Any]:  # noqa: E741
    bw = spec.backward
    diff, keep, sy = spec.diff, spec.keep, "y" in spec.save
    shape = I.shape

    def rule(B: Any, g: Any, s: Any, ps: Any) -> Any:
        return bw(B, g, s[0], s[1], [p is not None for p in ps])  # type: ignore[misc]

    rule.__name__ = spec.name

    def op(*args: Any) -> Any:
        raw = list(args)
        saved = list(args)
        parents: list[Any] = []
        tracked = wrapped = False
        for i in diff:
            v = args[i]
            if v.__class__ is AP:
                wrapped = True
                n = v.node
                parents.append(n)
                tracked = tracked or n is not None
                raw[i] = v.p
                saved[i] = v.p if keep else shape(v.p)
            elif isinstance(v, (list, tuple)):
                ps, ss = [], []
                for e in v:
                    if e.__class__ is AP:
                        wrapped = True
                        n = e.node
                        parents.append(n)
                        tracked = tracked or n is not None
                        ps.append(e.p)
                        ss.append(e.p if keep else shape(e.p))
                    else:
                        parents.append(None)
                        ps.append(e)
                        ss.append(e if keep else shape(e))
                raw[i] = ps
                saved[i] = ss
            else:
                parents.append(None)
        y = fwd(*raw)
        if not wrapped:
            return y
        if not tracked:
            return _wrap(y, None)
        return _wrap(y, _node(tuple(parents), rule, (tuple(saved), y if sy else None)))

    return op


# ---------------------------------------------------------------------------- indexed
def _scatter_back(B: Any, g: Any, s: Any, ps: Any) -> Any:
    shape, dim, idx = s
    z = B.zeros(shape, B.dtype(g), B.device_handle(g))
    return (B.scatter_add(z, dim, idx, g),)


def _indexed(I: Any, fwd: Callable[..., Any], spec: Spec) -> Callable[..., Any]:  # noqa: E741
    shape = I.shape

    def op(a: Any, dim: int, *args: Any) -> Any:
        try:
            n = a.node
        except AttributeError:
            return fwd(a, dim, *args)
        x = a.p
        v, idx = fwd(x, dim, *args)
        if n is None:
            return _wrap(v, None), idx
        return _wrap(v, _node((n,), _scatter_back, (shape(x), dim, idx))), idx

    return op


# ---------------------------------------------------------------------------- zero gradient
def _zero_back(B: Any, g: Any, s: Any, ps: Any) -> Any:
    return (B.zeros(s, B.dtype(g), B.device_handle(g)),)


def _zero(I: Any, fwd: Callable[..., Any], spec: Spec) -> Callable[..., Any]:  # noqa: E741
    shape = I.shape

    def op(a: Any) -> Any:
        try:
            n = a.node
        except AttributeError:
            return fwd(a)
        x = a.p
        y = fwd(x)
        if n is None:
            return _wrap(y, None)
        return _wrap(y, _node((n,), _zero_back, shape(x)))

    return op


_FACTORIES: dict[str, Callable[..., Any]] = {
    "unary": _unary,
    "binary": _binary,
    "general": _general,
    "indexed": _indexed,
    "zero": _zero,
}
