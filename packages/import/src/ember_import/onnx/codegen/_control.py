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
by a branch is a list of run-time length (:mod:`._seqs`); an optional carried through a ``Loop`` or returned
``None`` by one branch is a value or ``None`` (:mod:`._optional`, ``Tensor | None``); ``SequenceMap`` over a
run-time list is a ``for`` loop in a method (:mod:`._seqmap`).
"""

from __future__ import annotations

from typing import Any

from ember import DType, Tensor

from .._ir import Graph, Node
from ._errors import ModelGenError
from ._expr import literal
from ._gen import Gen
from ._methods import (
    Method,
    bind_outputs,
    body_lines,
    call_line,
    empty_stack,
    method_doc,
    method_name,
    params_of,
    reassign,
    return_line,
    returns_of,
)
from ._optional import convert_optional
from ._optval import OptVal, annotation_of, merge_annotations
from ._run import convert_node
from ._seqmap import sequence_map
from ._seqs import SEQUENCE_OPS, SeqVal, convert_sequence
from ._subgraph import (
    copy_value,
    forward_dims,
    is_dynamic,
    merge_free,
    param,
    scalar_value,
    shape_of,
    trace,
    trace_fixed,
    uses,
)
from ._sym import Sym, Var, parts_text
from ._trace import untraced

__all__ = ["CONTROL_OPS", "control_flow", "convert_control", "wants_control"]

#: the ops written as control flow when traced values are involved
CONTROL_OPS = frozenset({"If", "Loop", "Scan"})


def wants_control(g: Gen, node: Node, args: list[Any]) -> bool:
    """Whether ``node`` (``If``/``Loop``/``Scan`` 9+) involves traced values: its inputs or what its
    sub-graphs read from the enclosing scope."""
    if node.op_type in SEQUENCE_OPS and any(isinstance(a, SeqVal) for a in args):
        return True
    if node.op_type == "SequenceMap" and any(isinstance(a, SeqVal) for a in args):
        return True
    if node.op_type not in CONTROL_OPS and any(isinstance(a, OptVal) for a in args):
        return True  # written, or refused, by :func:`._optional.convert_optional`
    if node.op_type not in CONTROL_OPS:
        return False
    names = [n for sub in node.subgraphs() for n in sub.outer if n in g.env]
    dynamic = any(is_dynamic(g, v) for v in [*args, *(g.env[n] for n in names)])
    if dynamic and node.op_type == "Scan" and g.opset < 9:
        if any(isinstance(a, Tensor) and id(a) in g.sym_shapes for a in args):
            raise ModelGenError(
                f"{node.where()}: a Scan 8 over inputs with run-time sizes; generated code writes "
                "Scan 9 and later as a loop. Re-export at opset 9 or later, or use "
                "ember_import.onnx.load_model."
            )
        return False  # static sizes: the runtime converter's steps are the same for every input
    return dynamic


def convert_control(g: Gen, ctx: Any, node: Node, args: list[Any]) -> None:
    """Write ``node`` as a generated method and bind its outputs (see the module docstring).

    Raises:
        ModelGenError: a sequence or optional crossing the body, branches of different ranks or element types.
    """
    if node.op_type not in CONTROL_OPS and any(isinstance(a, OptVal) for a in args):
        convert_optional(g, node, args)
        return
    if node.op_type == "SequenceMap":
        sequence_map(g, ctx, node, args)
        return
    if node.op_type not in CONTROL_OPS:
        convert_sequence(g, node, args)
        return
    fn = {"If": _if, "Loop": _loop, "Scan": _scan}[node.op_type]
    fn(g, ctx, node, args)


def control_flow(g: Gen, ctx: Any, node: Node, args: list[Any]) -> bool:
    """:func:`convert_control` of ``node`` where :func:`wants_control`, and whether it did: the
    :data:`~._run.ControlFlow` given to :class:`~._run.TraceContext`."""
    if not wants_control(g, node, args):
        return False
    convert_control(g, ctx, node, args)
    return True


# ---------------------------------------------------------------------------------------------------- If
def _if(g: Gen, ctx: Any, node: Node, args: list[Any]) -> None:
    cond = args[0]
    if not is_dynamic(g, cond):  # a constant condition: the taken branch's lines, inline
        with untraced():
            taken = bool(cond.into_scalar())
        _inline(g, ctx, node, node.attr("then_branch" if taken else "else_branch"))
        return
    device = Var("device")
    then_b = trace(g, ctx, node, node.attr("then_branch"), [], device)
    else_b = trace(g, ctx, node, node.attr("else_branch"), [], device)
    if len(then_b.outs) != len(else_b.outs) or not then_b.outs:
        raise ModelGenError(f"{node.where()}: its branches have different numbers of outputs.")
    dims: list[list[Any]] = []
    kinds: list[str] = []
    values: list[Any] = []
    for k, (a, b) in enumerate(zip(then_b.outs, else_b.outs)):
        da, db = then_b.out_dims[k], else_b.out_dims[k]
        kind = merge_annotations(annotation_of(a), annotation_of(b))
        kinds.append(kind or "Tensor")
        if kind is not None and kind != "Tensor":  # lists, or a value on one branch and None on the other
            values.append(_representative(a, b, kind))
            dims.append([])
            continue
        values.append(a)
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
    name = method_name(g, node, "If")
    free = merge_free(then_b, else_b)
    uses_device = any(uses(b.lines, b.out_parts, device) for b in (then_b, else_b))
    cond_var = g.new_var(node.inputs[0] or "cond")
    cond_param = [cond_var]

    def body() -> list[str]:
        then_ret = [parts_text(p) for p in then_b.out_parts]
        else_ret = [parts_text(p) for p in else_b.out_parts]
        return [
            f"if bool({cond_var.name}.into_scalar()):",
            *("    " + ln for ln in body_lines(g, then_b.lines, then_ret)),
            "    " + return_line(then_ret),
            *body_lines(g, else_b.lines, else_ret),
            return_line(else_ret),
        ]

    params = params_of(g, cond_param, free, uses_device, device)
    returns = kinds[0] if len(kinds) == 1 else f"tuple[{', '.join(kinds)}]"
    g.methods.append(Method(name, params, returns, method_doc("If", node), body))
    out_vars = bind_outputs(g, node, values, dims)
    call_line(g, node, name, [cond], free, uses_device, out_vars)


def _representative(a: Any, b: Any, kind: str) -> Any:
    """The value standing for an ``If`` output that is a list or an optional (annotation ``kind``) after the
    node: a :class:`SeqVal` or an :class:`OptVal` of the branches' element or value (a placeholder variable:
    :func:`~._methods.bind_outputs` gives it the output's)."""
    placeholder = Var("")
    present = [v for v in (a, b) if v is not None]
    items = [v.inner if isinstance(v, OptVal) else v for v in present]
    if kind.startswith("list"):
        elems = [v.elem if isinstance(v, SeqVal) else v[0] for v in items if isinstance(v, SeqVal) or v]
        seq = SeqVal(placeholder, next((e for e in elems if e is not None), None))
        return OptVal(placeholder, seq) if kind.endswith("None") else seq
    return OptVal(placeholder, items[0])


