"""Ember's ONNX IR: typed nodes, value infos and graphs (after Burn's ``onnx-ir``).

The IR is built from the protobuf by :mod:`._parse` and is plain Python: attributes are ``int``,
``float``, ``str``, lists of those, :class:`~ember.TensorData` (tensor attributes) or :class:`Graph`
(sub-graphs of ``If``, ``Loop``, ``Scan``). Shapes come from ``onnx.shape_inference``; a dim is an
``int``, a ``str`` (a symbolic dim such as ``"batch"``) or ``None`` (unknown).
"""

from __future__ import annotations

import dataclasses
from collections.abc import MutableMapping
from typing import Any

from ember import DType, TensorData

from ._errors import OnnxImportError

__all__ = ["Graph", "Node", "ValueInfo", "Dim"]

Dim = int | str | None

_MISSING = object()


@dataclasses.dataclass(frozen=True)
class ValueInfo:
    """A graph input, output or intermediate value.

    Attributes:
        name: the ONNX value name.
        dtype: the element type; ``None`` when unknown or not a tensor (sequences, optionals).
        shape: the dims (``int``, symbolic ``str`` or ``None``); ``None`` when the rank is unknown.
        kind: ``"tensor"``, ``"sequence"``, ``"optional"`` or ``"unknown"``.
        elem: for a sequence or an optional, the type it holds (a tensor's element type and shape, or a
            sequence inside an optional); ``None`` otherwise or when the file does not say.
    """

    name: str
    dtype: DType | None = None
    shape: tuple[Dim, ...] | None = None
    kind: str = "tensor"
    elem: ValueInfo | None = None

    def describe(self) -> str:
        """``"input float32[batch, 3, 224, 224]"``-style text for messages and ``onnx-info``."""
        dt = str(self.dtype) if self.dtype is not None else "?"
        if self.kind != "tensor":
            return f"{self.name}: {self.kind}<{dt}>"
        shape = "?" if self.shape is None else "[" + ", ".join("?" if d is None else str(d) for d in self.shape) + "]"
        return f"{self.name}: {dt}{shape}"


@dataclasses.dataclass(eq=False)
class Node:
    """One ONNX node.

    Attributes:
        op_type: the operator (``"Conv"``); ``domain`` its domain (``""`` is ``ai.onnx``).
        name: the node name (made unique by the parser: ``"<op_type>_<index>"`` when the file has none).
        inputs: input value names in order; ``""`` marks an omitted optional input.
        outputs: output value names; ``""`` marks an omitted optional output.
        attrs: attribute name -> ``int``/``float``/``str``/list/``TensorData``/:class:`Graph`.
    """

    op_type: str
    domain: str
    name: str
    inputs: list[str]
    outputs: list[str]
    attrs: dict[str, Any]

    def attr(self, name: str, default: Any = _MISSING) -> Any:
        """The attribute ``name``, or ``default`` when the node lacks it.

        Raises:
            OnnxImportError: the attribute is required (no default given) and missing.
        """
        value = self.attrs.get(name, _MISSING)
        if value is _MISSING:
            if default is _MISSING:
                raise OnnxImportError(
                    f"{self.op_type} node {self.name!r}: required attribute {name!r} is missing; the model is "
                    "malformed (check it with onnx.checker.check_model)."
                )
            return default
        return value

    def subgraphs(self) -> list[Graph]:
        """The sub-graphs held by attributes (``If``'s branches, ``Loop``/``Scan``'s bodies)."""
        out: list[Graph] = []
        for v in self.attrs.values():
            if isinstance(v, Graph):
                out.append(v)
            elif isinstance(v, list):
                out.extend(g for g in v if isinstance(g, Graph))
        return out

    def where(self) -> str:
        """``"Conv node 'conv1' (opset 13)"``-style location for error messages."""
        return f"{self.op_type} node {self.name!r}"


@dataclasses.dataclass(eq=False)
class Graph:
    """A graph: nodes in topological order, its inputs and outputs, constants and parameters.

    Attributes:
        name: the graph name.
        nodes: the nodes, topologically sorted (as ONNX requires).
        inputs: the inputs a caller passes, in order (initializers listed as inputs are excluded).
        outputs: the outputs, in order.
        initializers: name -> data of every initializer (main graph: float ones become ``Param``s).
        value_info: name -> inferred type and shape of intermediate values (a dict, or the parser's
            :class:`~._parse.ValueInfos`, which converts each entry when it is first read).
        outer: names this (sub-)graph reads from enclosing graphs.
    """

    name: str
    nodes: list[Node]
    inputs: list[ValueInfo]
    outputs: list[ValueInfo]
    initializers: dict[str, TensorData]
    value_info: MutableMapping[str, ValueInfo] = dataclasses.field(default_factory=dict)
    outer: list[str] = dataclasses.field(default_factory=list)

    def walk(self) -> list[Node]:
        """Every node of this graph and of its sub-graphs, depth first."""
        out: list[Node] = []
        for n in self.nodes:
            out.append(n)
            for g in n.subgraphs():
                out.extend(g.walk())
        return out

    # a graph is a static value of OnnxModule: identity is its hash (compiled steps key on it)
    __hash__ = object.__hash__
