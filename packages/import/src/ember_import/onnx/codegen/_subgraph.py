"""Tracing a sub-graph (an ``If`` branch, a ``Loop`` or ``Scan`` body) into lines of its own, for the
generated methods of :mod:`._control`.

The sub-graph's nodes run through :func:`~._run.convert_node` (nested control flow included) with the lines,
the host reads and the traced values of the enclosing scope saved and restored around it; its inputs are fresh
traced stand-ins (:func:`param`: a parameter of the method), and every variable of the enclosing scope its lines
use is found afterwards (:attr:`Body.free`) and passed to the method explicitly. :func:`trace_fixed` traces a
loop body until the shapes of its loop-carried values settle: a dim the body changes is a run-time size.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ember import Tensor

from .._ir import Graph, Node
from ._errors import ModelGenError
from ._gen import Gen
from ._gen_state import Line
from ._optval import OptVal
from ._run import convert_node
from ._seqs import SeqVal, seq_arg
from ._sym import Parts, Sym, Var
from ._trace import untraced

__all__ = [
    "Body",
    "copy_value",
    "forward_dims",
    "is_dynamic",
    "merge_free",
    "param",
    "shape_of",
    "trace",
    "trace_fixed",
    "uses",
    "vars_in",
]


@dataclasses.dataclass
class Body:
    """One traced sub-graph: its lines, its outputs (shadow values, source, dims) and the values it reads from
    the enclosing scope (``free``)."""

    lines: list[Line]
    outs: list[Any]
    out_parts: list[Parts]
    out_dims: list[tuple[Any, ...] | None]
    free: list[Var]
    consts: list[Any]


def is_dynamic(g: Gen, v: Any) -> bool:
    """Whether ``v`` is traced, holds ``Sym`` elements or is a run-time sequence or optional."""
    if isinstance(v, (SeqVal, OptVal)):
        return True
    if isinstance(v, Tensor):
        return g.is_traced(v) or id(v) in g.host_syms
    if isinstance(v, (list, tuple)):
        return any(is_dynamic(g, x) for x in v)
    return isinstance(v, Sym)


def vars_in(parts: Any) -> list[Var]:
    """The :class:`~._sym.Var`\\ s in ``parts``, ``Sym`` expressions and nested lists included."""
    out: list[Var] = []
    for p in parts:
        if isinstance(p, Sym):
            out.extend(vars_in(p.parts))
        elif isinstance(p, Var):
            out.append(p)
        elif isinstance(p, (list, tuple)):
            out.extend(vars_in(p))
    return out


def copy_value(t: Tensor) -> Tensor:
    """A new host tensor holding ``t``'s data (untraced): a stand-in of its own."""
    with untraced():
        return Tensor.from_data(t.to_data(), t.device, dtype=t.dtype)


def shape_of(t: Tensor) -> list[int]:
    """``t``'s shape as ints (untraced)."""
    with untraced():
        return [int(d) for d in t.shape]


def forward_dims(g: Gen, t: Tensor) -> tuple[Any, ...]:
    """``t``'s dims as the enclosing code knows them (``Sym``\\ s for run-time sizes)."""
    return g.sym_shapes.get(id(t)) or tuple(shape_of(t))


def param(g: Gen, node: Node, name: str, value: Any, dyn_axes: set[int] | None = None) -> tuple[Var, Any]:
    """A fresh traced stand-in of ``value`` held by a parameter named after ``name``: a dim is a run-time size
    (``name.shape[i]``) where it is one in the enclosing scope or listed in ``dyn_axes``; a sequence is a
    :class:`~._seqs.SeqVal` (a list of run-time length), an optional an :class:`~._optval.OptVal`."""
    if isinstance(value, OptVal):
        var = g.new_var(name)
        inner = SeqVal(var, value.inner.elem) if isinstance(value.inner, SeqVal) else value.inner
        return var, OptVal(var, inner)
    if isinstance(value, SeqVal) or (isinstance(value, list) and all(isinstance(x, Tensor) for x in value)):
        var = g.new_var(name)
        elem = value.elem if isinstance(value, SeqVal) else value[0] if value else None
        return var, SeqVal(var, elem)
    if not isinstance(value, Tensor):
        raise ModelGenError(
            f"{node.where()}: {name!r:.80} is a {type(value).__name__} (a sequence or an optional) "
            "crossing a sub-graph; generated code carries tensors only there. Use "
            "ember_import.onnx.load_model."
        )
    var = g.new_var(name)
    t = copy_value(value)
    src = forward_dims(g, value) if g.is_traced(value) else tuple(shape_of(value))
    dims = tuple(
        Sym(int(d), (var, f".shape[{i}]")) if isinstance(d, Sym) or i in (dyn_axes or ()) else int(d)
        for i, d in enumerate(src)
    )
    g.bind(t, var, dims)
    return var, t