def _inline(g: Gen, ctx: Any, node: Node, graph: Graph) -> None:
    """Trace ``graph``'s nodes into the current lines and bind ``node``'s outputs to its outputs."""
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
    i_var, i_t = param(g, node, names[0] or "iteration", it_val)
    body, cvars = trace_fixed(
        g, ctx, node, graph, [(names[0], i_t), (names[1], c_val)], list(zip(names[2:], carried)), [], 1, device
    )
    name = method_name(g, node, "Loop")
    uses_device = uses(body.lines, body.out_parts, device)
    m_const = None if m is None or is_dynamic(g, m) else int(scalar_value(m))
    c_const = True if cond is None else None if is_dynamic(g, cond) else bool(scalar_value(cond))
    m_var = g.new_var(node.inputs[0]) if m is not None and m_const is None else None
    cond_var = g.new_var(node.inputs[1]) if c_const is None else None
    out_const = body.consts[0]
    trips, keep, step = g.new_var("trips"), g.new_var("keep_going"), g.new_var("step")
    scan_lists = [g.new_var(f"{o.name}_steps") for o in graph.outputs[1 + n_c :]]
    i_used = uses(body.lines, body.out_parts, i_var)
    uses_device = uses_device or i_used
    empties = [empty_stack(g, graph.outputs[1 + n_c + k], "0", 0, device) for k in range(n_scan)]
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
        inner += body_lines(g, body.lines, outs if out_const is None else outs[1:])
        if out_const is None:
            inner.append(f"{keep.name} = bool({outs[0]}.into_scalar())")
        elif not out_const:
            inner.append(f"{keep.name} = False")
        inner += [f"{s.name}.append({o})" for s, o in zip(scan_lists, outs[1 + n_c :])]
        inner += reassign(cvars, outs[1 : 1 + n_c])
        if not counted:
            inner.append(f"{step.name} += 1")
        lines += ["    " + ln for ln in inner]
        rets = [v.name for v in cvars]
        for s, e in zip(scan_lists, empties):
            rets.append(f"Tensor.stack({s.name}, 0)" + (f" if {s.name} else {e}" if e else ""))
        return [*lines, return_line(rets)]

    named = [v for v in (m_var, cond_var) if v is not None] + cvars
    seqs = tuple(v for v, c in zip(cvars, carried) if not isinstance(c, Tensor))
    kinds = _carried_kinds(node, carried, body.outs[1 : 1 + n_c])
    params = params_of(g, named, body.free, uses_device, device, seqs, {id(v): t for v, t in zip(cvars, kinds)})
    returns = [*kinds, *(["Tensor"] * n_scan)]
    g.methods.append(
        Method(
            name,
            params,
            returns[0] if len(returns) == 1 else f"tuple[{', '.join(returns)}]",
            method_doc("Loop", node),
            text,
        )
    )
    values: list[Any] = []
    dims: list[list[Any]] = []
    for k in range(n_c):
        v, d = body.outs[1 + k], body.out_dims[1 + k] or ()
        if isinstance(carried[k], OptVal) and not isinstance(v, OptVal):  # None before the first iteration
            v = OptVal(Var(""), v if isinstance(v, Tensor) else _representative(v, None, "list[Tensor]"))
        values.append(v)
        dims.append([None if isinstance(x, Sym) else int(x) for x in d])
    for k in range(n_scan):
        v, d = body.outs[1 + n_c + k], body.out_dims[1 + n_c + k] or ()
        with untraced():
            values.append(Tensor.stack([v, v], 0))
        dims.append([None, *(None if isinstance(x, Sym) else int(x) for x in d)])
    if not values:
        raise ModelGenError(f"{node.where()}: a Loop without outputs has no effect to generate.")
    out_vars = bind_outputs(g, node, values, dims)
    call_line(
        g,
        node,
        name,
        [a for a, v in ((m, m_var), (cond, cond_var)) if v is not None] + list(carried),
        body.free,
        uses_device,
        out_vars,
    )


