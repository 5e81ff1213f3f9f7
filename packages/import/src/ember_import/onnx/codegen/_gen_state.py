"""The state of one code generation (:class:`~._gen.Gen` builds on it): the fields of the generated module and
the lines of ``forward``.

:class:`GenState` holds the graph, the weights and everything a generation collects; it adds the fields
(:meth:`GenState.add_field`, ``Param`` fields of the weights no layer claims, shared activations and module-level
constants), the lines the layer recognizers of :mod:`._recognizers` write (:meth:`GenState.emit`) and renders the
lines that the returned values need (:meth:`GenState.body`). The traced values and the recording of Tensor-API
calls are :class:`~._gen.Gen`'s.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from ember import DType, Tensor, TensorData

from .._ir import Graph, Node
from ._expr import Attr, Call, Expr, Name, Shared, source
from ._names import FIELD_RESERVED, Namer, identifier, scope_path
from ._sym import Parts, Sym, Var, parts_text

__all__ = ["Field", "GenState", "Line"]


@dataclasses.dataclass
class Field:
    """A field of the generated module.

    Attributes:
        name: the attribute name.
        annotation: its type as written in the class (``nn.Conv2d``, ``Param``).
        ctor: the expression building it in ``init(device)`` (:mod:`._expr`: written as source, built as an
            object when the record is saved).
        state: its weights in PyTorch's layout and names relative to the field (``{"weight": ...}``).
        source: the module path the weights had in the source model, when the exporter kept the names.
        layer: the Ember layer class name (``Conv2d``) for counting; ``Param`` for a bare weight.
    """

    name: str
    annotation: str
    ctor: Expr
    state: dict[str, TensorData]
    source: str | None = None
    layer: str = ""

    @property
    def init(self) -> str:
        """The source of :attr:`ctor`."""
        return source(self.ctor)


@dataclasses.dataclass
class Line:
    """``targets = parts`` (no targets: a bare statement)."""

    targets: tuple[Var, ...]
    parts: Parts


class GenState:
    """The fields of one generation and the lines of its ``forward`` (the traced values: :class:`~._gen.Gen`)."""

    def __init__(self, graph: Graph, weights: dict[str, TensorData], constants: dict[str, TensorData],
                 opset: int, names_kept: bool) -> None:
        self.graph = graph
        self.weights = weights
        self.constants = constants
        self.opset = opset
        self.names_kept = names_kept
        self.env: dict[str, Any] = {}
        self.lines: list[Line] = []
        self.fields: list[Field] = []
        self.field_names = Namer(FIELD_RESERVED)
        self.var_names = Namer()
        self.activations: dict[str, str] = {}
        self.constants_src: list[str] = []
        self._shared: dict[str, str] = {}
        self.imports: set[tuple[str, str]] = set()
        # quantized weights (ONNX name -> QuantizedTensor) and the quantized fields' weights (field -> key -> it)
        self.quantized: dict[str, Any] = {}
        self.quantized_state: dict[str, dict[str, Any]] = {}
        self.methods: list[Any] = []  # generated methods (control flow, :mod:`._control`)
        # the trace
        self.depth = 0
        self.traced: dict[int, tuple[Tensor, Var]] = {}
        self.materialized: dict[int, tuple[Tensor, Var]] = {}  # host constants written into the code
        self.sym_shapes: dict[int, tuple[int, ...]] = {}
        self.host_syms: dict[int, tuple[Tensor, list[Any]]] = {}
        self.node: Node | None = None
        self.device_var: Var | None = None
        self.device_source: Parts | None = None
        self._weight_vals: dict[str, Tensor] = {}
        self.pending: dict[str, Var] = {}
        self._raw: dict[str, Tensor] = {}
        self.dim_syms: dict[str, Sym] = {}
        self.reads: list[Var] = []
        #: the values host reads of an int graph input's stand-in give the trace (:class:`._hints.Hints`)
        self.read_hints: dict[int, Any] = {}
        self.uses: dict[str, int] = {}
        for n in graph.nodes:
            for i in n.inputs:
                if i:
                    self.uses[i] = self.uses.get(i, 0) + 1
        for o in graph.outputs:
            self.uses[o.name] = self.uses.get(o.name, 0) + 1
        self.consumers: dict[str, list[Node]] = {}
        for n in graph.nodes:
            for i in n.inputs:
                if i:
                    self.consumers.setdefault(i, []).append(n)
        self._infos = {v.name: v for v in (*graph.inputs, *graph.outputs)}
        self.doc_notes: list[str] = []  # paragraphs of the generated module's docstring (what it takes, returns)
        self.output_types: list[str] = []  # the annotation of each value ``forward`` returns
    # ------------------------------------------------------------------ fields
    def add_field(self, base: str, annotation: str, ctor: Expr, state: dict[str, TensorData],
                  source: str | None, layer: str) -> str:
        name = self.field_names.take(identifier(base, "layer"))
        self.fields.append(Field(name, annotation, ctor, state, source, layer))
        return name

    def shared(self, base: str, value: Expr) -> Shared:
        """A module-level constant for a setting written in many layers (``PADDING_1 = nn.PaddingConfig2d...``);
        ``base`` is upper-case letters, digits and ``_`` chosen by the generator."""
        text = source(value)
        name = self._shared.get(text)
        if name is None:
            name = base
            k = 1
            while name in self._shared.values():
                name = f"{base}_{k}"
                k += 1
            self._shared[text] = name
            self.constants_src.append(f"{name} = {text}")
        return Shared(name, value)

    def weight_field(self, onnx_name: str, constant: bool = False) -> str:
        """A weight no layer claims, as a ``Param`` field; returns its name."""
        for f in self.fields:
            if f.layer == "Param" and f.source == onnx_name:
                return f.name
        data = self.weights.get(onnx_name) or self.constants[onnx_name]
        shape = [int(d) for d in data.shape]
        device, frozen = Name("device"), (("require_grad", False),)
        normal = Call(Attr(Name("nn"), "Normal"), (0.0, 0.02))
        ctor: Expr
        if data.dtype.is_float and not constant:
            ctor = Call(Attr(normal, "init_param"), (shape, device))
        elif data.dtype.is_float:
            ctor = Call(Name("Param"), (Call(Attr(normal, "init"), (shape, device)),), frozen)
        else:
            kind = "Bool" if data.dtype is DType.BOOL else "Int"
            ctor = Call(Name("Param"), (Call(Attr(Name("Tensor"), "zeros"), (shape, device, Name(kind))),), frozen)
        base = "constant" if constant else onnx_name.split("::")[-1]
        name = self.field_names.take(identifier(base, "weight"))
        self.fields.append(Field(name, "Param", ctor, {"": data}, None if constant else onnx_name, "Param"))
        return name

    def activation(self, cls: str, ctor: Expr) -> str:
        """The shared field of an activation layer (``self.relu``), one per distinct configuration."""
        key = source(ctor)
        if key not in self.activations:
            self.activations[key] = self.add_field(identifier(cls), f"nn.{cls}", ctor, {}, None, cls)
        return f"self.{self.activations[key]}"

    # ------------------------------------------------------------------ recognizers' lines
    def var(self, node: Node, index: int = 0, base: str | None = None) -> str:
        """A readable variable name for output ``index`` of ``node`` (taken now)."""
        return self.node_var(node, index, base).name

    def node_var(self, node: Node, index: int = 0, base: str | None = None) -> Var:
        out = node.outputs[index]
        if out in self._infos and any(o.name == out for o in self.graph.outputs):
            return Var(self.var_names.take(identifier(out, "output")))
        if base is None:
            scope = scope_path(node.name).split(".")[-1] if scope_path(node.name) else ""
            op = identifier(node.op_type)
            sc = identifier(scope) if scope and not scope.isdigit() else ""
            base = sc if sc.startswith(op) else f"{sc}_{op}" if sc else op
        return Var(self.var_names.take(identifier(base)))

    def emit(self, node: Node, expr: str, *, index: int = 0, host: bool = False, base: str | None = None) -> str:
        """``var = expr`` for output ``index`` (a recognizer's line); the output's shadow is bound after the
        recognizer returns (:meth:`pending`)."""
        var = self.node_var(node, index, base)
        self.lines.append(Line((var,), (expr,)))
        self.pending[node.outputs[index]] = var
        return var.name

    def statement(self, text: str) -> None:
        """A raw line of a recognizer (``seq, state = self.lstm(x)``)."""
        self.lines.append(Line((), (text,)))

    # ------------------------------------------------------------------ output
    def body(self, returns: list[Any]) -> list[str]:
        """The lines of ``forward`` that the returned values need, in order, renamed and rendered."""
        texts = [(ln, parts_text(ln.parts)) for ln in self.lines]
        needed = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", " ".join(returns)))
        keep: list[tuple[Line, str]] = []
        for ln, text in reversed(texts):
            names = [t.name for t in ln.targets if t.name]
            if ln.targets and not any(n in needed for n in names):
                continue
            keep.append((ln, text))
            needed.update(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", _strip_strings(text)))
        out = []
        for ln, text in reversed(keep):
            if not ln.targets:  # a statement (``if x is None:`` and its indented ``raise``): one line each
                out.extend(text.split("\n"))
                continue
            targets = ", ".join(t.name or "_" for t in ln.targets)
            out.append(f"{targets} = {text}")
        return out


def _strip_strings(text: str) -> str:
    return re.sub(r"\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*'", "", text)
