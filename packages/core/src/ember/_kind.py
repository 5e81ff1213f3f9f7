"""Tensor kinds: ``Float``, ``Int`` and ``Bool`` (Burn's ``Float``, ``Int``, ``Bool``).

A kind says which family of element types a tensor holds; the exact element type (float32,
int64, ...) is a setting of the backend. Kinds are singletons compared with ``is``.
"""

from __future__ import annotations

__all__ = ["Kind", "Float", "Int", "Bool"]


class Kind:
    """One of the three tensor kinds. ``index`` is 0 (Float), 1 (Int) or 2 (Bool)."""

    __slots__ = ("name", "index")

    def __init__(self, name: str, index: int) -> None:
        self.name = name
        self.index = index

    def __repr__(self) -> str:
        return self.name

    def __reduce__(self) -> str:
        return self.name


Float = Kind("Float", 0)
Int = Kind("Int", 1)
Bool = Kind("Bool", 2)
KINDS = (Float, Int, Bool)
