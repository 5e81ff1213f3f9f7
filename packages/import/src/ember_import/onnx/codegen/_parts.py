"""Source as parts: the variables of generated code (:class:`Var`, renamed freely until the source is written)
and text, in the order they are written (:data:`Parts`). The lowest module of the trace's values: :mod:`._sym`,
:mod:`._active` and the generator build on it."""

from __future__ import annotations

from typing import Any

__all__ = ["Parts", "Var", "parts_text"]


class Var:
    """A variable of the generated code; ``name`` is final once the source is written."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


#: source as a sequence of text and variables
Parts = tuple[Any, ...]


def parts_text(parts: Parts) -> str:
    return "".join(p.name if isinstance(p, Var) else str(p) for p in parts)
