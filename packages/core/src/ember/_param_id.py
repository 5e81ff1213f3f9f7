"""``ParamId``: the stable identity of a parameter (Burn's ``ParamId``)."""

from __future__ import annotations

import hashlib
import os
from typing import Any

__all__ = ["ParamId"]


class ParamId:
    """A 64-bit identifier of a parameter, stable across saves, loads, device moves and ``valid()``.

    Like Burn, a new id is a random 64-bit unsigned integer; it is shown and serialized as its decimal
    string (``"13513398311627735296"``). Optimizers key their state and gradients by it.

    Args:
        value: ``None`` for a new random id, an ``int`` in ``[0, 2**64)``, or a string from
            :meth:`serialize`. Strings that are not decimal integers (e.g. Burn's legacy 6-character
            ids) are hashed to 64 bits (BLAKE2b), so every string maps to a stable id.

    Raises:
        ValueError: an integer outside ``[0, 2**64)``.
    """

    __slots__ = ("_value",)
    _value: int

    def __init__(self, value: int | str | ParamId | None = None) -> None:
        if value is None:
            v = int.from_bytes(os.urandom(8), "little")
        elif isinstance(value, ParamId):
            v = value._value
        elif isinstance(value, str):
            v = _parse(value)
        elif isinstance(value, int) and not isinstance(value, bool):
            v = value
        else:
            raise TypeError(f"ParamId: expected None, an int or a str, got {type(value).__name__}")
        if not 0 <= v < 1 << 64:
            raise ValueError(f"ParamId: {v} is outside the 64-bit unsigned range [0, 2**64).")
        object.__setattr__(self, "_value", v)

    @property
    def value(self) -> int:
        """The id as an unsigned 64-bit integer."""
        return self._value

    def serialize(self) -> str:
        """The decimal string stored in records (Burn's ``ParamId::serialize``)."""
        return str(self._value)

    @classmethod
    def deserialize(cls, encoded: str) -> ParamId:
        """The id of a string written by :meth:`serialize` (or a legacy non-numeric id, hashed)."""
        return cls(encoded)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("ParamId is immutable")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ParamId) and other._value == self._value

    def __hash__(self) -> int:
        return hash(("ParamId", self._value))

    def __str__(self) -> str:
        return str(self._value)

    def __repr__(self) -> str:
        return f"ParamId({self._value})"

    def __reduce__(self) -> Any:
        return (ParamId, (self._value,))


def _parse(text: str) -> int:
    if text.isdigit() and len(text) <= 20:
        v = int(text)
        if v < 1 << 64:
            return v
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "little")
