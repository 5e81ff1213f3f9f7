"""``SequenceMap`` over a sequence of run-time length (a :class:`~._seqval.SeqVal`): a ``for`` loop in a
generated method.

::

    def _sequence_map_1(self, x0: list[Tensor], x1: Tensor) -> list[Tensor]:
        y0: list[Tensor] = []
        for in0 in x0:
            out0 = in0.add(x1)
            y0.append(out0)
        return y0

The body is traced once (:func:`~._subgraph.trace`) with a stand-in element of each sequence input (every dim a
run-time size: elements may differ in shape) and the tensor inputs as they are; it runs once per element, the
sequence inputs zipped after a check that they are equally long (the runtime converter :mod:`..ops._sequence`
raises on unequal lengths too), each output collected in a list. Semantics: the ONNX operator specification.
"""

from __future__ import annotations

from typing import Any

from ember import Tensor

from .._ir import Graph, Node
from ._errors import ModelGenError
from ._gen import Gen
from ._methods import Method, body_lines, call_line, method_doc, method_name, params_of, return_line
from ._seqval import SeqVal
from ._subgraph import copy_value, param, shape_of, trace, uses
from ._sym import Sym, Var, parts_text

__all__ = ["sequence_map"]


def _element(g: Gen, node: Node, name: str, seq: Any) -> tuple[Var, Tensor]:
    """A fresh stand-in element of ``seq`` held by the loop variable named after ``name``."""
    elem = seq.elem if isinstance(seq, SeqVal) else seq[0] if seq else None
    if elem is None:
        raise ModelGenError(
            f"{node.where()}: a SequenceMap over a sequence whose element rank is unknown; generated code needs an "
            "element to trace the body with. Give the sequence's element type a shape, or use "
            "ember_import.onnx.load_model."
        )
    var = g.new_var(name)
    t = copy_value(elem)
    return var, g.bind(t, var, tuple(Sym(d, (var, f".shape[{i}]")) for i, d in enumerate(shape_of(t))))


def sequence_map(g: Gen, ctx: Any, node: Node, args: list[Any]) -> None:
    """Write ``node`` (its first input a :class:`SeqVal`) as a generated method and bind its output lists.

    Raises:
        ModelGenError: a body output that is not a tensor, an element of unknown rank, an optional input.
    """
    graph: Graph = node.attr("body")
    device = Var("device")
    names = [i.name for i in graph.inputs]
    seq_vars: list[Var] = []  # the method's list parameters
    elem_vars: list[Var] = []  # their loop variables
    tensor_vars: list[Var] = []  # the method's tensor parameters
    params: list[tuple[str, Any]] = []
    for k, (name, a) in enumerate(zip(names, args)):
        if isinstance(a, SeqVal) or (isinstance(a, list) and all(isinstance(x, Tensor) for x in a)):
            seq_vars.append(g.new_var(node.inputs[k] or f"sequence_{k}"))
            var, t = _element(g, node, name, a)
            elem_vars.append(var)
            params.append((name, t))
        elif isinstance(a, Tensor):
            var, t = param(g, node, name, a)
            tensor_vars.append(var)
            params.append((name, t))
        else:
            raise ModelGenError(
                f"{node.where()}: input {k} is a {type(a).__name__}; generated code maps over sequences and "
                "tensors. Use ember_import.onnx.load_model."
            )
    body = trace(g, ctx, node, graph, params, device)
    for o, v in zip(graph.outputs, body.outs):
        if not isinstance(v, Tensor):
            raise ModelGenError(
                f"{node.where()}: body output {o.name!r:.80} is a {type(v).__name__}; generated code collects "
                "tensors. Use ember_import.onnx.load_model."
            )
    name = method_name(g, node, "SequenceMap")
    lists = [g.new_var(o or f"{node.op_type}_{k}") for k, o in enumerate(node.outputs)]
    uses_device = uses(body.lines, body.out_parts, device)
    seq_args = [a for a in args if not isinstance(a, Tensor)]
    tensor_args = [a for a in args if isinstance(a, Tensor)]

    def text() -> list[str]:
        outs = [parts_text(p) for p in body.out_parts]
        first = seq_vars[0].name
        lines = []
        for sv in seq_vars[1:]:
            lines += [
                f"if len({sv.name}) != len({first}):",
                f'    raise ValueError(f"SequenceMap: {sv.name} has {{len({sv.name})}} tensors, {first} '
                f'{{len({first})}}; they must be equally long")',
            ]
        lines += [f"{lv.name}: list[Tensor] = []" for lv in lists]
        if len(seq_vars) == 1:
            lines.append(f"for {elem_vars[0].name} in {first}:")
        else:
            lines.append(f"for {', '.join(v.name for v in elem_vars)} in zip({', '.join(v.name for v in seq_vars)}):")
        inner = body_lines(g, body.lines, outs)
        inner += [f"{lv.name}.append({o})" for lv, o in zip(lists, outs)]
        lines += ["    " + ln for ln in inner]
        return [*lines, return_line([lv.name for lv in lists])]

    named = [*seq_vars, *tensor_vars]
    method_params = params_of(g, named, body.free, uses_device, device, tuple(seq_vars))
    returns = ["list[Tensor]"] * len(lists)
    g.methods.append(
        Method(
            name,
            method_params,
            returns[0] if len(returns) == 1 else f"tuple[{', '.join(returns)}]",
            method_doc("SequenceMap", node),
            text,
        )
    )
    out_vars = [g.node_var(node, k) if out else g.new_var(f"unused_{k}") for k, out in enumerate(node.outputs)]
    for k, (out, var) in enumerate(zip(node.outputs, out_vars)):
        if out:
            g.env[out] = SeqVal(var, copy_value(body.outs[k]))
    call_line(g, node, name, [*seq_args, *tensor_args], body.free, uses_device, out_vars)