def trace(g: Gen, ctx: Any, node: Node, graph: Graph, params: list[tuple[str, Tensor]], device: Var) -> Body:
    """Trace ``graph``'s nodes into lines of their own, its inputs bound to ``params`` (name, stand-in)."""
    saved = (
        g.lines,
        g.reads,
        g.env,
        g.node,
        g.device_var,
        dict(g.traced),
        dict(g.sym_shapes),
        dict(g.host_syms),
        dict(g._weight_vals),
        dict(g.materialized),  # a host constant written into these lines is not defined after them
    )
    # taken before a call re-binds a returned input
    params_vars = {
        id(v.var) if isinstance(v, (SeqVal, OptVal)) else id(g.traced[id(v)][1])
        for _, v in params
        if isinstance(v, (SeqVal, OptVal)) or g.is_traced(v)
    }
    g.lines, g.reads, g.device_var = [], [], device
    g.env = dict(g.env)
    try:
        for name, data in graph.initializers.items():
            with untraced():
                g.env[name] = Tensor.from_data(data, ctx.host, dtype=data.dtype)
        for info, (_, value) in zip(graph.inputs, params):
            g.env[info.name] = value
        for n in graph.nodes:
            convert_node(g, ctx, n)
        outs = [g.value(o.name) for o in graph.outputs]
        for o, v in zip(graph.outputs, outs):
            if not isinstance(v, (Tensor, SeqVal, OptVal, type(None))) and not (
                isinstance(v, list) and all(isinstance(x, Tensor) for x in v)
            ):
                raise ModelGenError(
                    f"{node.where()}: sub-graph output "
                    f"{o.name!r:.80} is a {type(v).__name__}; generated code carries tensors, lists of them "
                    "and None out of a sub-graph. Use ember_import.onnx.load_model."
                )
        consts = [scalar_value(v) if isinstance(v, Tensor) and not is_dynamic(g, v) else None for v in outs]
        out_parts = [seq_arg(g, v) for v in outs]
        out_dims: list[tuple[Any, ...] | None] = [forward_dims(g, v) if isinstance(v, Tensor) else None for v in outs]
        lines = g.lines
    finally:
        (
            g.lines,
            g.reads,
            g.env,
            g.node,
            g.device_var,
            g.traced,
            g.sym_shapes,
            g.host_syms,
            g._weight_vals,
            g.materialized,
        ) = saved
    defined = {id(t) for ln in lines for t in ln.targets} | params_vars | {id(device)}
    free: list[Var] = []
    seen: set[int] = set()
    for v in vars_in([p for ln in lines for p in ln.parts] + [p for ps in out_parts for p in ps]):
        if id(v) in defined or id(v) in seen or v.name.startswith("self."):
            continue
        seen.add(id(v))
        free.append(v)
    return Body(lines, outs, out_parts, out_dims, free, consts)


def scalar_value(v: Tensor) -> Any:
    """The value of a one-element constant, else ``None``."""
    with untraced():
        return v.into_scalar() if v.num_elements() == 1 else None


def trace_fixed(
    g: Gen,
    ctx: Any,
    node: Node,
    graph: Graph,
    fixed: list[tuple[str, Tensor]],
    carried: list[tuple[str, Any]],
    rest: list[tuple[str, Tensor]],
    out_of: int,
    device: Var,
) -> tuple[Body, list[Var]]:
    """Trace a loop body whose inputs are ``fixed`` (already bound), the loop-carried values ``carried``
    (outputs ``out_of``...) and ``rest``; a carried dim the body changes is traced again as a run-time size.
    Returns the body and the carried parameters' variables."""
    dyn: list[set[int]] = [set() for _ in carried]
    seq_elems: list[Any] = [None for _ in carried]  # the element a body appends to a sequence that starts empty
    taken = set(g.var_names._taken)  # a retrace reuses the names of the attempt it replaces
    for _ in range(3):
        g.var_names._taken = set(taken)
        cvars, cvals = [], []
        for (name, v), axes, elem in zip(carried, dyn, seq_elems):
            var, t = param(g, node, name, v, axes)
            if isinstance(t, SeqVal) and t.elem is None:
                t.elem = elem
            cvars.append(var)
            cvals.append(t)
        body = trace(g, ctx, node, graph, [*fixed, *zip([n for n, _ in carried], cvals), *rest], device)
        changed = False
        for k, (v, axes) in enumerate(zip(cvals, dyn)):
            if isinstance(v, OptVal):  # a value or None: its type is the body's (the caller's annotation)
                continue
            if isinstance(v, SeqVal):  # a list: its elements' sizes are run-time sizes already
                out = body.outs[out_of + k]
                grown = out.elem if isinstance(out, SeqVal) else out[0] if isinstance(out, list) and out else None
                if v.elem is None and grown is not None and seq_elems[k] is None:
                    seq_elems[k] = grown
                    changed = True
                continue
            before, after = g.sym_shapes.get(id(v)) or tuple(shape_of(v)), body.out_dims[out_of + k]
            if after is None or len(after) != len(before):
                raise ModelGenError(
                    f"{node.where()}: the loop-carried value {carried[k][0]!r:.80} changes rank "
                    "across iterations; generated code needs a fixed rank. Use "
                    "ember_import.onnx.load_model."
                )
            for i, (b, a) in enumerate(zip(before, after)):
                if not isinstance(b, Sym) and (isinstance(a, Sym) or int(a) != int(b)):
                    axes.add(i)
                    changed = True
        if not changed:
            return body, cvars
    raise ModelGenError(
        f"{node.where()}: the shapes of its loop-carried values do not settle; use ember_import.onnx.load_model."
    )


def uses(lines: list[Line], out_parts: list[Parts], var: Var) -> bool:
    """Whether ``var`` appears in ``lines`` or ``out_parts``."""
    return any(v is var for v in vars_in([p for ln in lines for p in ln.parts] + [p for ps in out_parts for p in ps]))


def merge_free(*bodies: Body) -> list[Var]:
    """The free variables of ``bodies``, each once, in order."""
    out: list[Var] = []
    for b in bodies:
        out.extend(v for v in b.free if all(v is not w for w in out))
    return out
