"""The results of a captured step (:func:`ember_torch.compile`) around ``make_fx``'s proxies.

The arguments were flattened and rebuilt around the proxies by the core's step tree
(:mod:`ember.backend.step_tree`, with torch's hooks in :mod:`._capture_flatten`). Here, by the same kinds:

- :class:`OutWalk` (once per capture): the step's results turned into graph outputs and a *builder*, a small tree
  of nodes from which :mod:`._capture_codegen` generates the function that makes the caller's results around the
  graph's outputs after each replay. :func:`build` walks the nodes instead: the reference semantics of the
  generated code (tests and ``bench/compile_dispatch.py`` compare the two).

An object met twice is walked once (later: a back-reference), so a shared ``Param`` stays one object.
"""

from __future__ import annotations

from typing import Any

from ember import Float, Tensor
from ember.backend.contract import AutodiffPrimitive as AP
from ember.backend.contract import rebuild_module
from ember.backend.step_tree import Rebuild, copy_dclass, dc_fields, same_seq
from ember.module import Param, RunningState
from ember.optim import GradientsParams

from ._capture_flatten import TREE

__all__ = ["OutWalk", "build", "build_all"]


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
        k = TREE.kind_of(x.__class__)
        if k in ("plain", "static", "none"):
            return ("const", x)
        if k == "seq":
            return ("seq", x, tuple([self.walk(v, f"{where}[{i}]") for i, v in enumerate(x)]))
        if k == "dict":
            return ("dict", tuple([(key, self.walk(v, f"{where}[{key!r}]")) for key, v in x.items()]))
        if k == "array":
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
            fields = tuple([(f, self.walk(getattr(x, f), f"{where}.{f}")) for f in dc_fields(x.__class__)])
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
        return same_seq(node[1], [build(v, outs, objs, made) for v in node[2]])
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
        out = copy_dclass(node[1], {f: build(v, outs, objs, made) for f, v in node[2]})
    made[slot] = out
    return out


def build_all(result: Any, cells: list[tuple[int, Any]], optims: list[tuple[int, list[tuple[Any, Any]]]], slots: int,
              outs: Any, objs: list[Any]) -> Any:
    """The results of one replay by :func:`build`, with the state written back (the running-state cells ``cells``
    and optimizer states ``optims`` of the caller's objects ``objs``): what the generated builder does."""
    made: list[Any] = [None] * slots
    out = build(result, outs, objs, made)
    for n, node in cells:
        object.__setattr__(objs[n], "_tensor", build(node, outs, objs, made))
    for n, states in optims:
        objs[n]._states = {pid: build(node, outs, objs, made) for pid, node in states}
    return out
