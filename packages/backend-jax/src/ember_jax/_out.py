"""The results of a compiled step: walked once while tracing, rebuilt by generated code at every call.

While jax traces the step, :class:`OutWalk` walks what the step returned plus the state to write back (new
``RunningState`` values, the optimizers' per-parameter states, the advanced PRNG keys) and collects the
tracers to return from the compiled program. :func:`generate` then writes the Python function that rebuilds
the Ember objects from the program's output arrays: straight-line code, one statement per object, generated
once per argument structure (jax does not re-run the step's Python on later calls, so the structure of the
results must be recorded now). Inputs returned unchanged come back as the caller's own objects (the same
module, the same running-state cell, the same optimizer).

Result tensors come back as fresh values: on an ``Autodiff`` device a tracked tensor becomes a new leaf
(``require_grad``), an untracked one stays untracked; the graph never crosses the call.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import jax
import numpy as np

from ember import Float, Tensor
from ember.autodiff import Gradients
from ember.backend import Device
from ember.backend.contract import AutodiffPrimitive
from ember.backend.step_tree import CodeGen, Rebuild, number_tensor
from ember.module import Module, Param, RunningState
from ember.optim import GradientsParams, Optimizer

from ._devices import ForeignTensor, device_info
from ._in_place import pair_module
from ._kernel import is_tracer

__all__ = ["OutWalk", "generate", "pair_states"]

_SAFE_STATIC = (int, float, bool, str, bytes, complex, type(None), type, range, slice)


class OutWalk:
    """Walks the step's results into nodes and output tracers (``leaves``)."""

    def __init__(self, rb: Rebuild, keep_out: frozenset[int] = frozenset()) -> None:
        # inputs returned as they are come back as the caller's objects, except those whose buffers are donated
        self.inputs = {id(o): n for n, o in enumerate(rb.inner) if o is not None and n not in keep_out}
        self.leaves: list[Any] = []
        self._leaf_ix: dict[int, int] = {}
        self._memo: dict[int, int] = {}
        self._keep: list[Any] = []  # new objects stay alive while walking, so their ids stay unique
        self._numbers: dict[Any, Any] = {}
        #: new optimizer-state tensors written into the caller's tensor objects (see :meth:`state_in_place`):
        #: id -> the caller's object number
        self._into: dict[int, int] = {}
        self._used: set[int] = set()  # the caller's objects the nodes walked so far hand back

    # ------------------------------------------------------------------ leaves
    def leaf(self, p: Any) -> int:
        i = self._leaf_ix.get(id(p))
        if i is None:
            i = self._leaf_ix[id(p)] = len(self.leaves)
            self.leaves.append(p)
        return i

    def _memoize(self, x: Any) -> tuple[int, Any] | tuple[None, Any]:
        n = self.inputs.get(id(x))
        if n is None:
            n = self._into.get(id(x))
        if n is not None:
            self._used.add(n)
            return None, ("IN", n)
        k = self._memo.get(id(x))
        if k is not None:
            return None, ("REF", k)
        k = self._memo[id(x)] = len(self._memo)
        self._keep.append(x)
        return k, None

    def reserve(self, x: Any) -> None:
        """Give the new tensors of an optimizer state the first output positions, before the results are walked.

        jax pairs each donated input buffer with the first output of the same shape and dtype, in output order:
        with the new states first, each donated state buffer is reused for its own new value (an update in
        place), instead of for a same-shaped model parameter listed earlier, which leaves the states to be
        allocated anew."""
        c = x.__class__
        if c is dict:
            for v in x.values():
                self.reserve(v)
        elif c is list or c is tuple:
            for v in x:
                self.reserve(v)
        elif c is Tensor and id(x) not in self.inputs:
            p = x.primitive
            self.leaf(p.p if p.__class__ is AutodiffPrimitive else p)

    # ------------------------------------------------------------------ expressions of the generated code
    def expr(self, x: Any) -> str | None:
        """The generated code's name for an object walked here (``O[n]`` an input, ``s<k>`` a new object)."""
        n = self.inputs.get(id(x))
        if n is None:
            n = self._into.get(id(x))
        if n is not None:
            return f"O[{n}]"
        k = self._memo.get(id(x))
        return None if k is None else f"s{k}"

    def fast_entry(self, spec: tuple[Any, bool, list[Any], list[Any]]) -> tuple[str, list[str], list[str]] | None:
        """``(structure, object expressions, leaf expressions)`` of a :func:`~ember.backend.step_tree.fast_spec`,
        or ``None`` when an object of it was not walked here."""
        node, _free, objs, leaves = spec
        exprs = [self.expr(o) for o in objs]
        if any(e is None for e in exprs):
            return None
        owner: dict[int, str] = {}
        for o, e in zip(objs, exprs):
            if isinstance(o, Tensor):
                p = o.primitive
                if p.__class__ is AutodiffPrimitive:
                    owner.setdefault(id(p.p), f"{e}.primitive.p")
                else:
                    owner.setdefault(id(p), f"{e}.primitive")
        lexprs = []
        for p in leaves:
            i = self._leaf_ix.get(id(p))
            e = f"L[{i}]" if i is not None else owner.get(id(p))
            if e is None:
                return None
            lexprs.append(e)
        return node, exprs, lexprs  # type: ignore[return-value]

    def guard_exprs(self, guards: list[tuple[Any, Any]]) -> tuple[list[str], list[str]] | None:
        """The expressions of the ``(cell, tensor)`` guards of a fast spec
        (:func:`~ember.backend.step_tree.cell_guards`): the cells and the tensors they must still hold; ``None``
        when one was not walked here."""
        cells = [self.expr(c) for c, _t in guards]
        tensors = [self.expr(t) for _c, t in guards]
        if any(e is None for e in cells) or any(e is None for e in tensors):
            return None
        return cells, tensors  # type: ignore[return-value]

    # ------------------------------------------------------------------ nodes
    def walk(self, x: Any, path: str) -> Any:
        if isinstance(x, Tensor):
            return self.tensor(x, path)
        if isinstance(x, (Param, RunningState, Module, GradientsParams, Optimizer)):
            k, seen = self._memoize(x)
            if seen is not None:
                return seen
            if isinstance(x, Param):
                t = x._tensor
                val = self.tensor(t, path) if isinstance(t, Tensor) else self.walk(t, path)
                return ("P", k, x.id, x.require_grad, val)
            if isinstance(x, RunningState):
                return ("RS", k, x.id, self.tensor(x._tensor, path))
            if isinstance(x, Module):
                items = [(f, self.walk(v, f"{path}.{f}") if f in x.__class__.__ember_fields__ else ("C", v))
                         for f, v in x.__dict__.items()]
                return ("M", k, x.__class__, tuple(items))
            if isinstance(x, GradientsParams):
                return ("G", k, tuple((pid, self.tensor(t, f"{path}[{pid}]")) for pid, t in x._grads.items()))
            raise TypeError(
                f"ember_jax.jit: the step returned an Optimizer created inside it ({path}); pass the optimizer "
                "in as an argument (its state is written back after the call) and return that one, or nothing."
            )
        if x is None or x.__class__ in _SAFE_STATIC:
            return ("C", x)
        if isinstance(x, (list, tuple)):
            return ("SEQ", x.__class__, tuple(self.walk(v, f"{path}[{i}]") for i, v in enumerate(x)))
        if isinstance(x, dict):
            return ("DICT", x.__class__, tuple(x), tuple(self.walk(v, f"{path}[{k!r}]") for k, v in x.items()))
        if isinstance(x, jax.Array) or is_tracer(x):
            return ("A", self.leaf(x))
        if isinstance(x, Gradients):
            raise TypeError(
                f"ember_jax.jit: the step returned an ember.autodiff.Gradients ({path}); it is keyed by graph "
                "leaves that exist only inside the call. Return GradientsParams.from_grads(grads, model) instead."
            )
        if dataclasses.is_dataclass(x) and not isinstance(x, type):
            names = tuple(f.name for f in dataclasses.fields(x))
            d = getattr(x, "__dict__", None)
            base = None if d is None else tuple((k, v) for k, v in d.items() if k not in names)
            return ("DC", x.__class__, base,
                    tuple((f, self.walk(getattr(x, f), f"{path}.{f}")) for f in names))
        if isinstance(x, np.ndarray):
            return ("C", x)
        if holds_ember(x):
            raise TypeError(
                f"ember_jax.jit: the step returned a {type(x).__name__} ({path}) holding tensors; only tensors, "
                "modules, params, running states, GradientsParams, optimizers, dataclasses, lists, tuples, dicts "
                "and plain values can leave a compiled step. Make it a dataclass, or return its tensors."
            )
        return ("C", x)

    def tensor(self, t: Any, path: str) -> Any:
        k, seen = self._memoize(t)
        if seen is not None:
            return seen
        dev = t.device
        try:
            ad, _b = device_info(dev, t)
        except ForeignTensor:
            raise TypeError(
                f"ember_jax.jit: the step returned a tensor on {dev} ({path}); results must be tensors of the jax "
                "backend (move them after the call instead)."
            ) from None
        p = t.primitive
        kind = t.kind
        if ad and kind is Float:
            flag = 1 if p.node is None else 2
            p = p.p
        else:
            flag = 0
        return ("T", k, self.leaf(p), dev, kind, flag)

    def state_in_place(self, old: Any, new: Any, memo: dict[int, int]) -> list[tuple[int, int]] | None:
        """The writes that turn an optimizer's state ``old`` (the caller's, its objects numbered by ``memo``) into
        ``new`` (the step's) by giving each of the caller's state tensors its new array: ``(object number, output
        index)`` pairs, or ``None`` when the two do not pair up one to one (another layout, a Python number, a
        tracked tensor, a tensor also among the results).

        The optimizer never hands its state tensors out (``optim.state(id)`` and ``to_record()`` copy), so
        writing their arrays is invisible to the user; it saves building (and freeing) a new state tree per call
        and keeps ``optim._states`` the same dict holding the same tensors (the next call's fast path finds them
        as they are)."""
        pairs: dict[int, Any] = {}
        if not pair_states(old, new, memo, pairs, {}):
            return None
        writes: list[tuple[int, int]] = []
        for n, t in pairs.items():
            if id(t) in self._memo or n in self._used:  # a result holds the new tensor, or the caller's one
                return None
            held = self.inputs.get(id(t))
            if held is not None and held != n:
                return None
        for n, t in pairs.items():
            if id(t) not in self.inputs:  # an input returned as it is needs no write
                self._into[id(t)] = n
                writes.append((n, self.leaf(t.primitive)))
        return writes

    def module_in_place(self, old: Any, new: Any, memo: dict[int, int], caller: list[Any]
                        ) -> list[tuple[int, int, bool]] | None:
        """The writes that turn the caller's donated module ``old`` (its objects numbered by ``memo``, listed in
        ``caller``) into the step's ``new`` by giving each of the caller's tensors its new array: ``(tensor number,
        output index, wrapped)``; ``wrapped``: the tensor is a Float tensor on an ``Autodiff`` device, whose
        ``AutodiffPrimitive`` keeps its graph node (a tracked parameter stays the same leaf, as a parameter updated
        in place) and gets the new inner array. ``None`` when the trees do not pair up one to one
        (:func:`~._in_place.pair_module`), two caller tensors share one wrapper, or an object of ``new`` was already
        handed out otherwise. Call before walking the results: the walk then hands the caller's objects back for
        the new ones."""
        objs: dict[int, int] = {}
        tensors: dict[int, Any] = {}
        if not pair_module(old, new, memo, objs, tensors):
            return None
        for i, n in objs.items():
            held = self.inputs.get(i)
            if (held is not None and held != n) or i in self._memo or i in self._into or n in self._used:
                return None
        wrappers = [caller[n].primitive for n in tensors if caller[n].primitive.__class__ is AutodiffPrimitive]
        if len({id(w) for w in wrappers}) != len(wrappers):
            return None
        writes: list[tuple[int, int, bool]] = []
        for n, t in tensors.items():
            p = t.primitive
            if p.__class__ is AutodiffPrimitive:
                writes.append((n, self.leaf(p.p), True))
            else:
                writes.append((n, self.leaf(p), False))
        self._into.update(objs)
        return writes

    def state(self, x: Any, dev: Device | None, path: str) -> Any:
        """An optimizer state: a Python int/float next to tensors becomes an Int/Float ``[1]`` tensor on their
        device (it stays a tensor in the optimizer afterwards)."""
        c = x.__class__
        if c is dict:
            d = _first_device(x.values()) or dev
            return ("DICT", dict, tuple(x), tuple(self.state(v, d, f"{path}[{k!r}]") for k, v in x.items()))
        if c is list or c is tuple:
            d = _first_device(x) or dev
            return ("SEQ", c, tuple(self.state(v, d, f"{path}[{i}]") for i, v in enumerate(x)))
        if (c is int or c is float) and dev is not None:
            key = (c, x, dev)  # equal numbers (the first step's counters) become one shared tensor
            t = self._numbers.get(key)
            if t is None:
                t = self._numbers[key] = number_tensor(x, dev)
            return self.tensor(t, path)
        return self.walk(x, path)


