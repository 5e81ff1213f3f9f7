"""Sequences whose length is known only when the generated code runs: Python lists of generated code.

A sequence built in straight-line code (``SequenceConstruct``, ``SplitToSequence`` with constant splits) is a
Python list of traced tensors during the trace, its length fixed. A sequence graph input (``list[Tensor]``), or
one carried through a ``Loop`` (a list the body appends to, TorchScript's ``ys.append(y)`` then
``torch.stack(ys)``), has a length only the run knows: it is a :class:`SeqVal`, a list variable of the generated
code with a stand-in of its elements, and the sequence ops on it are written as list code here:
``SequenceInsert`` without a position as ``[*seq, t]``, at a position ``p`` as ``[*seq[:p], t, *seq[p:]]`` after
a check of ``p`` against ``[-len(seq), len(seq)]`` (``list.insert`` would clamp it), ``SequenceAt`` as ``seq[i]``
(Python's negative indices are ONNX's; an index past the end raises ``IndexError`` as the runtime refuses it),
``SequenceLength`` as ``len(seq)``, ``SequenceErase`` without a position as ``seq[:-1]``, at one as ``del
out[p]`` on a copy (``IndexError`` out of ``[-n, n - 1]``), ``ConcatFromSequence`` as
``Tensor.stack``/``Tensor.cat``. The elements' sizes are run-time sizes (``item.shape[0]``). Semantics: the ONNX
operator specification and :mod:`..ops._sequence`.
"""

from __future__ import annotations

from typing import Any

from ember import Tensor

from .._ir import Node
from .._program import host_device
from ._errors import ModelGenError
from ._gen import Gen
from ._gen_state import Line
from ._optval import OptVal
from ._seqval import SeqVal
from ._sym import Parts, Sym, Var
from ._trace import untraced

__all__ = ["SEQUENCE_OPS", "SeqVal", "convert_sequence", "seq_arg"]

#: the ops written as list code on a :class:`SeqVal`
SEQUENCE_OPS = frozenset(
    {"Identity", "SequenceInsert", "SequenceAt", "SequenceLength", "SequenceErase", "ConcatFromSequence"}
)


def seq_arg(g: Gen, v: Any) -> Parts:
    """The source of a value that may be a :class:`SeqVal` or an :class:`~._optval.OptVal` (its variable)."""
    return (v.var,) if isinstance(v, (SeqVal, OptVal)) else g.arg(v)


def _need_elem(node: Node, s: SeqVal) -> Tensor:
    if s.elem is None:
        raise ModelGenError(
            f"{node.where()}: reads an element of a sequence whose element rank is unknown (an input declared "
            "without an element shape, or one that starts empty before anything was appended to it); generated "
            "code needs an element to trace with. Give the sequence's element type a shape, or use "
            "ember_import.onnx.load_model."
        )
    return s.elem


def _free_dims(g: Gen, t: Tensor, var: Var) -> Tensor:
    """``t``'s copy bound to ``var`` with every dim a run-time size (elements may differ in shape)."""
    with untraced():
        out = Tensor.from_data(t.to_data(), t.device, dtype=t.dtype)
        shape = [int(d) for d in out.shape]
    return g.bind(out, var, tuple(Sym(d, (var, f".shape[{i}]")) for i, d in enumerate(shape)))


#: the ops that take a position input, and its index
_AT = {"SequenceInsert": 2, "SequenceErase": 1}


def _position(g: Gen, pos: Any, base: str) -> Var:
    """A variable holding the position ``pos`` as a Python int (``position = int(pos.into_scalar())``)."""
    var = g.new_var(base)
    g.lines.append(Line((var,), _index(g, pos)))
    return var


def _index(g: Gen, pos: Any) -> Parts:
    if isinstance(pos, Tensor) and (g.is_traced(pos) or id(pos) in g.host_syms):
        return ("int(", *g.arg(pos, atom=True), ".into_scalar())")
    with untraced():
        return (str(int(pos.into_scalar())),)


def convert_sequence(g: Gen, node: Node, args: list[Any]) -> None:
    """Write ``node``, one of whose inputs is a :class:`SeqVal`, as list code and bind its output.

    Raises:
        ModelGenError: an op or a position argument this module does not write (the message says which).
    """
    op = node.op_type
    seq = args[0] if args and isinstance(args[0], SeqVal) else None
    if seq is None or op not in SEQUENCE_OPS:
        raise ModelGenError(
            f"{node.where()}: a sequence whose length is known only when the code runs reaches {op}; generated "
            "code writes SequenceInsert, SequenceErase, SequenceAt, SequenceLength and ConcatFromSequence on it. "
            "Use ember_import.onnx.load_model."
        )
    base = node.outputs[0] if node.outputs and node.outputs[0] else op
    var = g.new_var(base)
    at = _AT.get(op, len(args))
    pos = args[at] if at < len(args) else None
    out: Any
    if op == "Identity":
        out = seq
    elif op == "SequenceInsert" and pos is None:
        g.lines.append(Line((var,), ("[*", seq.var, ", ", *g.arg(args[1]), "]")))
        out = SeqVal(var, args[1])
    elif op == "SequenceInsert":  # list.insert clamps a position out of range: checked as the runtime does
        p = _position(g, pos, "position")
        bound = ("len(", seq.var, ")")
        g.lines.append(Line((), ("if not -", *bound, " <= ", p, " <= ", *bound, ":\n    raise IndexError(",
                                 'f"SequenceInsert: position {', p, "} is outside [-{", *bound, "}, {", *bound,
                                 '}]")')))
        g.lines.append(Line((var,), ("[*", seq.var, "[:", p, "], ", *g.arg(args[1]), ", *", seq.var, "[", p,
                                     ":]]")))
        out = SeqVal(var, args[1] if seq.elem is None else seq.elem)
    elif op == "SequenceErase" and pos is None:
        g.lines.append(Line((var,), (seq.var, "[:-1]")))
        out = SeqVal(var, seq.elem)
    elif op == "SequenceErase":  # ``del`` raises IndexError out of [-n, n - 1], as the runtime refuses it
        p = _position(g, pos, "position")
        g.lines.append(Line((var,), ("list(", seq.var, ")")))
        g.lines.append(Line((), ("del ", var, "[", p, "]")))
        out = SeqVal(var, seq.elem)
    elif op == "SequenceAt":
        g.lines.append(Line((var,), (seq.var, "[", *_index(g, args[1]), "]")))
        out = _free_dims(g, _need_elem(node, seq), var)
    elif op == "SequenceLength":
        g.lines.append(Line((var,), ("Tensor.from_data(len(", seq.var, "), ", g.device(), ', dtype="int64")')))
        g.imports.add(("ember", "Tensor"))
        with untraced():
            out = g.bind(Tensor.from_data(2, host_device(), dtype="int64"), var)
    else:  # ConcatFromSequence
        elem = _need_elem(node, seq)
        rank = len(elem.shape)
        new_axis = int(node.attr("new_axis", 0))
        axis = int(node.attr("axis"))
        if axis < 0:
            axis += rank + 1 if new_axis else rank
        call = "stack" if new_axis else "cat"
        g.imports.add(("ember", "Tensor"))
        g.lines.append(Line((var,), (f"Tensor.{call}(", seq.var, f", {axis})")))
        with untraced():
            shadow = Tensor.stack([elem, elem], axis) if new_axis else Tensor.cat([elem, elem], axis)
        out = _free_dims(g, shadow, var)
    if node.outputs and node.outputs[0]:
        g.env[node.outputs[0]] = out
