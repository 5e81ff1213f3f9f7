"""A sequence of run-time length in the trace (:class:`SeqVal`): the list variable of the generated code and a
stand-in of its elements. Below :mod:`._gen`, :mod:`._runlist` and :mod:`._seqs`, which make and read it."""

from __future__ import annotations

from typing import Any

from ember import Tensor

from ._errors import ModelGenError
from ._sym import Var

__all__ = ["SeqVal"]


class SeqVal:
    """A sequence of run-time length: the list variable ``var`` and ``elem``, a stand-in of its elements
    (``None`` while no element was seen: an empty start)."""

    __slots__ = ("elem", "var")

    def __init__(self, var: Var, elem: Tensor | None) -> None:
        self.var = var
        self.elem = elem

    def _count(self, *_: Any) -> Any:
        """A converter that counts, indexes or iterates the sequence: its length is known only when the code
        runs (the trace would fix its stand-in's count), so the node is refused."""
        raise ModelGenError(
            f"a sequence whose length is known only when the code runs ({self.var.name}) is counted, indexed or "
            "iterated by a converter; generated code cannot fix its length. Use ember_import.onnx.load_model."
        )

    __iter__ = __len__ = __getitem__ = _count
