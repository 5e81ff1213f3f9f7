"""Layer recognition of the recurrent layers: one-direction ONNX ``LSTM`` / ``GRU`` nodes on weights that become
Ember ``Lstm`` / ``Gru`` fields of the generated module, their weights reordered to PyTorch's gate order and names
(``weight_ih_l0`` ...), which :class:`~ember_import.ImportedRecord` converts with the PyTorch importer's rules.

Semantics follow the ONNX operator specification (onnx/docs/Operators.md, LSTM and GRU) and the Ember layers'
docstrings; a node the layer cannot express (other directions, ``clip``, custom activations, peepholes,
``sequence_lens``) is left to the tensor-op emitters.
"""

from __future__ import annotations

import numpy as np

from ember import TensorData

from .._ir import Node
from ._expr import layer
from ._gen import Gen
from ._layers import _absent, _base, _weight

__all__ = ["recurrent"]


#: ONNX gate order -> PyTorch's (rows of W, R and each half of B): LSTM ``i o f c`` -> ``i f g o``,
#: GRU ``z r h`` -> ``r z n``
_LSTM_ORDER = (0, 2, 3, 1)
_GRU_ORDER = (1, 0, 2)


def _gates(t: np.ndarray, order: tuple[int, ...]) -> np.ndarray:
    return np.concatenate([np.split(t, len(order), axis=0)[i] for i in order], axis=0)


def _td(a: np.ndarray) -> TensorData:
    return TensorData(np.ascontiguousarray(a))


def recurrent(g: Gen, node: Node) -> list[Node] | None:
    """One-direction ``LSTM`` / ``GRU`` (default activations, no ``clip``, no ``sequence_lens``) -> ``Lstm`` /
    ``Gru`` (``linear_before_reset = 1`` is PyTorch's and Ember's ``reset_after``)."""
    if node.op_type not in ("LSTM", "GRU"):
        return None
    w, r, b = _weight(g, node, 1), _weight(g, node, 2), _weight(g, node, 3)
    lstm = node.op_type == "LSTM"
    if w is None or r is None or (b is None and not _absent(node, 3)) or not _absent(node, 4):
        return None
    if node.attr("direction", "forward") != "forward" or node.attr("clip", None) is not None:
        return None
    if node.attr("activations", None) or node.attr("layout", 0) or (lstm and node.attr("input_forget", 0)):
        return None
    if lstm and len(node.inputs) > 7 and node.inputs[7]:
        return None  # peepholes
    if not lstm and not node.attr("linear_before_reset", 0):
        return None
    hidden = int(node.attr("hidden_size", r.shape[-1]))
    order = _LSTM_ORDER if lstm else _GRU_ORDER
    wn, rn = w.to_numpy()[0], r.to_numpy()[0]
    state = {"weight_ih_l0": _td(_gates(wn, order)), "weight_hh_l0": _td(_gates(rn, order))}
    if b is not None:
        bn = b.to_numpy()[0]
        state["bias_ih_l0"] = _td(_gates(bn[: len(bn) // 2], order))
        state["bias_hh_l0"] = _td(_gates(bn[len(bn) // 2:], order))
    cls = "Lstm" if lstm else "Gru"
    bias_arg = {} if b is not None else {"bias": False}
    init = layer(f"{cls}Config", int(wn.shape[1]), hidden, **bias_arg)
    base, _ = _base(g, node, 1, cls.lower())
    field = g.add_field(base, f"nn.{cls}", init, state, None, cls)
    x = g.tensor(node, 0)
    h0 = None if _absent(node, 5) else g.tensor(node, 5)
    outs = node.outputs
    seq = g.var(node, 0, f"{field}_seq")
    if lstm:
        c0 = None if _absent(node, 6) else g.tensor(node, 6)
        st = "" if h0 is None else (
            f", nn.LstmState(cell={c0 + '[0]' if c0 else f'{h0}[0].zeros_like()'}, hidden={h0}[0])")
        used = any(g.uses.get(o) for o in outs[1:] if o)
        final = g.var_names.take(f"{field}_state") if used else "_"
        g.statement(f"{seq}, {final} = self.{field}({x}.swap_dims(0, 1){st})")
    else:
        st = "" if h0 is None else f", {h0}[0]"
        g.statement(f"{seq} = self.{field}({x}.swap_dims(0, 1){st})")
    if len(outs) > 0 and outs[0]:
        g.emit(node, f"{seq}.swap_dims(0, 1).unsqueeze_dim(1)", index=0, base=f"{field}_y")
    if len(outs) > 1 and outs[1] and g.uses.get(outs[1]):
        last = f"{final}.hidden" if lstm else f"{seq}.select(1, [{seq}.shape[1] - 1]).squeeze_dim(1)"
        g.emit(node, f"{last}.unsqueeze_dim(0)", index=1, base=f"{field}_h")
    if lstm and len(outs) > 2 and outs[2] and g.uses.get(outs[2]):
        g.emit(node, f"{final}.cell.unsqueeze_dim(0)", index=2, base=f"{field}_c")
    return [node]
