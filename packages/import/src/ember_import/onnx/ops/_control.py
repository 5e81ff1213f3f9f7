"""Control flow: ``If`` (opsets 1/11/13/16/19/21/23), ``Loop`` (1/11/13/16/19/21/23) and ``Scan`` (8, 9+).

Sub-graphs run through :meth:`Context.run_subgraph`, which sees the values of the enclosing graph (outer
scope) computed so far; a sub-graph's own initializers are added to that scope here. Branch conditions,
trip counts and loop conditions are host reads (``If`` and ``Loop`` are eager: under ``ember_jax.jit`` a
condition computed from the data is refused with a clear message by :meth:`Context.scalar`). The later
opset versions only widen the accepted types (sequences, optionals, new element types), which these
converters carry as they are.

Semantics follow the ONNX operator specification (onnx/docs/Operators.md) and ``onnx.reference.ops``:
``Loop``'s scan outputs are the per-iteration values stacked on a new axis 0; ``Scan`` slices its scan
inputs along ``scan_input_axes`` (reversed for direction 1) and stacks its scan outputs along
``scan_output_axes``. ``Scan`` 8 has a leading batch axis on every input (run per batch entry here).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ember import DType, Tensor

from .._context import Context
from .._errors import OnnxImportError
from .._ir import Graph, Node
from .._registry import converter

__all__ = ["run_body"]


def run_body(ctx: Context, graph: Graph, inputs: Sequence[Any]) -> list[Any]:
    """Run the sub-graph ``graph`` on ``inputs`` in the current scope, its own initializers included."""
    if not graph.initializers:
        return ctx.run_subgraph(graph, inputs)
    saved = ctx.env
    ctx.env = dict(saved)
    for name, data in graph.initializers.items():
        ctx.env[name] = Tensor.from_data(data, ctx.host, dtype=data.dtype)
    try:
        return ctx.run_subgraph(graph, inputs)
    finally:
        ctx.env = saved


def _truth(ctx: Context, node: Node, t: Any, what: str) -> bool:
    if not isinstance(t, Tensor) or t.num_elements() != 1:
        raise OnnxImportError(f"{node.where()}: {what} must be a one-element tensor, got {t!r}.")
    return bool(ctx.scalar(t))


def _stack(ctx: Context, node: Node, values: list[Tensor], axis: int, info: Any) -> Tensor:
    """Per-iteration ``values`` stacked on a new ``axis``; empty when there were no iterations (shape and
    type from the body's declared output)."""
    if values:
        if any(not ctx.is_host(v) for v in values):  # iterations on both devices: join on the compute one
            values = [ctx.to_main(v) if ctx.is_host(v) else v for v in values]
        rank = values[0].rank + 1
        return Tensor.stack(values, axis + rank if axis < 0 else axis)
    shape = getattr(info, "shape", None)
    dtype = getattr(info, "dtype", None)
    if shape is None or dtype is None or not all(isinstance(d, int) for d in shape):
        raise OnnxImportError(
            f"{node.where()}: zero iterations and the body output {getattr(info, 'name', '?')!r} has no static "
            "shape and type, so its empty scan output cannot be built; give the body's outputs static shapes."
        )
    return Tensor.zeros([0, *shape], ctx.host).cast(dtype)


@converter("If", since=1, static=(0,))
def if_(ctx: Context, node: Node, cond: Tensor) -> tuple[Any, ...]:
    """``If``: runs ``then_branch`` or ``else_branch`` (a host read of ``cond``); all opsets."""
    branch = node.attr("then_branch") if _truth(ctx, node, cond, "the condition") else node.attr("else_branch")
    return tuple(run_body(ctx, branch, []))


@converter("Loop", since=1, static=(0, 1))
def loop(ctx: Context, node: Node, m: Tensor | None, cond: Tensor | None, *carried: Any) -> tuple[Any, ...]:
    """``Loop``: ``for i in range(M) while cond`` over the body ``(i, cond, carried...) -> (cond, carried...,
    scan outputs...)``; the final carried values then the stacked scan outputs. All opsets."""
    body: Graph = node.attr("body")
    n_carried = len(carried)
    n_scan = len(body.outputs) - 1 - n_carried
    trips = None if m is None else int(ctx.scalar(m))
    keep_going = True if cond is None else _truth(ctx, node, cond, "the initial condition")
    it_dtype = DType.INT64 if m is None else m.dtype
    state = list(carried)
    scans: list[list[Tensor]] = [[] for _ in range(n_scan)]
    i = 0
    while keep_going and (trips is None or i < trips):
        it = ctx.tensor(i, it_dtype, ctx.host)
        c = ctx.tensor(True, DType.BOOL, ctx.host)
        outs = run_body(ctx, body, [it, c, *state])
        keep_going = _truth(ctx, node, outs[0], "the body's condition output")
        state = list(outs[1:1 + n_carried])
        for k in range(n_scan):
            scans[k].append(outs[1 + n_carried + k])
        i += 1
    stacked = [_stack(ctx, node, s, 0, body.outputs[1 + n_carried + k]) for k, s in enumerate(scans)]
    return tuple(state + stacked)


def _axes(node: Node, name: str, n: int, rank: Sequence[int]) -> list[int]:
    vals = list(node.attr(name, [0] * n))
    if len(vals) != n:
        raise OnnxImportError(f"{node.where()}: attribute {name!r} has {len(vals)} entries, expected {n}.")
    return [int(v) + r if int(v) < 0 else int(v) for v, r in zip(vals, rank)]


def _scan(ctx: Context, node: Node, states: list[Any], scans: list[Tensor]) -> list[Any]:
    """One ``Scan`` 9+ run (attributes as in opset 9; ``scans`` already without a batch axis)."""
    body: Graph = node.attr("body")
    n_state = len(states)
    in_axes = _axes(node, "scan_input_axes", len(scans), [t.rank for t in scans])
    in_dirs = list(node.attr("scan_input_directions", [0] * len(scans)))
    n_out = len(body.outputs) - n_state
    out_dirs = list(node.attr("scan_output_directions", [0] * n_out))
    out_axes = [int(a) for a in node.attr("scan_output_axes", [0] * n_out)]
    lengths = {t.shape[a] for t, a in zip(scans, in_axes)}
    if len(lengths) > 1:
        raise OnnxImportError(f"{node.where()}: scan inputs have different lengths {sorted(lengths)} on their "
                              "scan axes; they must all be equal.")
    steps = lengths.pop() if lengths else 0
    outs_per: list[list[Tensor]] = [[] for _ in range(n_out)]
    for t in range(steps):
        slices = [_select(x, a, steps - 1 - t if d else t) for x, a, d in zip(scans, in_axes, in_dirs)]
        outs = run_body(ctx, body, [*states, *slices])
        states = list(outs[:n_state])
        for k in range(n_out):
            outs_per[k].append(outs[n_state + k])
    result = list(states)
    for k, vals in enumerate(outs_per):
        if out_dirs[k]:
            vals = vals[::-1]
        result.append(_stack(ctx, node, vals, out_axes[k], body.outputs[n_state + k]))
    return result


def _select(t: Tensor, dim: int, i: int) -> Tensor:
    return t.narrow(dim, i, 1).squeeze_dim(dim)


@converter("Scan", since=9)
def scan(ctx: Context, node: Node, *inputs: Any) -> tuple[Any, ...]:
    """``Scan`` 9+: ``num_scan_inputs`` trailing inputs are scanned; the rest are loop states."""
    n_scan = int(node.attr("num_scan_inputs"))
    n_state = len(inputs) - n_scan
    return tuple(_scan(ctx, node, list(inputs[:n_state]), list(inputs[n_state:])))


@converter("Scan", since=8)
def scan8(ctx: Context, node: Node, seq_lens: Tensor | None, *inputs: Any) -> tuple[Any, ...]:
    """``Scan`` 8: every input has a leading batch axis (the scan axis is 1); run per batch entry."""
    n_scan = int(node.attr("num_scan_inputs"))
    n_state = len(inputs) - n_scan
    if seq_lens is not None:
        lens = set(ctx.ints(seq_lens) or [])
        full = {t.shape[1] for t in inputs[n_state:]}
        if len(lens | full) > 1:
            raise OnnxImportError(
                f"{node.where()}: Scan 8 with per-batch sequence_lens {sorted(lens)} shorter than the inputs is "
                "not supported; re-export at opset 9 or later, or pad the inputs to one length."
            )
    dirs = node.attr("directions", None)
    batch = inputs[0].shape[0] if inputs else 0
    per_batch = []
    for b in range(batch):
        row = [_select(t, 0, b) for t in inputs]
        attrs = dict(node.attrs)
        if dirs is not None:
            attrs["scan_input_directions"] = dirs
        sub = Node(node.op_type, node.domain, node.name, node.inputs, node.outputs, attrs)
        per_batch.append(_scan(ctx, sub, row[:n_state], row[n_state:]))
    return tuple(Tensor.stack([pb[k] for pb in per_batch], 0) for k in range(len(node.outputs)))