def pair_states(old: Any, new: Any, memo: dict[int, int], pairs: dict[int, Any], back: dict[int, int]) -> bool:
    """Pair the caller's state tensors (by object number) with the step's new ones, position by position: the same
    dict keys, sequence lengths and ``None`` s, and each caller tensor with one new tensor of its device and kind
    (untracked on both sides), one to one."""
    c = old.__class__
    if c is not new.__class__:
        return False
    if c is dict:
        return len(old) == len(new) and all(
            k1 == k2 and pair_states(a, b, memo, pairs, back)
            for (k1, a), (k2, b) in zip(old.items(), new.items()))
    if c is list or c is tuple:
        return len(old) == len(new) and all(pair_states(a, b, memo, pairs, back) for a, b in zip(old, new))
    if c is Tensor:
        if (old.device != new.device or old.kind is not new.kind or old.primitive.__class__ is AutodiffPrimitive
                or new.primitive.__class__ is AutodiffPrimitive):
            return False
        n = memo.get(id(old))
        if n is None:
            return False
        seen = pairs.get(n)
        if seen is None:
            if back.setdefault(id(new), n) != n:
                return False
            pairs[n] = new
            return True
        return seen is new
    return old is None and new is None


def _first_device(xs: Any) -> Device | None:
    for v in xs:
        if isinstance(v, Tensor):
            return v.device
    return None


