"""The state of one code generation: values, fields and the lines of ``forward``.

Every ONNX value becomes a :class:`Val`: a tensor variable, or a *host* value (a Python ``int``, ``float`` or
list of them) when it is shape arithmetic (``Shape -> Gather -> Concat -> Reshape``), so the generated
``forward`` keeps shapes in Python, exactly as the runtime interpreter keeps them on the host. Weights that no
layer claims become ``Param`` fields; small constants become literals.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ember import DType, TensorData

from .._ir import Graph, Node, ValueInfo
from ._errors import ModelGenError
from ._expr import Attr, Call, Expr, Name, Shared, literal, source
from ._names import FIELD_RESERVED, Namer, identifier, scope_path

__all__ = ["Field", "Gen", "Val", "host_list", "items_of", "literal", "wrap_source"]

#: constants with at most this many elements are written into the code; larger ones are stored as fields
INLINE_LIMIT = 64


@dataclasses.dataclass
class Val:
    """A value of the generated ``forward``.

    Attributes:
        expr: the Python expression that holds it (a variable name or a literal).
        host: a Python ``int``/``float``/list (shape arithmetic) rather than a ``Tensor``.
        const: its value when known while generating (constants, folded shape arithmetic).
        known: ``const`` is set.
        weight: the ONNX initializer name of a weight that no field holds yet.
        items: for a host list, the expression of each element (``["batch", "1", "28", "28"]``), so that
            shape arithmetic folds into one readable list instead of a statement per ``Gather``/``Concat``.
    """

    expr: str
    host: bool = False
    const: Any = None
    known: bool = False
    weight: str | None = None
    items: list[str] | None = None


def host_list(items: list[str]) -> Val:
    """A host list from element expressions (a literal when every element is one)."""
    try:
        values = [int(x) for x in items]
    except ValueError:
        return Val(expr="[" + ", ".join(items) + "]", host=True, items=items)
    return Val(expr=literal(values), host=True, const=values, known=True, items=items)


def items_of(v: Val) -> list[str] | None:
    """The element expressions of a host list, when known."""
    if v.items is not None:
        return v.items
    if v.known and isinstance(v.const, list) and all(isinstance(x, (int, float)) for x in v.const):
        return [literal(x) for x in v.const]
    return None


@dataclasses.dataclass
class Field:
    """A field of the generated module.

    Attributes:
        name: the attribute name.
        annotation: its type as written in the class (``nn.Conv2d``, ``Param``).
        ctor: the expression building it in ``init(device)`` (:mod:`._expr`: written as source, built as an
            object when the record is saved).
        state: its weights in PyTorch's layout and names relative to the field (``{"weight": ...}``): what
            :class:`~ember_import.ImportedRecord` converts to the layer's layout.
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


def wrap_source(idx: str, n: str) -> str:
    """Source of the runtime's ``wrap_index`` (``ops/_indexing.py``) on the index tensor ``idx`` (a name or
    field) and the size ``n``: ``n`` added to the negative indices; others out of range stay so and raise."""
    return f"{idx}.mask_where({idx}.lower_elem(0), {idx}.add_scalar({n}))"


def python_value(data: TensorData) -> Any:
    """A constant as Python data: a scalar for rank 0, nested lists otherwise."""
    arr = data.to_numpy()
    return arr.tolist()


