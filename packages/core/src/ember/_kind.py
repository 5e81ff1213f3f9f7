"""Tensor kinds: ``Float``, ``Int`` and ``Bool`` (Burn's ``Float``, ``Int``, ``Bool``).

A kind says which family of element types a tensor holds; the exact element type (float32,
int64, ...) is a setting of the backend. Kinds are singletons compared with ``is``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._dtype import DType

__all__ = ["Kind", "Float", "Int", "Bool", "kind_of"]


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
"""The kind of float tensors (float16/32/64, bfloat16)."""
Int = Kind("Int", 1)
"""The kind of integer tensors (signed and unsigned)."""
Bool = Kind("Bool", 2)
"""The kind of boolean tensors."""
KINDS = (Float, Int, Bool)


def kind_of(dtype: DType) -> Kind:
    """The kind holding element type ``dtype``: ``Float`` for float types, ``Bool`` for bool, ``Int`` for the
    signed and unsigned integers."""
    return Float if dtype.is_float else Bool if dtype.kind == "bool" else Int
