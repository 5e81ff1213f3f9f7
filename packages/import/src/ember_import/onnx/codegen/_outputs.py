"""What a generated ``forward`` returns for each graph output, as ``load_model``'s module returns it: a tensor,
a sequence as a ``list`` of tensors, an optional as its value or ``None``.

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
from ._sym import parts_text

__all__ = ["output_source"]


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
    if v is None and kind == "optional":
        return "None", "Tensor | None"
    raise ModelGenError(f"output {info.name!r:.80} ({info.describe()}) is a {type(v).__name__} in the trace; "
                        "generated code returns tensors, lists of tensors (sequences) and None (empty optionals).")
