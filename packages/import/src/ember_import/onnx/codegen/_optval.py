"""An optional whose emptiness is known only when the generated code runs (:class:`OptVal`), and the Python
annotations of the values a generated ``forward`` or method takes and returns (:func:`annotation_of`).

A graph input ``optional<float32[4]>`` is ``Tensor | None`` in generated code, ``optional<sequence<...>>``
``list[Tensor] | None``: the variable holds the value or ``None``. The trace holds it as an :class:`OptVal`: the
variable and a stand-in of the value when present (a tensor, or a :class:`~._seqval.SeqVal`). Below
:mod:`._gen`; :mod:`._optional` writes the ops on it.
"""

from __future__ import annotations

from typing import Any

from ember import Tensor

from ._errors import ModelGenError
from ._seqval import SeqVal
from ._sym import Var

__all__ = ["OptVal", "annotation_of", "merge_annotations"]


class OptVal:
    """An optional of run-time emptiness: the variable ``var`` (``None`` when the code runs with an empty
    optional) and ``inner``, a stand-in of its value (a :class:`~ember.Tensor` not bound to a variable, or a
    :class:`~._seqval.SeqVal`)."""

    __slots__ = ("inner", "var")

    def __init__(self, var: Var, inner: Tensor | SeqVal) -> None:
        self.var = var
        self.inner = inner

    def _use(self, *_: Any) -> Any:
        """A converter that reads the optional as a value: its emptiness is known only when the code runs."""
        raise ModelGenError(
            f"an optional whose emptiness is known only when the code runs ({self.var.name}) is read by a "
            "converter as a value; generated code reads it with OptionalHasElement and OptionalGetElement only. "
            "Use ember_import.onnx.load_model."
        )

    __iter__ = __len__ = __getitem__ = _use


def annotation_of(v: Any) -> str:
    """The annotation of a traced value in generated code: ``Tensor``, ``list[Tensor]`` (a sequence),
    ``Tensor | None`` / ``list[Tensor] | None`` (an optional) or ``None`` (an empty optional).

    Raises:
        ModelGenError: a value of no such kind.
    """
    if isinstance(v, Tensor):
        return "Tensor"
    if isinstance(v, SeqVal) or (isinstance(v, list) and all(isinstance(x, Tensor) for x in v)):
        return "list[Tensor]"
    if isinstance(v, OptVal):
        return f"{annotation_of(v.inner)} | None"
    if v is None:
        return "None"
    raise ModelGenError(f"a {type(v).__name__} value: generated code holds tensors, lists of them and None.")


def merge_annotations(a: str, b: str) -> str | None:
    """The annotation of a value that is ``a`` on one path and ``b`` on another (``Tensor`` and ``None``:
    ``Tensor | None``), or ``None`` when they are different kinds (a tensor and a list)."""
    base_a, base_b = a.removesuffix(" | None"), b.removesuffix(" | None")
    optional = a != base_a or b != base_b or "None" in (a, b)
    if base_a == "None":
        base_a = base_b
    if base_b == "None":
        base_b = base_a
    if base_a != base_b or base_a == "None":
        return None
    return f"{base_a} | None" if optional else base_a
