"""The graph's inputs and outputs as a generated ``forward`` takes and returns them.

Outputs are returned as ``load_model``'s module returns them: a tensor, a sequence as a ``list`` of tensors, an
optional as its value or ``None``. Inputs are tensors of an Ember element type and known rank; a sequence or
optional input is refused (its length or emptiness would decide the code's structure), and so is an element type
Ember has no dtype for (float8, 4-bit, 2-bit, strings), which ``load_model`` refuses too.

A sequence's length and an optional's emptiness are fixed by the graph when its inputs are tensors (the trace
saw every op that made them; a count read from the data is refused where it is read), so the generated code
returns a list display (``[seq_0, seq_1, seq_2]``) or ``None``.
"""

from __future__ import annotations

from typing import Any

from ember import Tensor

from .._ir import ValueInfo
from ._errors import ModelGenError
from ._gen import Gen
from ._seqs import SeqVal
from ._sym import parts_text

__all__ = ["check_input", "output_source"]


def check_input(info: ValueInfo) -> None:
    """Refuse a graph input generated code cannot take.

    Raises:
        ModelGenError: a sequence or optional input, an element type without an Ember dtype, or an unknown rank.
    """
    if info.kind in ("sequence", "optional"):
        what = "an optional, whose emptiness" if info.kind == "optional" else "a sequence, whose length"
        raise ModelGenError(f"{info.describe()}: generated code takes tensors; this input is {what} would decide "
                            "the structure of the code. Use ember_import.onnx.load_model.")
    if info.kind != "tensor" or info.dtype is None:
        raise ModelGenError(f"{info.describe()}: its element type has no Ember dtype (float8, 4-bit and 2-bit "
                            "types, strings); load_model cannot run it either. Convert the model's inputs to a "
                            "supported type.")
    if info.shape is None:
        raise ModelGenError(f"{info.describe()}: generated code takes tensors of known rank; give the input a "
                            "shape (onnx.shape_inference or the exporter's input shapes).")


def output_source(g: Gen, info: ValueInfo, v: Any) -> tuple[str, str]:
    """The source of output ``info`` (traced value ``v``) and its annotation.

    Raises:
        ModelGenError: a value that is not a tensor, a list of tensors or (for an optional) ``None``, or a kind
            that does not match the graph's declaration.
    """
    kind = info.kind
    if isinstance(v, Tensor) and kind in ("tensor", "optional"):
        return parts_text(g.arg(v)), "Tensor" if kind == "tensor" else "Tensor | None"
    if isinstance(v, list) and kind in ("sequence", "optional") and all(isinstance(x, Tensor) for x in v):
        items = ", ".join(parts_text(g.arg(x)) for x in v)
        return f"[{items}]", "list[Tensor]" if kind == "sequence" else "list[Tensor] | None"
    if isinstance(v, SeqVal) and kind in ("sequence", "optional"):
        return v.var.name, "list[Tensor]" if kind == "sequence" else "list[Tensor] | None"
    if v is None and kind == "optional":
        return "None", "Tensor | None"
    raise ModelGenError(f"output {info.name!r:.80} ({info.describe()}) is a {type(v).__name__} in the trace; "
                        "generated code returns tensors, lists of tensors (sequences) and None (empty optionals).")