def holds_ember(x: Any, depth: int = 2) -> bool:
    """Whether a plain object holds Ember objects or tracers in its attributes (``__dict__`` or ``__slots__``) or
    in containers there, looking ``depth`` levels down: returned as a constant it would leak tracers, taken as a
    static argument its tensors would be frozen into the program."""
    if isinstance(x, (Tensor, Param, RunningState, Module, GradientsParams, Gradients)) or is_tracer(x):
        return True
    if depth == 0:
        return False
    if isinstance(x, (list, tuple)):
        return any(holds_ember(v, depth - 1) for v in x)
    if isinstance(x, dict):
        return any(holds_ember(v, depth - 1) for v in x.values())
    values = list(getattr(x, "__dict__", {}).values())
    for cls in type(x).__mro__:
        for name in cls.__dict__.get("__slots__", ()):
            if isinstance(name, str) and hasattr(x, name):
                values.append(getattr(x, name))
    return any(holds_ember(v, depth - 1) for v in values)


# ---------------------------------------------------------------------- code generation
class _Gen(CodeGen):
    """The core's generated-builder namespace and helpers (:class:`~ember.backend.step_tree.CodeGen`, shared
    with ``ember_torch.compile``), with jax's output nodes."""

    def node(self, n: Any) -> str:  # noqa: C901 - one branch per node kind
        tag = n[0]
        if tag == "IN":
            return f"O[{n[1]}]"
        if tag == "REF":
            return f"s{n[1]}"
        if tag == "C":
            return self.const(n[1])
        if tag == "A":
            return f"L[{n[1]}]"
        if tag == "T":
            _t, k, i, dev, kind, flag = n
            v = f"s{k}"
            if flag:
                a = self.var()
                node = self.leaf() if flag == 2 else "None"
                self.emit(f"{a} = _new(_AP); {a}.p = L[{i}]; {a}.node = {node}")
                prim = a
            else:
                prim = f"L[{i}]"
            ops = dev.ops[kind.index]
            self.emit(f"{v} = _new(_Tensor); {v}.primitive = {prim}; {v}.device = {self.const(dev)}; "
                      f"{v}.kind = {self.const(kind)}; {v}.ops = {self.const(ops)}")
            return v
        if tag == "P":
            _t, k, pid, rg, tn = n
            t = self.node(tn)
            v = f"s{k}"
            self.emit(f"{v} = _new(_Param); _Pid({v}, {self.const(pid)}); _Prg({v}, {rg!r}); _Pt({v}, {t})")
            return v
        if tag == "RS":
            _t, k, pid, tn = n
            t = self.node(tn)
            v = f"s{k}"
            self.emit(f"{v} = _new(_RS); _RSid({v}, {self.const(pid)}); _RSt({v}, {t})")
            return v
        if tag == "M":
            _t, k, cls, items = n
            vals = [(f, self.node(x)) for f, x in items]
            v = f"s{k}"
            body = ", ".join(f"{f!r}: {e}" for f, e in vals)
            self.emit(f"{v} = _new({self.const(cls)}); _set({v}, '__dict__', {{{body}}})")
            return v
        if tag == "G":
            _t, k, items = n
            vals = [(self.const(pid), self.node(x)) for pid, x in items]
            v = f"s{k}"
            body = ", ".join(f"{p}: {e}" for p, e in vals)
            self.emit(f"{v} = _new(_GP); {v}._grads = {{{body}}}")
            return v
        if tag == "SEQ":
            _t, cls, items = n
            if cls is tuple:
                value = _constant_tuple(n)
                if value is not None:  # a module's static tuple (a stride, a shape): the same object every call
                    return self.const(value)
            es = [self.node(x) for x in items]
            v = self.var()
            if cls is list:
                self.emit(f"{v} = [{', '.join(es)}]")
            elif cls is tuple:
                self.emit(f"{v} = ({''.join(e + ', ' for e in es)})")
            elif hasattr(cls, "_fields"):
                self.emit(f"{v} = {self.const(cls)}({', '.join(es)})")
            else:
                self.emit(f"{v} = {self.const(cls)}(({''.join(e + ', ' for e in es)}))")
            return v
        if tag == "DICT":
            _t, cls, keys, items = n
            kvs = [(self.const(key), self.node(x)) for key, x in zip(keys, items)]
            body = ", ".join(f"{key}: {e}" for key, e in kvs)
            v = self.var()
            if cls is dict:
                self.emit(f"{v} = {{{body}}}")
            else:
                self.emit(f"{v} = {self.const(cls)}({{{body}}})")
            return v
        if tag == "DC":
            _t, cls, base, fields = n
            fes = [(f, self.node(x)) for f, x in fields]
            v = self.var()
            self.emit(f"{v} = _new({self.const(cls)})")
            if base is not None:
                body = ", ".join([f"{f!r}: {self.const(x)}" for f, x in base] + [f"{f!r}: {e}" for f, e in fes])
                self.emit(f"_set({v}, '__dict__', {{{body}}})")
            else:
                for f, e in fes:
                    self.emit(f"_set({v}, {f!r}, {e})")
            return v
        raise AssertionError(f"unknown output node {tag!r}")


