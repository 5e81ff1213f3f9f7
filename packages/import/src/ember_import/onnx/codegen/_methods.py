"""The generated methods of control flow (:mod:`._control`): :class:`Method` (rendered with the source) and the
pieces every method writer shares: parameters and their annotations, the call line in the enclosing code, the
outputs bound after it, ``return`` lines and the stacking of scan outputs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from ember import Tensor

from .._ir import Node
from ._expr import literal
from ._gen import Gen
from ._gen_state import Line
from ._names import doc_text, identifier
from ._optval import OptVal, annotation_of
from ._seqs import SeqVal, seq_arg
from ._subgraph import copy_value, shape_of
from ._sym import Parts, Sym, Var, parts_text

__all__ = [
    "Method",
    "annotation",
    "bind_outputs",
    "body_lines",
    "call_line",
    "empty_stack",
    "method_doc",
    "method_name",
    "params_of",
    "reassign",
    "return_line",
    "returns_of",
]


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


def method_name(g: Gen, node: Node, op: str) -> str:
    """A unique method name from the node's name (``_loop_1``)."""
    base = identifier(node.name or op, op.lower())
    if not base.startswith(op.lower()):
        base = f"{op.lower()}_{base}"
    return g.field_names.take(f"_{base}")


def annotation(g: Gen, v: Var) -> str:
    """The annotation of a free variable: ``Tensor``, ``list[Tensor]``, an optional's (``Tensor | None``),
    ``list[int]`` or ``int``."""
    for x in g.env.values():
        if isinstance(x, OptVal) and x.var is v:
            return annotation_of(x)
    if any(isinstance(x, SeqVal) and x.var is v for x in g.env.values()):
        return "list[Tensor]"
    for _, var in g.traced.values():
        if var is v:
            return "Tensor"
    for ln in g.lines:
        if any(t is v for t in ln.targets):
            return "list[int]" if parts_text(ln.parts).endswith(".tolist()") else "int"
    return "int"


def body_lines(g: Gen, lines: list[Line], returns: list[str]) -> list[str]:
    """``lines`` rendered, those the ``returns`` do not need left out (:meth:`GenState.body`)."""
    saved = g.lines
    g.lines = lines
    try:
        return g.body(returns)
    finally:
        g.lines = saved


def bind_outputs(g: Gen, node: Node, values: list[Tensor], dims: list[list[Any]]) -> list[Var]:
    """Fresh traced outputs of ``node`` in ``forward``; a ``None`` dim is a run-time size; an
    :class:`~._optval.OptVal` value gives an optional (its stand-in's dims all the run's)."""
    out_vars = []
    for k, (v, ds) in enumerate(zip(values, dims)):
        var = g.node_var(node, k)
        if isinstance(v, OptVal):  # a value or None
            inner = SeqVal(var, v.inner.elem) if isinstance(v.inner, SeqVal) else copy_value(v.inner)
            if k < len(node.outputs) and node.outputs[k]:
                g.env[node.outputs[k]] = OptVal(var, inner)
            out_vars.append(var)
            continue
        if not isinstance(v, Tensor):  # a sequence: a list of run-time length
            elem = v.elem if isinstance(v, SeqVal) else v[0] if v else None
            if k < len(node.outputs) and node.outputs[k]:
                g.env[node.outputs[k]] = SeqVal(var, elem)
            out_vars.append(var)
            continue
        t = copy_value(v)
        shape = shape_of(t)
        full = tuple(Sym(shape[i], (var, f".shape[{i}]")) if d is None else d for i, d in enumerate(ds))
        g.bind(t, var, full)
        if k < len(node.outputs) and node.outputs[k]:
            g.env[node.outputs[k]] = t
        out_vars.append(var)
    return out_vars


def call_line(
    g: Gen, node: Node, name: str, args: list[Any], free: list[Var], uses_device: bool, out_vars: list[Var]
) -> None:
    """``outs = self.name(args, free..., device)`` in the enclosing code."""
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


def params_of(
    g: Gen,
    named: list[Var],
    free: list[Var],
    uses_device: bool,
    device: Var,
    seqs: tuple[Var, ...] = (),
    types: dict[int, str] | None = None,
) -> list[tuple[Var, str]]:
    """The method's parameters with their annotations (``types``: by ``id`` of a named parameter, else
    ``list[Tensor]`` for ``seqs``, else ``Tensor``)."""
    types = types or {}
    out = [(v, types.get(id(v)) or ("list[Tensor]" if any(v is s for s in seqs) else "Tensor")) for v in named]
    out += [(v, annotation(g, v)) for v in free]
    if uses_device:
        out.append((device, "Device"))
    return out


def method_doc(op: str, node: Node) -> str:
    """The method's docstring text."""
    return f"``{op}`` node ``{doc_text(node.name, 80)}``."


def returns_of(n: int, seqs: tuple[int, ...] = ()) -> str:
    """The return annotation of ``n`` values, those at ``seqs`` lists."""
    kinds = ["list[Tensor]" if k in seqs else "Tensor" for k in range(n)]
    return kinds[0] if n == 1 else f"tuple[{', '.join(kinds)}]"


def return_line(texts: list[str]) -> str:
    """``return a`` or ``return a, b``."""
    return f"return {texts[0]}" if len(texts) == 1 else f"return {', '.join(texts)}"


def reassign(params: list[Var], outs: list[str]) -> list[str]:
    """The loop-carried values for the next iteration, in one assignment (after the scan outputs were taken:
    an output may be a carried value itself)."""
    pairs = [(v.name, o) for v, o in zip(params, outs) if v.name != o]
    if not pairs:
        return []
    return [f"{', '.join(a for a, _ in pairs)} = {', '.join(b for _, b in pairs)}"]


def empty_stack(g: Gen, info: Any, steps: str, axis: int, device: Var) -> str | None:
    """``else Tensor.zeros(...)``: a scan output of no iterations, when the body declares its static shape."""
    shape, dtype = getattr(info, "shape", None), getattr(info, "dtype", None)
    if shape is None or dtype is None or not all(isinstance(d, int) for d in shape):
        return None
    g.imports.add(("ember", "DType"))
    full = list(shape)
    full.insert(axis, 0)
    return f"Tensor.zeros({literal(full)}, {device.name}).cast(DType.{dtype.name})"
