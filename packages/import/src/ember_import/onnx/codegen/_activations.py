"""Layer recognition of the activations: element-wise ONNX activation nodes (and the erf form of GELU that
exporters write as five nodes) and ``Dropout`` that become shared Ember activation fields of the generated module
(``self.relu``).

Semantics follow the ONNX operator specification (onnx/docs/Operators.md) for the nodes and the Ember layers'
docstrings for the layers.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .._ir import Node
from ._errors import ModelGenError
from ._expr import Attr, Call, Expr, Name, layer
from ._gen import Gen

__all__ = ["activation", "dropout", "gelu_erf", "gelu_tanh"]


def _scalar_weight(g: Gen, name: str) -> float | None:
    v = g.env.get(name)
    if v is not None and not g.is_traced(v) and id(v) not in g.host_syms and v.num_elements() == 1:
        return float(v.reshape([]).into_scalar())
    data = g.constants.get(name)
    if data is not None and int(np.prod(data.shape, dtype=np.int64)) == 1:
        return float(data.to_numpy().reshape(-1)[0])
    return None


def _only_user(g: Gen, value: str, op: str) -> Node | None:
    users = g.consumers.get(value, [])
    if len(users) == 1 and g.uses.get(value, 0) == 1 and users[0].op_type == op:
        return users[0]
    return None


def _other(node: Node, value: str) -> str:
    return node.inputs[1] if node.inputs[0] == value else node.inputs[0]


def gelu_erf(g: Gen, node: Node) -> list[Node] | None:
    """The erf form of GELU that exporters write, ``x * 0.5 * (1 + erf(x / sqrt(2)))`` (Div, Erf, Add, Mul,
    Mul in either order of the two products) -> ``Gelu`` (Hendrycks & Gimpel 2016)."""
    if node.op_type != "Div" or len(node.inputs) != 2:
        return None
    x = node.inputs[0]
    c = _scalar_weight(g, node.inputs[1])
    if c is None or abs(c - 2**0.5) > 1e-6:
        return None
    erf = _only_user(g, node.outputs[0], "Erf")
    add = erf and _only_user(g, erf.outputs[0], "Add")
    if erf is None or add is None or _scalar_weight(g, _other(add, erf.outputs[0])) != 1.0:
        return None
    m1 = _only_user(g, add.outputs[0], "Mul")
    if m1 is None:
        return None
    if _other(m1, add.outputs[0]) == x:
        m2 = _only_user(g, m1.outputs[0], "Mul")
        if m2 is None or _scalar_weight(g, _other(m2, m1.outputs[0])) != 0.5:
            return None
    else:
        return None
    field = g.activation("Gelu", _plain("Gelu"))
    xv = g.tensor(node, 0)
    g.emit(m2, f"{field}({xv})", base="gelu")
    return [node, erf, add, m1, m2]


def _near(g: Gen, name: str, want: float) -> bool:
    c = _scalar_weight(g, name)
    return c is not None and abs(c - want) <= 1e-6 * max(1.0, abs(want))


def gelu_tanh(g: Gen, node: Node) -> list[Node] | None:
    """The tanh form of GELU that exporters write for ``gelu(approximate="tanh")``,
    ``0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x * x * x)))`` as ``Mul(x, x)``, ``Mul(x, .)``,
    ``Mul(0.044715, .)``, ``Add(x, .)``, ``Mul(sqrt(2 / pi), .)``, ``Tanh``, ``Add(1, .)``, ``Mul(x, .)``,
    ``Mul(0.5, .)`` (operands in either order) -> ``Gelu(approximate=True)`` (Hendrycks & Gimpel 2016, eq. 2)."""
    if node.op_type != "Mul" or len(node.inputs) != 2 or node.inputs[0] != node.inputs[1]:
        return None
    x = node.inputs[0]
    chain = [node]
    # (op, the other operand: x, or a constant's value)
    for op, other in (("Mul", x), ("Mul", 0.044715), ("Add", x), ("Mul", (2 / np.pi) ** 0.5), ("Tanh", None),
                      ("Add", 1.0), ("Mul", x), ("Mul", 0.5)):
        nxt = _only_user(g, chain[-1].outputs[0], op)
        if nxt is None:
            return None
        if other is not None:
            o = _other(nxt, chain[-1].outputs[0])
            if (o != x) if isinstance(other, str) else not _near(g, o, float(other)):
                return None
        chain.append(nxt)
    field = g.activation("Gelu", layer("GeluConfig", approximate=True, device=False))
    g.emit(chain[-1], f"{field}({g.tensor(node, 0)})", base="gelu")
    return chain


def _plain(cls: str) -> Expr:
    return Call(Attr(Name("nn"), cls))


def _fixed(cls: str) -> Callable[[Node], Expr]:
    return lambda n: _plain(cls)


def _gelu(node: Node) -> Expr:
    approximate = node.attr("approximate", "none")
    if approximate not in ("none", "tanh"):  # as the runtime converter (ops/_activation.py) refuses it
        raise ModelGenError(f"{node.where()}: approximate must be 'none' or 'tanh', found {approximate!r:.80}.")
    return _plain("Gelu") if approximate == "none" else layer("GeluConfig", approximate=True, device=False)


def _alpha(cls: str, default: float) -> Callable[[Node], Expr]:
    return lambda n: layer(f"{cls}Config", float(n.attr("alpha", default)), device=False)


#: activation ops -> (layer class, its construction from the node)
_ACTIVATIONS: dict[str, tuple[str, Callable[[Node], Expr]]] = {
    **{op: (op, _fixed(op)) for op in ("Relu", "Sigmoid", "Tanh", "Softsign", "Mish", "HardSwish", "Softplus")},
    "LeakyRelu": ("LeakyRelu", _alpha("LeakyRelu", 0.01)),
    "Elu": ("Elu", _alpha("Elu", 1.0)),
    "HardSigmoid": ("HardSigmoid", lambda n: layer("HardSigmoidConfig", float(n.attr("alpha", 0.2)),
                                                   float(n.attr("beta", 0.5)), device=False)),
    "Gelu": ("Gelu", lambda n: _gelu(n)),
}


def activation(g: Gen, node: Node) -> list[Node] | None:
    """Element-wise activations -> one shared field per activation and configuration (``self.relu``)."""
    spec = _ACTIVATIONS.get(node.op_type)
    if spec is None or node.domain not in ("", "ai.onnx"):
        return None
    cls, make = spec
    field = g.activation(cls, make(node))
    g.emit(node, f"{field}({g.tensor(node, 0)})")
    return [node]


def dropout(g: Gen, node: Node) -> list[Node] | None:
    """``Dropout`` (its mask output unused) -> ``Dropout`` (active only on an autodiff device, as in Burn)."""
    if node.op_type != "Dropout" or (len(node.outputs) > 1 and node.outputs[1] and g.uses.get(node.outputs[1])):
        return None
    ratio = float(node.attr("ratio", 0.5))
    if any(v is not None and not v.known for v in (g.val(node, 1), g.val(node, 2))):
        return None  # ratio or training_mode from the data: the converter keeps them as tensors
    if len(node.inputs) > 1 and node.inputs[1]:
        ratio = float(g.const(node, 1))
    field = g.activation("Dropout", layer("DropoutConfig", ratio, device=False))
    g.emit(node, f"{field}({g.tensor(node, 0)})")
    return [node]