def _constant_tuple(n: Any) -> tuple[Any, ...] | None:
    """The value of a ``("SEQ", tuple, items)`` node whose items are all immutable constants (plain values of
    :data:`_SAFE_STATIC`, or such tuples), else ``None``."""
    out: list[Any] = []
    for x in n[2]:
        if x[0] == "C" and x[1].__class__ in _SAFE_STATIC:
            out.append(x[1])
        elif x[0] == "SEQ" and x[1] is tuple:
            v = _constant_tuple(x)
            if v is None:
                return None
            out.append(v)
        else:
            return None
    return tuple(out)


_INDEXED = re.compile(r"([OL])\[(\d+)\]")


def _list_expr(exprs: list[str]) -> str:
    """A list display of ``exprs`` where runs of consecutive ``O[i]`` / ``L[i]`` are slices (copied by C code, not
    one subscript per item): ``[O[3], O[4], O[5], s1]`` -> ``[*O[3:6], s1]``, a single run -> ``O[3:6]``."""
    parts: list[str] = []
    run: tuple[str, int, int] | None = None  # (list name, start, stop)

    def close() -> None:
        if run is not None:
            name, a, b = run
            parts.append(f"{name}[{a}]" if b == a + 1 else f"*{name}[{a}:{b}]")

    for e in exprs:
        m = _INDEXED.fullmatch(e)
        if m is not None and run is not None and run[0] == m[1] and run[2] == int(m[2]):
            run = (run[0], run[1], run[2] + 1)
            continue
        close()
        run = None
        if m is not None:
            run = (m[1], int(m[2]), int(m[2]) + 1)
        else:
            parts.append(e)
    close()
    if len(parts) == 1 and parts[0].startswith("*"):
        return parts[0][1:]
    return f"[{', '.join(parts)}]"


