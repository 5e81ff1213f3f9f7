"""Layer recognition of the recurrent layers: ONNX ``LSTM`` / ``GRU`` nodes on weights become Ember fields, in every
direction and layout (:func:`~._recurrent_match.spec` says which nodes map):

- LSTM ``forward`` / ``reverse``: an ``nn.Lstm`` (the reverse one reads the time-flipped sequence);
  ``bidirectional``: an ``nn.BiLstm``.
- GRU ``forward`` / ``reverse``: an ``nn.Gru`` (``reset_after`` = ``linear_before_reset``); ``bidirectional``: two
  ``nn.Gru`` fields (``<name>_forward``, ``<name>_reverse``), their outputs concatenated as PyTorch's ``nn.GRU``.

Weights are reordered to PyTorch's gate order and names (``weight_ih_l0``, ``..._l0_reverse``), which
:class:`~ember_import.ImportedRecord` converts to the fused layout (``weight_ih [d_input, G d_hidden]``) with the
PyTorch importer's rules. The generated code reads batch-first: an input that the exporter transposed from a
batch-first tensor is read before the transposition, an all-zero initial state (PyTorch's default) is left out,
and the exporter's reshaping of ``Y`` into ``[seq, batch, num_dir hidden]`` (and back to batch-first) becomes
the layer's output itself. A node the layers cannot express (``clip``, custom activations, peepholes,
``sequence_lens``, ``input_forget``, computed weights, non-float32 types) is traced through its converter.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember import TensorData

from .._ir import Node
from ._expr import layer
from ._gen import Gen
from ._gen_state import Line
from ._layers import _base
from ._recurrent_match import RnnSpec, batch_first_alias, chain, producer, spec, zero_state
from ._sym import Var

__all__ = ["recurrent"]

#: ONNX gate order -> PyTorch's (rows of W, R and each half of B): LSTM ``i o f c`` -> ``i f g o``,
#: GRU ``z r h`` -> ``r z n``
_LSTM_ORDER = (0, 2, 3, 1)
_GRU_ORDER = (1, 0, 2)


def _gates(t: np.ndarray, order: tuple[int, ...]) -> np.ndarray:
    return np.concatenate([np.split(t, len(order), axis=0)[i] for i in order], axis=0)


def _td(a: np.ndarray) -> TensorData:
    return TensorData(np.ascontiguousarray(a))


def _state(s: RnnSpec, k: int, suffix: str) -> dict[str, TensorData]:
    """Direction ``k``'s weights in PyTorch's layout and names (``weight_ih_l0{suffix}`` ...)."""
    order = _LSTM_ORDER if s.lstm else _GRU_ORDER
    out = {f"weight_ih_l0{suffix}": _td(_gates(s.w[k], order)), f"weight_hh_l0{suffix}": _td(_gates(s.r[k], order))}
    if s.b is not None:
        half = s.b.shape[1] // 2
        out[f"bias_ih_l0{suffix}"] = _td(_gates(s.b[k, :half], order))
        out[f"bias_hh_l0{suffix}"] = _td(_gates(s.b[k, half:], order))
    return out


def _config(s: RnnSpec, cls: str) -> Any:
    kwargs: dict[str, Any] = {} if s.b is not None else {"bias": False}
    if not s.lstm and not s.reset_after:
        kwargs["reset_after"] = False
    return layer(f"{cls}Config", s.d_input, s.hidden, **kwargs)


def _input(g: Gen, node: Node, s: RnnSpec) -> str:
    """The batch-first source of ``X``."""
    name = node.inputs[0]
    if s.batch_first:
        return g.tensor(node, 0)
    alias = batch_first_alias(g).get(name)
    if alias is not None:
        return str(alias.name)
    prev = producer(g, name)
    if prev is not None and prev.op_type == "Transpose" and list(prev.attr("perm", [])) == [1, 0, 2] \
            and g.is_traced(g.value(prev.inputs[0])):
        return g.tensor(prev, 0)
    return f"{g.tensor(node, 0)}.swap_dims(0, 1)"


def _initial(g: Gen, node: Node, i: int, s: RnnSpec) -> str | None:
    """Initial state input ``i`` (5: ``initial_h``, 6: ``initial_c``) as source, ``None`` when absent or zero."""
    if i >= len(node.inputs) or not node.inputs[i] or zero_state(g, node.inputs[i]):
        return None
    return g.tensor(node, i)


def _direction(h: str, k: int, s: RnnSpec) -> str:
    return f"{h}[:, {k}]" if s.batch_first else f"{h}[{k}]"


def _line(g: Gen, var: Var, text: str) -> None:
    g.lines.append(Line((var,), (text,)))


def recurrent(g: Gen, node: Node) -> list[Node] | None:
    """``LSTM`` / ``GRU`` -> ``nn.Lstm`` / ``nn.BiLstm`` / ``nn.Gru`` fields (see the module docstring)."""
    s = spec(g, node)
    if s is None:
        return None
    x = _input(g, node, s)
    if not s.lstm and len(s.directions) == 2 and not x.isidentifier():  # read twice: once on its own line
        xv = g.new_var(f"{node.op_type.lower()}_input")
        _line(g, xv, x)
        x = xv.name
    h0, c0 = _initial(g, node, 5, s), (_initial(g, node, 6, s) if s.lstm else None)
    base, source = _base(g, node, 1, node.op_type.lower())
    bidirectional = len(s.directions) == 2
    outs = list(node.outputs) + [""] * (3 - len(node.outputs))
    used = {i for i, o in enumerate(outs) if o and g.uses.get(o)}
    nodes, seq_first, batch_first = chain(g, outs[0], len(s.directions), s.hidden) if 0 in used else ([], None, None)
    last = nodes[-1] if batch_first is not None else node
    out = g.node_var(last, 0, base) if batch_first is not None else g.new_var(base)
    parts: list[str] = []  # per-direction batch-first outputs (bidirectional GRU)
    final = None
    if s.lstm:
        cls = "BiLstm" if bidirectional else "Lstm"
        state = {k: v for d, suffix in enumerate(("", "_reverse")[: len(s.directions)])
                 for k, v in _state(s, d, suffix).items()}
        field = g.add_field(base, f"nn.{cls}", _config(s, cls), state, source, cls)
        st = ""
        if h0 is not None or c0 is not None:
            if bidirectional:
                hh, cc = ((f"{v}.swap_dims(0, 1)" if s.batch_first else v) if v else None for v in (h0, c0))
            else:
                hh, cc = (_direction(v, 0, s) if v else None for v in (h0, c0))
            hh = hh or f"{cc}.zeros_like()"
            cc = cc or f"{hh}.zeros_like()"
            st = f", nn.LstmState(cell={cc}, hidden={hh})"
        final = g.new_var(f"{field}_state") if used & {1, 2} else Var("_")
        reverse = s.directions == ("reverse",)
        seq = g.new_var(field) if reverse else out
        call = f"self.{field}({x}.flip([1]){st})" if reverse else f"self.{field}({x}{st})"
        g.lines.append(Line((seq, final), (call,)))
        if reverse:
            _line(g, out, f"{seq.name}.flip([1])")
    else:
        fields = []
        for d, direction in enumerate(s.directions):
            name = f"{base}_{direction}" if bidirectional else base
            fields.append(g.add_field(name, "nn.Gru", _config(s, "Gru"), _state(s, d, ""), source, "Gru"))
        for d, (direction, field) in enumerate(zip(s.directions, fields)):
            h = f", {_direction(h0, d, s)}" if h0 is not None else ""
            var = g.new_var(field) if bidirectional else out
            call = f"self.{field}({x}.flip([1]){h}).flip([1])" if direction == "reverse" else f"self.{field}({x}{h})"
            _line(g, var, call)
            parts.append(var.name)
        if bidirectional:
            _line(g, out, f"Tensor.cat([{parts[0]}, {parts[1]}], 2)")
            g.imports.add(("ember", "Tensor"))
    _outputs(g, node, s, out, final, parts, outs, used, nodes, seq_first, batch_first)
    return [node, *nodes]


def _outputs(g: Gen, node: Node, s: RnnSpec, out: Var, final: Var | None, parts: list[str], outs: list[str],
             used: set[int], nodes: list[Node], seq_first: str | None, batch_first: str | None) -> None:
    """Bind ``Y`` (or the exporter's reshaped sequence), ``Y_h`` and ``Y_c`` to source computing them from the
    batch-first output ``out`` and the final state."""
    nd, h = len(s.directions), s.hidden
    lay = 1 if s.batch_first else 0
    if batch_first is not None:
        g.pending[batch_first] = out
    elif seq_first is not None:
        var = g.node_var(nodes[-1], 0)
        _line(g, var, f"{out.name}.swap_dims(0, 1)")
        g.pending[seq_first] = var
        batch_first_alias(g)[seq_first] = out
    elif 0 in used:
        if nd == 1:
            y = f"{out.name}.unsqueeze_dim(2)" if lay else f"{out.name}.swap_dims(0, 1).unsqueeze_dim(1)"
        else:
            g.imports.add(("ember", "Tensor"))
            four = f"Tensor.stack([{parts[0]}, {parts[1]}], 2)" if parts else \
                f"Tensor.stack({out.name}.split({h}, 2), 2)"
            y = four if lay else f"{four}.permute([1, 2, 0, 3])"
        g.emit(node, y, index=0)
    for i, attr in ((1, "hidden"), (2, "cell")):
        if i not in used:
            continue
        if s.lstm:
            assert final is not None
            st = f"{final.name}.{attr}"
            text = (f"{st}.swap_dims(0, 1)" if lay else st) if nd == 2 else f"{st}.unsqueeze_dim({lay})"
        else:
            steps = [f"{p}[:, {-1 if d == 'forward' else 0}]" for p, d in zip(parts or [out.name], s.directions)]
            if nd == 2:
                g.imports.add(("ember", "Tensor"))
                text = f"Tensor.stack([{steps[0]}, {steps[1]}], {lay})"
            else:
                text = f"{steps[0]}.unsqueeze_dim({lay})"
        g.emit(node, text, index=i, base=f"{out.name}_{'h' if i == 1 else 'c'}")
