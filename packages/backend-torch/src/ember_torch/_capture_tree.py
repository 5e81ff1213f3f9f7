"""The arguments and results of a captured step (:func:`ember_torch.compile`) around ``make_fx``'s proxies.

Two walks over trees of Ember objects, by the kinds of :func:`._capture_flatten.kind_of` (the arguments were
flattened first by :func:`._capture_flatten.flatten`):

- :func:`rebuild` (once per capture): the same objects in the same order, holding ``make_fx``'s proxy tensors;
  running-state cells and optimizers are stand-ins whose new state the capture reads afterwards;
- :class:`OutWalk` (once per capture): the step's results turned into graph outputs and a *builder*, a small tree
  of nodes that :func:`build` runs after each replay to make the caller's results around the graph's outputs.

An object met twice is walked once (later: a back-reference), so a shared ``Param`` stays one leaf and one object.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ember import Float, Tensor
from ember.backend.contract import AutodiffPrimitive as AP
from ember.backend.contract import rebuild_module
from ember.module import Param, RunningState
from ember.optim import GradientsParams, Optimizer

from ._capture_flatten import Flat, _dc_fields, kind_of

__all__ = ["rebuild", "Rebuild", "OutWalk", "build"]

_new = object.__new__
_set = object.__setattr__


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