def generate(
    result: Any, cells: list[tuple[int, Any]], optims: list[tuple[int, Any]], keys: list[tuple[Any, int]],
    fast: list[tuple[str, Any, Any]] = (),  # type: ignore[assignment]
    writes: list[tuple[int, int, bool]] = (),  # type: ignore[assignment]
) -> tuple[Any, str]:
    """The function ``build(L, O) -> (result, fast)`` (``L`` the program's outputs, ``O`` the caller's objects
    by number) that also writes the state back: ``cells`` ``(n, tensor node)``, ``optims`` ``(n, states node)`` or
    ``(n, ("INTO", [(caller's tensor number, output index), ...]))`` (:meth:`OutWalk.state_in_place`),
    ``keys`` ``(KeyState, leaf index)``. ``fast`` lists the results flattened ahead: ``("module", object
    expression, (structure, position independent, object exprs, leaf exprs, cell exprs, cell value exprs))``
    or ``("optim", n, (structure,
    object exprs, leaf exprs, position))``, ``position`` being the (objects, leaves) counts the states must
    follow, or None; ``build`` returns them keyed by object id for the next call's flatten (see
    :func:`~ember.backend.step_tree.fast_spec`). ``writes`` give the caller's tensors of a donated module their
    new arrays (:meth:`OutWalk.module_in_place`), first. Returns the function and its source (for debugging)."""
    g = _Gen()
    for t, i, wrapped in writes:
        g.emit(f"O[{t}].primitive.p = L[{i}]" if wrapped else f"O[{t}].primitive = L[{i}]")
    # the results first: the walk met them first, so the state written back may refer to their objects
    r = g.node(result)
    for n, tn in cells:
        g.emit(f"_RSt(O[{n}], {g.node(tn)})")
    for n, sn in optims:
        if sn[0] == "INTO":  # the caller's state tensors get their new arrays (OutWalk.state_in_place)
            for t, i in sn[1]:
                g.emit(f"O[{t}].primitive = L[{i}]")
        else:
            g.emit(f"O[{n}]._states = {g.node(sn)}")
    for ks, i in keys:
        g.emit(f"{g.const(ks)}.key = L[{i}]")
    items = []
    for kind, who, spec in fast:
        if kind == "module":
            node, free, objs, leaves, cells, values = spec
            guard = f"({''.join(f'{c}, ' for c in cells)}), ({''.join(f'{t}, ' for t in values)})"
            items.append(f"id({who}): ({who}, {g.const(node)}, {free!r}, {_list_expr(objs)}, {_list_expr(leaves)}, "
                         f"{guard})")
        else:
            node, objs, leaves, pos = spec
            o = f"O[{who}]"
            items.append(f"id({o}): ({o}, {o}._states, tuple({o}._states.values()), {g.const(node)}, "
                         f"{_list_expr(objs)}, {_list_expr(leaves)}, {pos!r})")
    return g.function("build(L, O)", f"{r}, {{{', '.join(items)}}}", "<ember_jax.jit output>")
