"""The builder of a captured step's results as generated Python (:func:`generate`): one straight-line function
per argument structure instead of a recursive walk of the builder nodes at every call.

The nodes are :class:`~._capture_tree.OutWalk`'s (see :func:`~._capture_tree.build`, the reference semantics,
still used for tests); the generated ``build(L, O)`` (``L`` the graph's outputs, ``O`` the caller's objects by
number) makes the same objects: a new module tree with new ``Param`` wrappers (a tracked leaf for
``require_grad``, as ``Param.__init__`` makes it), new ``RunningState`` values written into the caller's cells,
new optimizer states. What ``Param``, ``RunningState``, ``Tensor.from_inner`` and ``require_grad`` do per object
is written out inline (one object creation and a few attribute stores each, no frames) where the node allows it:
a tensor made from a graph output; any other value goes through the real constructors.

It returns ``(result, pool)``: ``pool`` lists every object it made, so that the results can be flattened ahead
for the next call (:func:`ember.backend.step_tree.pool_spec`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ember import Float, Tensor
from ember.autodiff import Autodiff
from ember.backend.step_tree import CodeGen, copy_dclass, same_seq

__all__ = ["generate"]


class _Gen(CodeGen):
    def __init__(self, uses: dict[int, int]) -> None:
        super().__init__()
        self.ns.update({"_Float": Float, "_from_inner": Tensor.from_inner, "_copy_dclass": copy_dclass,
                        "_same_seq": same_seq})
        self._slots: dict[int, str] = {}
        self.uses = uses
        self.pool: list[str] = []

    def made(self, v: str) -> str:
        self.pool.append(v)
        return v

    # ------------------------------------------------------------------ tensors around graph outputs
    def _fast_lift(self, spec: tuple[Any, Any, bool]) -> bool:
        """Whether a lifted output's device runs the core's ``Autodiff`` ops (whose work is written out here)."""
        dev, _kind, lift = spec
        return lift and dev.ops[Float.index].__class__ is Autodiff

    def tensor_out(self, j: int, spec: tuple[Any, Any, bool], node: str, v: str) -> None:
        """``v`` = the untracked tensor around output ``j``: ``Tensor(o, dev, kind)``, or on an autodiff device
        ``Tensor.from_inner(Tensor(o, dev.inner, Float), dev)``."""
        dev, kind, lift = spec
        if lift and not self._fast_lift(spec):
            self.emit(f"{v} = _from_inner(_Tensor(L[{j}], {self.const(dev.inner)}, _Float), {self.const(dev)})")
            return
        prim = f"L[{j}]"
        if lift:
            prim = self.var()
            self.emit(f"{prim} = _new(_AP); {prim}.p = L[{j}]; {prim}.node = {node}")
        self.emit(f"{v} = _new(_Tensor); {v}.primitive = {prim}; {v}.device = {self.const(dev)}; "
                  f"{v}.kind = {self.const(kind)}; {v}.ops = {self.const(dev.ops[kind.index])}")

    def held(self, child: Any, track: bool | None) -> str:
        """The tensor a ``Param`` (``track``: its ``require_grad``) or a ``RunningState`` (``track=None``) holds
        for the node ``child``, as their constructors make it: the same tensor, unless it is a Float tensor on an
        autodiff device, which becomes a new tensor holding the same array (a tracked leaf for a ``Param`` that
        requires gradients; untracked otherwise). A child other than a graph output: ``""`` (the caller uses the
        real constructor)."""
        if child[0] != "out":
            return ""
        _tag, j, spec, slot = child
        if not spec[2]:  # not a Float tensor on an autodiff device: Param / RunningState keep the tensor itself
            return self.node(child)
        if not self._fast_lift(spec):
            return ""
        if self.uses.get(slot, 0) > 1:  # the untracked tensor is also held elsewhere: made as well
            self.node(child)
        v = self.made(self.var())
        self.tensor_out(j, spec, "_leaf()" if track else "None", v)
        return v

    # ------------------------------------------------------------------ nodes
    def node(self, n: Any) -> str:  # noqa: C901 - one branch per node kind
        tag = n[0]
        if tag == "in":
            return f"O[{n[1]}]"
        if tag == "const":
            return self.const(n[1])
        if tag == "raw":
            return f"L[{n[1]}]"
        if tag == "seq":
            like, es = n[1], [self.node(x) for x in n[2]]
            if like.__class__ is list:
                return f"[{', '.join(es)}]"
            if like.__class__ is tuple:
                return f"({''.join(e + ', ' for e in es)})"
            return f"_same_seq({self.const(like)}, [{', '.join(es)}])"
        if tag == "dict":
            return "{" + ", ".join(f"{self.const(k)}: {self.node(x)}" for k, x in n[1]) + "}"
        slot = n[-1]
        done = self._slots.get(slot)
        if done is not None:
            return done
        v = f"s{slot}"
        if tag == "out":
            self.tensor_out(n[1], n[2], "None", v)
        elif tag == "param":
            _t, pid, rg, child, _s = n
            t = self.held(child, bool(rg))
            if t:
                self.emit(f"{v} = _new(_Param); _Pid({v}, {self.const(pid)}); _Prg({v}, {bool(rg)!r}); _Pt({v}, {t})")
            else:
                self.emit(f"{v} = _Param({self.node(child)}, {self.const(pid)}, {bool(rg)!r})")
        elif tag == "state":
            _t, pid, child, _s = n
            t = self.held(child, None)
            if t:
                self.emit(f"{v} = _new(_RS); _RSid({v}, {self.const(pid)}); _RSt({v}, {t})")
            else:
                self.emit(f"{v} = _RS({self.node(child)}, {self.const(pid)})")
        elif tag == "module":
            _t, template, fields, _s = n
            vals = {f: self.node(x) for f, x in fields}
            # rebuild_module: the template's __dict__ in its order, the fields replaced (new ones appended)
            items = [(k, vals.pop(k) if k in vals else self.const(x)) for k, x in template.__dict__.items()]
            items += list(vals.items())
            body = ", ".join(f"{k!r}: {e}" for k, e in items)
            self.emit(f"{v} = _new({self.const(template.__class__)}); _set({v}, '__dict__', {{{body}}})")
        elif tag == "grads":
            body = ", ".join(f"{self.const(pid)}: {self.node(x)}" for pid, x in n[1])
            self.emit(f"{v} = _GP(); {v}._grads = {{{body}}}")
        else:  # dclass
            _t, template, fields, _s = n
            body = ", ".join(f"{f!r}: {self.node(x)}" for f, x in fields)
            self.emit(f"{v} = _copy_dclass({self.const(template)}, {{{body}}})")
        self._slots[slot] = v
        return self.made(v)


def _count(n: Any, uses: dict[int, int], seen: set[int]) -> None:
    """How many times each slot node is referred to (a node met twice is one object referred to twice)."""
    tag = n[0]
    if tag in ("in", "const", "raw"):
        return
    if tag == "seq":
        for x in n[2]:
            _count(x, uses, seen)
        return
    if tag == "dict":
        for _k, x in n[1]:
            _count(x, uses, seen)
        return
    slot = n[-1]
    uses[slot] = uses.get(slot, 0) + 1
    if slot in seen:
        return
    seen.add(slot)
    if tag == "param":
        _count(n[3], uses, seen)
    elif tag == "state":
        _count(n[2], uses, seen)
    elif tag in ("module", "grads", "dclass"):
        for _f, x in n[2] if tag != "grads" else n[1]:
            _count(x, uses, seen)


def generate(result: Any, cells: list[tuple[int, Any]], optims: list[tuple[int, list[tuple[Any, Any]]]]
             ) -> tuple[Callable[[Any, list[Any]], tuple[Any, list[Any]]], str]:
    """The function ``build(L, O) -> (result, pool)`` for the builder nodes of a capture, which also writes the
    state back: ``cells`` ``(n, tensor node)`` into the caller's running-state cell ``O[n]``, ``optims``
    ``(n, [(ParamId, state node), ...])`` as the new ``_states`` of the caller's optimizer ``O[n]``. Returns the
    function and its source (for debugging)."""
    uses: dict[int, int] = {}
    seen: set[int] = set()
    _count(result, uses, seen)
    for _n, node in cells:
        _count(node, uses, seen)
    for _n, states in optims:
        for _pid, node in states:
            _count(node, uses, seen)
    g = _Gen(uses)
    r = g.node(result)  # the results first: the state written back may refer to their objects
    if r.startswith(("[", "(", "{", "_same_seq")):
        g.emit(f"r = {r}")
        r = "r"
    for n, node in cells:
        g.emit(f"_RSt(O[{n}], {g.node(node)})")
    for n, states in optims:
        body = ", ".join(f"{g.const(pid)}: {g.node(node)}" for pid, node in states)
        g.emit(f"O[{n}]._states = {{{body}}}")
    return g.function("build(L, O)", f"{r}, [{', '.join(g.pool)}]", "<ember_torch.compile output>")
