"""Control flow in generated code: ``If``, ``Loop`` and ``Scan`` as Python control flow in generated methods.

A node whose condition, trip count or values are traced becomes one method of the generated module
(``def _loop_1(self, trip_count, y, x)``), called from ``forward`` with every value its sub-graph reads
passed explicitly (outer-scope tensors, sizes, the device). The sub-graphs are traced through the same converters
as ``forward`` (:func:`~._run.convert_node`, nested control flow included), into the method's own lines:

- ``If``: ``if bool(cond.into_scalar()):`` the then-branch's lines and ``return``, then the else-branch's;
- ``Loop``: ``while keep_going and step < trips:`` (``for step in range(trips)`` when the body's condition is
  constant) over the body's lines (its condition input is the constant ``True``: the body only runs while the
  condition holds), the condition and trip count read when the code runs, the loop-carried values reassigned
  and the scan outputs collected in lists and stacked (``Tensor.stack(..., 0)``), as ``onnx.reference.ops`` and
  the runtime converter (:mod:`..ops._control`) do;
- ``Scan`` (opset 9+): ``for step in range(xs.shape[axis]):`` over slices of the scan inputs (reversed for
  direction 1), the scan outputs stacked on ``scan_output_axes``.

The body is traced once with the loop-carried values' shapes; a dim the body changes is traced again as a
run-time size (``y.shape[0]``), so the code holds for every iteration. The values after the node get a static
dim only where every path through it gives the same size. A sequence carried through a ``Loop`` or returned
by a branch is a list of run-time length (:mod:`._seqs`); optionals crossing a sub-graph are refused
(:class:`ModelGenError`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from ember import DType, Tensor

from .._ir import Graph, Node
from ._errors import ModelGenError
from ._expr import literal
from ._gen import Gen
from ._gen_state import Line
from ._names import doc_text, identifier
from ._seqs import SEQUENCE_OPS, SeqVal, convert_sequence, seq_arg
from ._sym import Parts, Sym, Var, parts_text
from ._trace import untraced

__all__ = ["CONTROL_OPS", "Method", "convert_control", "wants_control"]

#: the ops written as control flow when traced values are involved
CONTROL_OPS = frozenset({"If", "Loop", "Scan"})


@dataclasses.dataclass
class Method:
    """A generated method: ``def name(self, params) -> returns:`` with ``doc`` and the lines ``body()`` gives
    (rendered when the source is written, once every variable has its final name)."""

    name: str
    params: list[tuple[Var, str]]
    returns: str
    doc: str
    body: Callable[[], list[str]]

    def lines(self) -> list[str]:
        params = ["self", *(f"{v.name}: {a}" for v, a in self.params)]
        head = f"def {self.name}({', '.join(params)}) -> {self.returns}:"
        if len(head) > 110:  # black's style: one parameter a line
            head = "\n".join([f"def {self.name}(", *(f"    {p}," for p in params), f") -> {self.returns}:"])
        return [*head.split("\n"), f'    """{self.doc}"""', *("    " + ln if ln else "" for ln in self.body())]


@dataclasses.dataclass
class _Body:
    """One traced sub-graph: its lines, its outputs (shadow values, source, dims) and the values it reads from
    the enclosing scope (``free``)."""

    lines: list[Line]
    outs: list[Any]
    out_parts: list[Parts]
    out_dims: list[tuple[Any, ...] | None]
    free: list[Var]
    consts: list[Any]


def wants_control(g: Gen, node: Node, args: list[Any]) -> bool:
    """Whether ``node`` (``If``/``Loop``/``Scan`` 9+) involves traced values: its inputs or what its
    sub-graphs read from the enclosing scope."""
    if node.op_type in SEQUENCE_OPS and any(isinstance(a, SeqVal) for a in args):
        return True
    if node.op_type not in CONTROL_OPS:
        return False
    names = [n for sub in node.subgraphs() for n in sub.outer if n in g.env]
    dynamic = any(_dynamic(g, v) for v in [*args, *(g.env[n] for n in names)])
    if dynamic and node.op_type == "Scan" and g.opset < 9:
        if any(isinstance(a, Tensor) and id(a) in g.sym_shapes for a in args):
            raise ModelGenError(
                f"{node.where()}: a Scan 8 over inputs with run-time sizes; generated code writes "
                "Scan 9 and later as a loop. Re-export at opset 9 or later, or use "
                "ember_import.onnx.load_model."
            )
        return False  # static sizes: the runtime converter's steps are the same for every input
    return dynamic


def _dynamic(g: Gen, v: Any) -> bool:
    if isinstance(v, SeqVal):
        return True
    if isinstance(v, Tensor):
        return g.is_traced(v) or id(v) in g.host_syms
    if isinstance(v, (list, tuple)):
        return any(_dynamic(g, x) for x in v)
    return isinstance(v, Sym)


def convert_control(g: Gen, ctx: Any, node: Node, args: list[Any]) -> None:
    """Write ``node`` as a generated method and bind its outputs (see the module docstring).

    Raises:
        ModelGenError: a sequence or optional crossing the body, branches of different ranks or element types.
    """
    if node.op_type not in CONTROL_OPS:
        convert_sequence(g, node, args)
        return
    fn = {"If": _if, "Loop": _loop, "Scan": _scan}[node.op_type]
    fn(g, ctx, node, args)


# ---------------------------------------------------------------------------------------------------- tracing
def _vars(parts: Any) -> list[Var]:
    out: list[Var] = []
    for p in parts:
        if isinstance(p, Sym):
            out.extend(_vars(p.parts))
        elif isinstance(p, Var):
            out.append(p)
        elif isinstance(p, (list, tuple)):
            out.extend(_vars(p))
    return out


def _copy(t: Tensor) -> Tensor:
    with untraced():
        return Tensor.from_data(t.to_data(), t.device, dtype=t.dtype)


def _shape(t: Tensor) -> list[int]:
    with untraced():
        return [int(d) for d in t.shape]


def _forward_dims(g: Gen, t: Tensor) -> tuple[Any, ...]:
    return g.sym_shapes.get(id(t)) or tuple(_shape(t))


def _param(g: Gen, node: Node, name: str, value: Any, dyn_axes: set[int] | None = None) -> tuple[Var, Any]:
    """A fresh traced stand-in of ``value`` held by a parameter named after ``name``: a dim is a run-time size
    (``name.shape[i]``) where it is one in the enclosing scope or listed in ``dyn_axes``; a sequence is a
    :class:`~._seqs.SeqVal` (a list of run-time length)."""
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
    t = _copy(value)
    src = _forward_dims(g, value) if g.is_traced(value) else tuple(_shape(value))
    dims = tuple(
        Sym(int(d), (var, f".shape[{i}]")) if isinstance(d, Sym) or i in (dyn_axes or ()) else int(d)
        for i, d in enumerate(src)
    )
    g.bind(t, var, dims)
    return var, t


def _trace(g: Gen, ctx: Any, node: Node, graph: Graph, params: list[tuple[str, Tensor]], device: Var) -> _Body:
    """Trace ``graph``'s nodes into lines of their own, its inputs bound to ``params`` (name, stand-in)."""
    from ._run import convert_node

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
    )
    # taken before a call re-binds a returned input
    params_vars = {
        id(v.var) if isinstance(v, SeqVal) else id(g.traced[id(v)][1])
        for _, v in params
        if isinstance(v, SeqVal) or g.is_traced(v)
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
            if not isinstance(v, (Tensor, SeqVal)) and not (isinstance(v, list) and _dynamic(g, v)):
                raise ModelGenError(
                    f"{node.where()}: sub-graph output "
                    f"{o.name!r:.80} is a {type(v).__name__}; generated code carries tensors only "
                    "out of a sub-graph. Use ember_import.onnx.load_model."
                )
        consts = [None if _dynamic(g, v) else _scalar(v) for v in outs]
        out_parts = [seq_arg(g, v) for v in outs]
        out_dims: list[tuple[Any, ...] | None] = [_forward_dims(g, v) if isinstance(v, Tensor) else None for v in outs]
        lines = g.lines
    finally:
        (g.lines, g.reads, g.env, g.node, g.device_var, g.traced, g.sym_shapes, g.host_syms, g._weight_vals) = saved
    defined = {id(t) for ln in lines for t in ln.targets} | params_vars | {id(device)}
    free: list[Var] = []
    seen: set[int] = set()
    for v in _vars([p for ln in lines for p in ln.parts] + [p for ps in out_parts for p in ps]):
        if id(v) in defined or id(v) in seen or v.name.startswith("self."):
            continue
        seen.add(id(v))
        free.append(v)
    return _Body(lines, outs, out_parts, out_dims, free, consts)


def _scalar(v: Tensor) -> Any:
    """The value of a one-element constant, else ``None``."""
    with untraced():
        return v.into_scalar() if v.num_elements() == 1 else None


def _trace_fixed(
    g: Gen,
    ctx: Any,
    node: Node,
    graph: Graph,
    fixed: list[tuple[str, Tensor]],
    carried: list[tuple[str, Any]],
    rest: list[tuple[str, Tensor]],
    out_of: int,
    device: Var,
) -> tuple[_Body, list[Var]]:
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
            var, t = _param(g, node, name, v, axes)
            if isinstance(t, SeqVal) and t.elem is None:
                t.elem = elem
            cvars.append(var)
            cvals.append(t)
        body = _trace(g, ctx, node, graph, [*fixed, *zip([n for n, _ in carried], cvals), *rest], device)
        changed = False
        for k, (v, axes) in enumerate(zip(cvals, dyn)):
            if isinstance(v, SeqVal):  # a list: its elements' sizes are run-time sizes already
                out = body.outs[out_of + k]
                grown = out.elem if isinstance(out, SeqVal) else out[0] if isinstance(out, list) and out else None
                if v.elem is None and grown is not None and seq_elems[k] is None:
                    seq_elems[k] = grown
                    changed = True
                continue
            before, after = g.sym_shapes.get(id(v)) or tuple(_shape(v)), body.out_dims[out_of + k]
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


# ---------------------------------------------------------------------------------------------------- writing
def _method_name(g: Gen, node: Node, op: str) -> str:
    base = identifier(node.name or op, op.lower())
    if not base.startswith(op.lower()):
        base = f"{op.lower()}_{base}"
    return g.field_names.take(f"_{base}")


def _annotation(g: Gen, v: Var) -> str:
    if any(isinstance(x, SeqVal) and x.var is v for x in g.env.values()):
        return "list[Tensor]"
    for _, var in g.traced.values():
        if var is v:
            return "Tensor"
    for ln in g.lines:
        if any(t is v for t in ln.targets):
            return "list[int]" if parts_text(ln.parts).endswith(".tolist()") else "int"
    return "int"


def _body_lines(g: Gen, lines: list[Line], returns: list[str]) -> list[str]:
    saved = g.lines
    g.lines = lines
    try:
        return g.body(returns)
    finally:
        g.lines = saved


def _bind_outputs(g: Gen, node: Node, values: list[Tensor], dims: list[list[Any]]) -> list[Var]:
    """Fresh traced outputs of ``node`` in ``forward``; a ``None`` dim is a run-time size."""
    out_vars = []
    for k, (v, ds) in enumerate(zip(values, dims)):
        var = g.node_var(node, k)
        if not isinstance(v, Tensor):  # a sequence: a list of run-time length
            elem = v.elem if isinstance(v, SeqVal) else v[0] if v else None
            if k < len(node.outputs) and node.outputs[k]:
                g.env[node.outputs[k]] = SeqVal(var, elem)
            out_vars.append(var)
            continue
        t = _copy(v)
        shape = _shape(t)
        full = tuple(Sym(shape[i], (var, f".shape[{i}]")) if d is None else d for i, d in enumerate(ds))
        g.bind(t, var, full)
        if k < len(node.outputs) and node.outputs[k]:
            g.env[node.outputs[k]] = t
        out_vars.append(var)
    return out_vars


def _call(
    g: Gen, node: Node, name: str, args: list[Any], free: list[Var], uses_device: bool, out_vars: list[Var]
) -> None:
    parts: list[Any] = [f"self.{name}("]
    items: list[Parts] = [seq_arg(g, a) for a in args] + [(v,) for v in free]
    if uses_device:
        items.append((g.device(),))
    for k, it in enumerate(items):
        if k:
            parts.append(", ")
        parts.extend(it)
    parts.append(")")
    g.lines.append(Line(tuple(out_vars), tuple(parts)))


def _params(
    g: Gen, named: list[Var], free: list[Var], uses_device: bool, device: Var, seqs: tuple[Var, ...] = ()
) -> list[tuple[Var, str]]:
    out = [(v, "list[Tensor]" if any(v is s for s in seqs) else "Tensor") for v in named]
    out += [(v, _annotation(g, v)) for v in free]
    if uses_device:
        out.append((device, "Device"))
    return out


def _doc(op: str, node: Node) -> str:
    return f"``{op}`` node ``{doc_text(node.name, 80)}``."


def _returns(n: int, seqs: tuple[int, ...] = ()) -> str:
    """The return annotation of ``n`` values, those at ``seqs`` lists."""
    kinds = ["list[Tensor]" if k in seqs else "Tensor" for k in range(n)]
    return kinds[0] if n == 1 else f"tuple[{', '.join(kinds)}]"


def _ret(texts: list[str]) -> str:
    return f"return {texts[0]}" if len(texts) == 1 else f"return {', '.join(texts)}"


def _uses(lines: list[Line], out_parts: list[Parts], var: Var) -> bool:
    return any(v is var for v in _vars([p for ln in lines for p in ln.parts] + [p for ps in out_parts for p in ps]))


def _reassign(params: list[Var], outs: list[str]) -> list[str]:
    """The loop-carried values for the next iteration, in one assignment (after the scan outputs were taken:
    an output may be a carried value itself)."""
    pairs = [(v.name, o) for v, o in zip(params, outs) if v.name != o]
    if not pairs:
        return []
    return [f"{', '.join(a for a, _ in pairs)} = {', '.join(b for _, b in pairs)}"]


def _merge_free(*bodies: _Body) -> list[Var]:
    out: list[Var] = []
    for b in bodies:
        out.extend(v for v in b.free if all(v is not w for w in out))
    return out


def _empty_stack(g: Gen, info: Any, steps: str, axis: int, device: Var) -> str | None:
    """``else Tensor.zeros(...)``: a scan output of no iterations, when the body declares its static shape."""
    shape, dtype = getattr(info, "shape", None), getattr(info, "dtype", None)
    if shape is None or dtype is None or not all(isinstance(d, int) for d in shape):
        return None
    g.imports.add(("ember", "DType"))
    full = list(shape)
    full.insert(axis, 0)
    return f"Tensor.zeros({literal(full)}, {device.name}).cast(DType.{dtype.name})"


# ---------------------------------------------------------------------------------------------------- If
def _if(g: Gen, ctx: Any, node: Node, args: list[Any]) -> None:
    cond = args[0]
    if not _dynamic(g, cond):  # a constant condition: the taken branch's lines, inline
        with untraced():
            taken = bool(cond.into_scalar())
        _inline(g, ctx, node, node.attr("then_branch" if taken else "else_branch"))
        return
    device = Var("device")
    then_b = _trace(g, ctx, node, node.attr("then_branch"), [], device)
    else_b = _trace(g, ctx, node, node.attr("else_branch"), [], device)
    if len(then_b.outs) != len(else_b.outs) or not then_b.outs:
        raise ModelGenError(f"{node.where()}: its branches have different numbers of outputs.")
    dims: list[list[Any]] = []
    seqs: list[int] = []
    for k, (a, b) in enumerate(zip(then_b.outs, else_b.outs)):
        da, db = then_b.out_dims[k], else_b.out_dims[k]
        if not isinstance(a, Tensor) and not isinstance(b, Tensor):  # two sequences: a list
            seqs.append(k)
            dims.append([])
            continue
        if (
            not isinstance(a, Tensor)
            or not isinstance(b, Tensor)
            or a.dtype is not b.dtype
            or da is None
            or db is None
            or len(da) != len(db)
        ):
            raise ModelGenError(
                f"{node.where()}: output {k} has a different rank or element type in each branch; "
                "generated code needs one. Use ember_import.onnx.load_model."
            )
        dims.append(
            [
                int(x) if not isinstance(x, Sym) and not isinstance(y, Sym) and int(x) == int(y) else None
                for x, y in zip(da, db)
            ]
        )
    name = _method_name(g, node, "If")
    free = _merge_free(then_b, else_b)
    uses_device = any(_uses(b.lines, b.out_parts, device) for b in (then_b, else_b))
    cond_var = g.new_var(node.inputs[0] or "cond")
    cond_param = [cond_var]

    def body() -> list[str]:
        then_ret = [parts_text(p) for p in then_b.out_parts]
        else_ret = [parts_text(p) for p in else_b.out_parts]
        return [
            f"if bool({cond_var.name}.into_scalar()):",
            *("    " + ln for ln in _body_lines(g, then_b.lines, then_ret)),
            "    " + _ret(then_ret),
            *_body_lines(g, else_b.lines, else_ret),
            _ret(else_ret),
        ]

    params = _params(g, cond_param, free, uses_device, device)
    g.methods.append(Method(name, params, _returns(len(dims), tuple(seqs)), _doc("If", node), body))
    out_vars = _bind_outputs(g, node, then_b.outs, dims)
    _call(g, node, name, [cond], free, uses_device, out_vars)


def _inline(g: Gen, ctx: Any, node: Node, graph: Graph) -> None:
    """Trace ``graph``'s nodes into the current lines and bind ``node``'s outputs to its outputs."""
    from ._run import convert_node

    saved_env = g.env
    g.env = dict(saved_env)
    try:
        for name, data in graph.initializers.items():
            with untraced():
                g.env[name] = Tensor.from_data(data, ctx.host, dtype=data.dtype)
        for n in graph.nodes:
            convert_node(g, ctx, n)
        outs = [g.value(o.name) for o in graph.outputs]
    finally:
        g.env, g.node = saved_env, node
    for name, value in zip(node.outputs, outs):
        if name:
            g.env[name] = value


# ---------------------------------------------------------------------------------------------------- Loop
def _loop(g: Gen, ctx: Any, node: Node, args: list[Any]) -> None:
    graph: Graph = node.attr("body")
    args = args + [None] * (2 - len(args))
    m, cond, carried = args[0], args[1], args[2:]
    n_c = len(carried)
    n_scan = len(graph.outputs) - 1 - n_c
    device = Var("device")
    it_dtype = m.dtype if isinstance(m, Tensor) else DType.INT64
    with untraced():
        it_val = Tensor.from_data(0, ctx.host, dtype=it_dtype)
        c_val = Tensor.from_data(True, ctx.host, dtype=DType.BOOL)
    names = [i.name for i in graph.inputs]
    i_var, i_t = _param(g, node, names[0] or "iteration", it_val)
    body, cvars = _trace_fixed(
        g, ctx, node, graph, [(names[0], i_t), (names[1], c_val)], list(zip(names[2:], carried)), [], 1, device
    )
    name = _method_name(g, node, "Loop")
    uses_device = _uses(body.lines, body.out_parts, device)
    m_const = None if m is None or _dynamic(g, m) else int(_scalar(m))
    c_const = True if cond is None else None if _dynamic(g, cond) else bool(_scalar(cond))
    m_var = g.new_var(node.inputs[0]) if m is not None and m_const is None else None
    cond_var = g.new_var(node.inputs[1]) if c_const is None else None
    out_const = body.consts[0]
    trips, keep, step = g.new_var("trips"), g.new_var("keep_going"), g.new_var("step")
    scan_lists = [g.new_var(f"{o.name}_steps") for o in graph.outputs[1 + n_c :]]
    i_used = _uses(body.lines, body.out_parts, i_var)
    uses_device = uses_device or i_used
    empties = [_empty_stack(g, graph.outputs[1 + n_c + k], "0", 0, device) for k in range(n_scan)]
    uses_device = uses_device or any(e is not None for e in empties)

    def text() -> list[str]:
        outs = [parts_text(p) for p in body.out_parts]
        lines = []
        if m_var is not None:
            lines.append(f"{trips.name} = int({m_var.name}.into_scalar())")
        elif m_const is not None:
            lines.append(f"{trips.name} = {m_const}")
        counted = c_const is True and out_const is not None and bool(out_const) and m is not None
        if not counted:
            lines.append(
                f"{keep.name} = " + (f"bool({cond_var.name}.into_scalar())" if cond_var is not None else str(c_const))
            )
        lines += [f"{s.name}: list[Tensor] = []" for s in scan_lists]
        if counted:  # no condition: a counted loop
            lines.append(f"for {step.name if i_used else '_'} in range({trips.name}):")
        else:
            lines += [
                f"{step.name} = 0",
                f"while {keep.name}" + (f" and {step.name} < {trips.name}:" if m is not None else ":"),
            ]
        inner = []
        if i_used:
            inner.append(f"{i_var.name} = Tensor.from_data({step.name}, device, dtype={literal(str(it_dtype))})")
        inner += _body_lines(g, body.lines, outs if out_const is None else outs[1:])
        if out_const is None:
            inner.append(f"{keep.name} = bool({outs[0]}.into_scalar())")
        elif not out_const:
            inner.append(f"{keep.name} = False")
        inner += [f"{s.name}.append({o})" for s, o in zip(scan_lists, outs[1 + n_c :])]
        inner += _reassign(cvars, outs[1 : 1 + n_c])
        if not counted:
            inner.append(f"{step.name} += 1")
        lines += ["    " + ln for ln in inner]
        rets = [v.name for v in cvars]
        for s, e in zip(scan_lists, empties):
            rets.append(f"Tensor.stack({s.name}, 0)" + (f" if {s.name} else {e}" if e else ""))
        return [*lines, _ret(rets)]

    named = [v for v in (m_var, cond_var) if v is not None] + cvars
    seqs = tuple(v for v, c in zip(cvars, carried) if not isinstance(c, Tensor))
    params = _params(g, named, body.free, uses_device, device, seqs)
    g.methods.append(
        Method(
            name,
            params,
            _returns(n_c + n_scan, tuple(k for k, c in enumerate(carried) if not isinstance(c, Tensor))),
            _doc("Loop", node),
            text,
        )
    )
    values: list[Tensor] = []
    dims: list[list[Any]] = []
    for k in range(n_c):
        v, d = body.outs[1 + k], body.out_dims[1 + k] or ()
        values.append(v)
        dims.append([None if isinstance(x, Sym) else int(x) for x in d])
    for k in range(n_scan):
        v, d = body.outs[1 + n_c + k], body.out_dims[1 + n_c + k] or ()
        with untraced():
            values.append(Tensor.stack([v, v], 0))
        dims.append([None, *(None if isinstance(x, Sym) else int(x) for x in d)])
    if not values:
        raise ModelGenError(f"{node.where()}: a Loop without outputs has no effect to generate.")
    out_vars = _bind_outputs(g, node, values, dims)
    _call(
        g,
        node,
        name,
        [a for a, v in ((m, m_var), (cond, cond_var)) if v is not None] + list(carried),
        body.free,
        uses_device,
        out_vars,
    )


# ---------------------------------------------------------------------------------------------------- Scan
def _axis_list(node: Node, attr: str, n: int, ranks: list[int]) -> list[int]:
    vals = [int(v) for v in node.attr(attr, [0] * n)]
    if len(vals) != n:
        raise ModelGenError(f"{node.where()}: attribute {attr!r} has {len(vals)} entries, expected {n}.")
    return [v + r if v < 0 else v for v, r in zip(vals, ranks)]


def _scan(g: Gen, ctx: Any, node: Node, args: list[Any]) -> None:
    graph: Graph = node.attr("body")
    n_scan_in = int(node.attr("num_scan_inputs"))
    states, xs = args[: len(args) - n_scan_in], args[len(args) - n_scan_in :]
    if not xs or any(not isinstance(x, Tensor) for x in xs):
        raise ModelGenError(f"{node.where()}: a Scan needs tensor scan inputs.")
    n_st = len(states)
    n_out = len(graph.outputs) - n_st
    in_axes = _axis_list(node, "scan_input_axes", len(xs), [len(_shape(x)) for x in xs])
    in_dirs = [int(d) for d in node.attr("scan_input_directions", [0] * len(xs))]
    out_dirs = [int(d) for d in node.attr("scan_output_directions", [0] * n_out)]
    device = Var("device")
    names = [i.name for i in graph.inputs]
    x_vars = [g.new_var(node.inputs[n_st + k] or f"scan_input_{k}") for k in range(len(xs))]
    slices: list[tuple[str, Tensor]] = []
    slice_vars: list[Var] = []
    for k, (x, a) in enumerate(zip(xs, in_axes)):
        with untraced():
            piece = x.narrow(a, 0, 1).squeeze_dim(a) if _shape(x)[a] else x.sum_dim(a).squeeze_dim(a)
        slice_dims = list(_forward_dims(g, x) if g.is_traced(x) else _shape(x))
        del slice_dims[a]
        var = g.new_var(names[n_st + k])
        t = _copy(piece)
        g.bind(
            t,
            var,
            tuple(
                Sym(int(d), (var, f".shape[{i}]")) if isinstance(d, Sym) else int(d) for i, d in enumerate(slice_dims)
            ),
        )
        slices.append((names[n_st + k], t))
        slice_vars.append(var)
    body, cvars = _trace_fixed(g, ctx, node, graph, [], list(zip(names[:n_st], states)), slices, 0, device)
    ranks = [len(d or ()) for d in body.out_dims[n_st:]]
    out_axes = _axis_list(node, "scan_output_axes", n_out, [r + 1 for r in ranks])
    name = _method_name(g, node, "Scan")
    steps, step = g.new_var("steps"), g.new_var("step")
    scan_lists = [g.new_var(f"{o.name}_steps") for o in graph.outputs[n_st:]]
    empties = [_empty_stack(g, graph.outputs[n_st + k], "0", out_axes[k], device) for k in range(n_out)]
    uses_device = _uses(body.lines, body.out_parts, device) or any(e is not None for e in empties)

    def text() -> list[str]:
        outs = [parts_text(p) for p in body.out_parts]
        lines = [f"{steps.name} = {x_vars[0].name}.shape[{in_axes[0]}]"]
        for xv, a in zip(x_vars[1:], in_axes[1:]):
            lines += [
                f"if {xv.name}.shape[{a}] != {steps.name}:",
                f'    raise ValueError(f"Scan: {xv.name} has {{{xv.name}.shape[{a}]}} steps, not {{{steps.name}}}")',
            ]
        lines += [f"{s.name}: list[Tensor] = []" for s in scan_lists]
        lines.append(f"for {step.name} in range({steps.name}):")
        inner = []
        for xv, sv, a, d in zip(x_vars, slice_vars, in_axes, in_dirs):
            at = f"{steps.name} - 1 - {step.name}" if d else step.name
            inner.append(f"{sv.name} = {xv.name}.narrow({a}, {at}, 1).squeeze_dim({a})")
        inner += _body_lines(g, body.lines, outs)
        inner += [f"{s.name}.append({o})" for s, o in zip(scan_lists, outs[n_st:])]
        inner += _reassign(cvars, outs[:n_st])
        lines += ["    " + ln for ln in inner]
        for s, rev in zip(scan_lists, out_dirs):
            if rev:
                lines.append(f"{s.name}.reverse()")
        rets = [v.name for v in cvars]
        for s, e, a in zip(scan_lists, empties, out_axes):
            rets.append(f"Tensor.stack({s.name}, {a})" + (f" if {s.name} else {e}" if e else ""))
        return [*lines, _ret(rets)]

    params = _params(g, [*cvars, *x_vars], body.free, uses_device, device)
    g.methods.append(Method(name, params, _returns(n_st + n_out), _doc("Scan", node), text))
    n_steps = _forward_dims(g, xs[0])[in_axes[0]] if g.is_traced(xs[0]) else _shape(xs[0])[in_axes[0]]
    values: list[Tensor] = []
    dims: list[list[Any]] = []
    for k in range(n_st):
        d = body.out_dims[k] or ()
        values.append(body.outs[k])
        dims.append([None if isinstance(x, Sym) else int(x) for x in d])
    for k in range(n_out):
        v, d = body.outs[n_st + k], body.out_dims[n_st + k] or ()
        with untraced():
            stacked = (
                Tensor.stack([v] * int(n_steps), out_axes[k])
                if int(n_steps)
                else Tensor.stack([v], out_axes[k]).narrow(out_axes[k], 0, 0)
            )
        values.append(stacked)
        inner: list[Any] = [None if isinstance(x, Sym) else int(x) for x in d]
        inner.insert(out_axes[k], None if isinstance(n_steps, Sym) else int(n_steps))
        dims.append(inner)
    out_vars = _bind_outputs(g, node, values, dims)
    _call(g, node, name, [*states, *xs], body.free, uses_device, out_vars)
