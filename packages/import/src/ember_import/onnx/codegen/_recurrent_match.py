"""What the recurrent-layer recognizer (:mod:`._recurrent`) reads from the graph around an ``LSTM`` / ``GRU`` node:
whether its attributes map onto Ember's layers, whether an initial state is all zeros by construction, the
batch-first tensor its input was transposed from, and the exporter's reshaping of its output ``Y``.

Attribute semantics follow the ONNX operator specification (onnx/docs/Operators.md, LSTM and GRU): the default
activations are ``Sigmoid, Tanh, Tanh`` (LSTM) and ``Sigmoid, Tanh`` (GRU) per direction; Ember's ``Lstm`` /
``BiLstm`` / ``Gru`` compute exactly these (``Gru(reset_after=linear_before_reset)``), without ``clip``,
``input_forget``, peepholes or ``sequence_lens``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from ember import DType

from .._ir import Node
from ._gen import Gen

__all__ = ["RnnSpec", "batch_first_alias", "chain", "producer", "spec", "zero_state"]

_DEFAULTS = {"LSTM": ("sigmoid", "tanh", "tanh"), "GRU": ("sigmoid", "tanh")}
#: ops whose output is all zeros when their data input (0) is: they only move, repeat or select elements
_MOVES_ZEROS = frozenset({"Slice", "Gather", "Reshape", "Unsqueeze", "Squeeze", "Expand", "Identity", "Transpose",
                          "Tile", "Flatten"})


@dataclasses.dataclass(frozen=True)
class RnnSpec:
    """An ``LSTM`` / ``GRU`` node that maps onto Ember's layers.

    Attributes:
        lstm: LSTM (else GRU).
        directions: ``("forward",)``, ``("reverse",)`` or ``("forward", "reverse")`` (bidirectional).
        batch_first: ``layout = 1`` (``X`` ``[batch, seq, d_input]``, ``Y`` ``[batch, seq, num_dir, hidden]``,
            states ``[batch, num_dir, hidden]``); else ``[seq, batch, ...]``, ``Y`` ``[seq, num_dir, batch,
            hidden]``, states ``[num_dir, batch, hidden]``.
        hidden: ``hidden_size``.
        d_input: the input features (``W``'s last dim).
        reset_after: GRU's ``linear_before_reset``.
        w, r, b: the weights ``W [num_dir, G hidden, d_input]``, ``R``, ``B [num_dir, 2 G hidden]`` (or ``None``)
            in ONNX's gate order.
    """

    lstm: bool
    directions: tuple[str, ...]
    batch_first: bool
    hidden: int
    d_input: int
    reset_after: bool
    w: np.ndarray
    r: np.ndarray
    b: np.ndarray | None


def _absent(node: Node, i: int) -> bool:
    return i >= len(node.inputs) or not node.inputs[i]


def _names(v: Any) -> list[str]:
    return [x.decode() if isinstance(x, bytes) else str(x) for x in (v or [])]


def spec(g: Gen, node: Node) -> RnnSpec | None:
    """The layer ``node`` maps onto, or ``None`` (its converter is traced instead)."""
    if node.op_type not in _DEFAULTS:
        return None
    lstm = node.op_type == "LSTM"
    w, r = g.weights.get(node.inputs[1]), g.weights.get(node.inputs[2]) if len(node.inputs) > 2 else None
    b = g.weights.get(node.inputs[3]) if not _absent(node, 3) else None
    if w is None or r is None or (b is None and not _absent(node, 3)) or not _absent(node, 4):
        return None  # weights computed in the graph, or sequence_lens
    if lstm and not _absent(node, 7):
        return None  # peepholes
    if any(t.dtype is not DType.FLOAT32 for t in (w, r, *([b] if b is not None else []))) \
            or g.dtype(node.inputs[0]) is not DType.FLOAT32:
        return None  # Ember's recurrent layers run in the default float type
    direction = node.attr("direction", "forward")
    direction = direction.decode() if isinstance(direction, bytes) else str(direction)
    dirs = {"forward": ("forward",), "reverse": ("reverse",), "bidirectional": ("forward", "reverse")}.get(direction)
    if dirs is None or node.attr("clip", None) is not None or (lstm and node.attr("input_forget", 0)):
        return None
    acts = [a.lower() for a in _names(node.attr("activations", None))]
    default = list(_DEFAULTS[node.op_type])
    if acts and acts not in (default, default * len(dirs)):
        return None
    wn, rn = w.to_numpy(), r.to_numpy()
    hidden = int(rn.shape[-1])
    gates = 4 if lstm else 3
    if wn.ndim != 3 or wn.shape[0] != len(dirs) or wn.shape[1] != gates * hidden \
            or int(node.attr("hidden_size", hidden)) != hidden:
        return None  # the converter reports the mismatch
    bn = b.to_numpy() if b is not None else None
    if bn is not None and bn.shape != (len(dirs), 2 * gates * hidden):
        return None
    return RnnSpec(lstm, dirs, bool(node.attr("layout", 0)), hidden, int(wn.shape[2]),
                   bool(node.attr("linear_before_reset", 0)), wn, rn, bn)


def producer(g: Gen, name: str) -> Node | None:
    """The node computing ``name`` (``None`` for an input, weight or constant)."""
    table = g.__dict__.get("_producers")
    if table is None:
        table = g.__dict__["_producers"] = {o: n for n in g.graph.nodes for o in n.outputs if o}
    return table.get(name)  # type: ignore[no-any-return]


def batch_first_alias(g: Gen) -> dict[str, Any]:
    """ONNX value name -> the :class:`~._sym.Var` holding the same values batch-first (``[batch, seq, ...]``
    where the value is ``[seq, batch, ...]``): a recognised layer's sequence output before the exporter's
    transposition, so the next layer reads it without transposing back."""
    return g.__dict__.setdefault("_rnn_batch_first", {})  # type: ignore[no-any-return]


def _all_zero(data: Any) -> bool:
    arr = data.to_numpy() if hasattr(data, "to_numpy") else np.asarray(data)
    return bool(arr.size) and not np.any(arr)


def zero_state(g: Gen, name: str, depth: int = 0) -> bool:
    """``name`` is all zeros for every input: a zero constant, or ``ConstantOfShape`` of zero moved by
    ``Slice`` / ``Gather`` / ``Reshape`` ... (PyTorch's exporter writes the default initial state so)."""
    if depth > 8:
        return False
    if name in g.constants:
        return _all_zero(g.constants[name])
    node = producer(g, name)
    if node is None:
        return False
    if node.op_type == "ConstantOfShape":
        value = node.attr("value", None)
        return value is None or _all_zero(value)
    if node.op_type in _MOVES_ZEROS and node.inputs and node.inputs[0]:
        return zero_state(g, node.inputs[0], depth + 1)
    return False


def _only_consumer(g: Gen, name: str) -> Node | None:
    users = g.consumers.get(name, [])
    if g.uses.get(name, 0) != 1 or len(users) != 1:
        return None
    return users[0]


def _const_ints(g: Gen, node: Node, i: int) -> list[int] | None:
    if i >= len(node.inputs) or node.inputs[i] not in g.constants:
        return None
    return [int(v) for v in np.asarray(g.constants[node.inputs[i]].to_numpy()).reshape(-1)]


def chain(g: Gen, y: str, num_dir: int, hidden: int) -> tuple[list[Node], str | None, str | None]:
    """The exporter's nodes after a seq-first ``Y`` that give the sequence ``[seq, batch, num_dir hidden]``:
    ``Squeeze(axes=[1])`` (one direction) or ``Transpose(perm=[0, 2, 1, 3])`` + ``Reshape([0, 0, -1])``, then
    maybe ``Transpose(perm=[1, 0, 2])`` (batch-first). Returns ``(nodes, seq-first name, batch-first name)``;
    ``([], None, None)`` when ``Y`` is used otherwise."""
    first = _only_consumer(g, y)
    if first is None:
        return [], None, None
    nodes: list[Node]
    if first.op_type == "Squeeze" and num_dir == 1:
        axes = list(first.attr("axes", [])) if g.opset < 13 else _const_ints(g, first, 1)
        if axes is None or [int(a) for a in axes] not in ([1], [-3]):
            return [], None, None
        nodes = [first]
    elif first.op_type == "Transpose" and list(first.attr("perm", [])) == [0, 2, 1, 3]:
        second = _only_consumer(g, first.outputs[0])
        shape = _const_ints(g, second, 1) if second is not None and second.op_type == "Reshape" else None
        if second is None or shape is None or second.attr("allowzero", 0) \
                or shape not in ([0, 0, -1], [0, 0, num_dir * hidden]):
            return [], None, None
        nodes = [first, second]
    else:
        return [], None, None
    seq_first = nodes[-1].outputs[0]
    last = _only_consumer(g, seq_first)
    if last is not None and last.op_type == "Transpose" and list(last.attr("perm", [])) == [1, 0, 2]:
        return [*nodes, last], seq_first, last.outputs[0]
    return nodes, seq_first, None