def _carried_kinds(node: Node, carried: list[Any], outs: list[Any]) -> list[str]:
    """The annotation of each loop-carried value: its start's and the body's output's together (an optional
    start the body makes a list: ``list[Tensor] | None``).

    Raises:
        ModelGenError: a value the body turns into another kind, or into an optional from a plain start (the
            body was traced with a value present).
    """
    kinds = []
    for k, (c, o) in enumerate(zip(carried, outs)):
        start = annotation_of(c)
        kind = merge_annotations(start, annotation_of(o))
        if kind is None or (kind != start and not start.endswith("| None")):
            raise ModelGenError(
                f"{node.where()}: the loop-carried value {k} is {start} before the loop and "
                f"{annotation_of(o)} after an iteration; generated code needs one kind. Use "
                "ember_import.onnx.load_model."
            )
        kinds.append(kind)
    return kinds


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
    if any(isinstance(a, OptVal) for a in states):
        raise ModelGenError(
            f"{node.where()}: an optional state of a Scan; generated code carries tensors through a Scan. Use "
            "ember_import.onnx.load_model."
        )
    n_st = len(states)
    n_out = len(graph.outputs) - n_st
    in_axes = _axis_list(node, "scan_input_axes", len(xs), [len(shape_of(x)) for x in xs])
    in_dirs = [int(d) for d in node.attr("scan_input_directions", [0] * len(xs))]
    out_dirs = [int(d) for d in node.attr("scan_output_directions", [0] * n_out)]
    device = Var("device")
    names = [i.name for i in graph.inputs]
    x_vars = [g.new_var(node.inputs[n_st + k] or f"scan_input_{k}") for k in range(len(xs))]
    slices: list[tuple[str, Tensor]] = []
    slice_vars: list[Var] = []
    for k, (x, a) in enumerate(zip(xs, in_axes)):
        with untraced():
            piece = x.narrow(a, 0, 1).squeeze_dim(a) if shape_of(x)[a] else x.sum_dim(a).squeeze_dim(a)
        slice_dims = list(forward_dims(g, x) if g.is_traced(x) else shape_of(x))
        del slice_dims[a]
        var = g.new_var(names[n_st + k])
        t = copy_value(piece)
        g.bind(
            t,
            var,
            tuple(
                Sym(int(d), (var, f".shape[{i}]")) if isinstance(d, Sym) else int(d) for i, d in enumerate(slice_dims)
            ),
        )
        slices.append((names[n_st + k], t))
        slice_vars.append(var)
    body, cvars = trace_fixed(g, ctx, node, graph, [], list(zip(names[:n_st], states)), slices, 0, device)
    ranks = [len(d or ()) for d in body.out_dims[n_st:]]
    out_axes = _axis_list(node, "scan_output_axes", n_out, [r + 1 for r in ranks])
    name = method_name(g, node, "Scan")
    steps, step = g.new_var("steps"), g.new_var("step")
    scan_lists = [g.new_var(f"{o.name}_steps") for o in graph.outputs[n_st:]]
    empties = [empty_stack(g, graph.outputs[n_st + k], "0", out_axes[k], device) for k in range(n_out)]
    uses_device = uses(body.lines, body.out_parts, device) or any(e is not None for e in empties)

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
        inner += body_lines(g, body.lines, outs)
        inner += [f"{s.name}.append({o})" for s, o in zip(scan_lists, outs[n_st:])]
        inner += reassign(cvars, outs[:n_st])
        lines += ["    " + ln for ln in inner]
        for s, rev in zip(scan_lists, out_dirs):
            if rev:
                lines.append(f"{s.name}.reverse()")
        rets = [v.name for v in cvars]
        for s, e, a in zip(scan_lists, empties, out_axes):
            rets.append(f"Tensor.stack({s.name}, {a})" + (f" if {s.name} else {e}" if e else ""))
        return [*lines, return_line(rets)]

    params = params_of(g, [*cvars, *x_vars], body.free, uses_device, device)
    g.methods.append(Method(name, params, returns_of(n_st + n_out), method_doc("Scan", node), text))
    n_steps = forward_dims(g, xs[0])[in_axes[0]] if g.is_traced(xs[0]) else shape_of(xs[0])[in_axes[0]]
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
    out_vars = bind_outputs(g, node, values, dims)
    call_line(g, node, name, [*states, *xs], body.free, uses_device, out_vars)