class Gen:
    """One generation: walk the nodes, fill :attr:`lines` and :attr:`fields`."""

    def __init__(self, graph: Graph, weights: dict[str, TensorData], constants: dict[str, TensorData],
                 opset: int, names_kept: bool) -> None:
        self.graph = graph
        self.weights = weights
        self.constants = constants
        self.opset = opset
        self.names_kept = names_kept
        self.env: dict[str, Val] = {}
        self.lines: list[str] = []
        self.fields: list[Field] = []
        self.field_names = Namer(FIELD_RESERVED)
        self.var_names = Namer()
        self.activations: dict[str, str] = {}
        self.needs_math = False
        self.device_expr: str | None = None
        self._device_var: str | None = None
        self.dim_vars: dict[str, str] = {}
        self.ranks: dict[str, int] = {}
        self.constants_src: list[str] = []
        self._shared: dict[str, str] = {}
        self.uses: dict[str, int] = {}
        for n in graph.nodes:
            for i in n.inputs:
                if i:
                    self.uses[i] = self.uses.get(i, 0) + 1
        for o in graph.outputs:
            self.uses[o.name] = self.uses.get(o.name, 0) + 1
        self.producer: dict[str, Node] = {o: n for n in graph.nodes for o in n.outputs if o}
        self.consumers: dict[str, list[Node]] = {}
        for n in graph.nodes:
            for i in n.inputs:
                if i:
                    self.consumers.setdefault(i, []).append(n)

    # ------------------------------------------------------------------ inputs of a node
    def info(self, name: str) -> ValueInfo | None:
        for v in (*self.graph.inputs, *self.graph.outputs):
            if v.name == name:
                return v
        return self.graph.value_info.get(name)

    def rank(self, name: str) -> int | None:
        if name in self.weights:
            return len(self.weights[name].shape)
        if name in self.constants:
            return len(self.constants[name].shape)
        info = self.info(name)
        if info is not None and info.shape is not None:
            return len(info.shape)
        if name in self.ranks:
            return self.ranks[name]
        node = self.producer.get(name)
        return None if node is None else self._rank_from(node)

    #: ops whose output has the rank of their (broadcast) inputs
    _SAME_RANK = frozenset({"Add", "Sub", "Mul", "Div", "Pow", "Mod", "Where", "Erf", "Sqrt", "Exp", "Log", "Abs",
                            "Neg", "Reciprocal", "Relu", "Sigmoid", "Tanh", "Softmax", "LogSoftmax", "Cast",
                            "Transpose", "Slice", "Concat", "Dropout", "LayerNormalization", "Gelu", "MatMul",
                            "Identity", "Equal", "Less", "Greater", "Not", "Clip", "Expand"})

    def _rank_from(self, node: Node) -> int | None:
        op = node.op_type
        ins = [self.rank(i) for i in node.inputs if i]
        if op in self._SAME_RANK:
            known = [r for r in ins if r is not None]
            return max(known) if known else None
        if op in ("Unsqueeze", "Squeeze") and ins and ins[0] is not None:
            axes = node.attrs.get("axes")
            if axes is None and len(node.inputs) > 1 and node.inputs[1]:
                v = self.env.get(node.inputs[1])
                axes = v.const if v is not None and v.known else None
                if axes is None and node.inputs[1] in self.constants:
                    axes = self.constants[node.inputs[1]].to_numpy().reshape(-1).tolist()
            if axes is not None:
                n = len(axes) if isinstance(axes, list) else 1
                return ins[0] + n if op == "Unsqueeze" else ins[0] - n
        if op == "Gather" and len(ins) == 2 and ins[0] is not None and ins[1] is not None:
            return ins[0] - 1 + ins[1]
        if op == "Reshape":
            v = self.env.get(node.inputs[1])
            if v is not None and v.items is not None:
                return len(v.items)
            if v is not None and v.known and isinstance(v.const, list):
                return len(v.const)
        return None

    def dtype(self, name: str) -> DType | None:
        if name in self.weights:
            return self.weights[name].dtype
        if name in self.constants:
            return self.constants[name].dtype
        info = self.info(name)
        return None if info is None else info.dtype

    def val(self, node: Node, i: int) -> Val | None:
        """Input ``i`` of ``node`` (None when omitted)."""
        if i >= len(node.inputs) or not node.inputs[i]:
            return None
        name = node.inputs[i]
        v = self.env.get(name)
        if v is not None:
            return v
        if name in self.weights:
            v = Val(expr="", weight=name)
        elif name in self.constants:
            data = self.constants[name]
            v = self._constant(name, data)
        else:
            raise ModelGenError(f"{node.where()}: input {name!r:.80} is not computed before it is used.")
        self.env[name] = v
        return v

    def _constant(self, name: str, data: TensorData) -> Val:
        n = 1
        for d in data.shape:
            n *= d
        if n <= INLINE_LIMIT:
            value = python_value(data)
            return Val(expr=literal(value), host=True, const=value, known=True)
        return Val(expr="", weight=name)

    def tensor(self, node: Node, i: int) -> str:
        """Input ``i`` as a Tensor expression (weights become fields, host values tensors)."""
        v = self.val(node, i)
        if v is None:
            raise ModelGenError(f"{node.where()}: input {i} is required.")
        if v.weight is not None:
            return self.weight_field(v.weight)
        if v.host:
            return self.host_tensor(v, self.dtype(node.inputs[i]))
        return v.expr

    def host(self, node: Node, i: int) -> Val | None:
        """Input ``i`` as a host value (shapes, axes, scales).

        Raises:
            ModelGenError: the input is computed from tensor data (a data-dependent shape).
        """
        v = self.val(node, i)
        if v is None:
            return None
        if v.weight is not None:
            data = self.weights.get(v.weight) or self.constants[v.weight]
            value = python_value(data)
            return Val(expr=literal(value), host=True, const=value, known=True)
        if not v.host:
            raise ModelGenError(
                f"{node.where()}: input {node.inputs[i]!r:.80} is read as a shape or attribute but is computed from "
                "tensor data; generated code keeps shapes in Python. Use the runtime module "
                "(ember_import.onnx.load_model), which runs such models eagerly."
            )
        return v

    def const(self, node: Node, i: int, default: Any = None) -> Any:
        """Input ``i`` as a value known now (a constant), or ``default`` when omitted.

        Raises:
            ModelGenError: the input is only known when the model runs.
        """
        v = self.host(node, i)
        if v is None:
            return default
        if not v.known:
            raise ModelGenError(f"{node.where()}: input {node.inputs[i]!r:.80} must be a constant for generated code.")
        return v.const

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

    def weight_field(self, onnx_name: str) -> str:
        """A weight no layer claims, as a ``Param`` field (``self.name.val()``)."""
        for f in self.fields:
            if f.layer == "Param" and f.source == onnx_name:
                return f"self.{f.name}.val()"
        data = self.weights.get(onnx_name) or self.constants[onnx_name]
        shape = [int(d) for d in data.shape]
        device, frozen = Name("device"), (("require_grad", False),)
        normal = Call(Attr(Name("nn"), "Normal"), (0.0, 0.02))
        ctor: Expr
        if data.dtype.is_float and onnx_name in self.weights:
            ctor = Call(Attr(normal, "init_param"), (shape, device))
        elif data.dtype.is_float:
            ctor = Call(Name("Param"), (Call(Attr(normal, "init"), (shape, device)),), frozen)
        else:
            ctor = Call(Name("Param"), (Call(Attr(Name("Tensor"), "zeros"), (shape, device, Name("Int"))),), frozen)
        base = onnx_name.split("::")[-1]
        name = self.field_names.take(identifier(base, "weight"))
        self.fields.append(Field(name, "Param", ctor, {"": data}, onnx_name, "Param"))
        return f"self.{name}.val()"

    def activation(self, cls: str, ctor: Expr) -> str:
        """The shared field of an activation layer (``self.relu``), one per distinct configuration."""
        key = source(ctor)
        if key not in self.activations:
            base = identifier(cls)
            self.activations[key] = self.add_field(base, f"nn.{cls}", ctor, {}, None, cls)
        return f"self.{self.activations[key]}"

    # ------------------------------------------------------------------ outputs
    def var(self, node: Node, index: int = 0, base: str | None = None) -> str:
        """A readable variable name for output ``index`` of ``node``."""
        out = node.outputs[index]
        for o in self.graph.outputs:
            if o.name == out:
                return self.var_names.take(identifier(out, "output"))
        if base is None:
            scope = scope_path(node.name).split(".")[-1] if scope_path(node.name) else ""
            op = identifier(node.op_type)
            sc = identifier(scope) if scope and not scope.isdigit() else ""
            base = sc if sc.startswith(op) else f"{sc}_{op}" if sc else op
        return self.var_names.take(identifier(base))

    def emit(self, node: Node, expr: str, *, index: int = 0, host: bool = False, base: str | None = None) -> str:
        """``var = expr`` for output ``index``; returns the variable."""
        name = self.var(node, index, base)
        self.lines.append(f"{name} = {expr}")
        self.env[node.outputs[index]] = Val(expr=name, host=host)
        return name

    def known(self, node: Node, value: Any, index: int = 0) -> None:
        """Output ``index`` is a value known now: it is written as a literal where used."""
        self.env[node.outputs[index]] = Val(expr=literal(value), host=True, const=value, known=True)

    def dim(self, tensor_expr: str, axis: int, symbol: Any) -> str:
        """The expression of dim ``axis`` of a tensor: a literal when static, a named variable for a symbolic
        dim (``batch = input_.shape[0]``, written once), else ``x.shape[axis]``."""
        if isinstance(symbol, int):
            return str(symbol)
        if isinstance(symbol, str) and symbol and not symbol.startswith("unk__"):
            var = self.dim_vars.get(symbol)
            if var is None:
                var = self.var_names.take(identifier(symbol, "dim"))
                self.dim_vars[symbol] = var
                self.lines.append(f"{var} = {tensor_expr}.shape[{axis}]")
            return var
        return f"{tensor_expr}.shape[{axis}]"

    def device(self) -> str:
        """The device expression of ``forward`` (the first tensor input's, else the first field's)."""
        if self._device_var is None:
            if self.device_expr is None:
                raise ModelGenError("the model has no tensor input to take the device from.")
            self._device_var = "device"
            self.lines.append(f"device = {self.device_expr}")
        return self._device_var

    def host_tensor(self, v: Val, dtype: DType | None) -> str:
        """A host value (Python scalar or list) as a tensor on the forward's device."""
        dev = self.device()
        if dtype is not None and dtype.is_float:
            return f"Tensor.from_floats({v.expr}, {dev})"
        if dtype is DType.BOOL:
            return f"Tensor.from_bool({v.expr}, {dev})"
        return f"Tensor.from_ints({v.expr}, {dev})"
