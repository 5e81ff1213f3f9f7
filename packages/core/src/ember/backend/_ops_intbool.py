"""Int bitwise and Bool logical primitives (Burn's ``int_bitwise_*`` and ``bool_*`` ops).

``b`` is a primitive of the same kind (broadcasting as numpy) or a Python int / bool. Results keep
the element type of ``a``. Shifts take counts in ``[0, bits)``; other counts are backend-defined.
"""

from __future__ import annotations

from typing import Any


def _req(name: str) -> Any:
    raise NotImplementedError(
        f"this backend does not implement the required primitive {name!r}; see ember.backend.Backend"
    )


class IntBoolOps:
    """Bitwise (Int, two's complement) and logical (Bool) primitives."""

    def bitwise_and(self, a: Any, b: Any) -> Any:
        return _req("bitwise_and")

    def bitwise_or(self, a: Any, b: Any) -> Any:
        return _req("bitwise_or")

    def bitwise_xor(self, a: Any, b: Any) -> Any:
        return _req("bitwise_xor")

    def bitwise_not(self, a: Any) -> Any:
        """``~a = -a - 1`` (two's complement)."""
        return _req("bitwise_not")

    def bitwise_left_shift(self, a: Any, b: Any) -> Any:
        """``a << b``; bits shifted out are lost (wraps like C on the element type)."""
        return _req("bitwise_left_shift")

    def bitwise_right_shift(self, a: Any, b: Any) -> Any:
        """Arithmetic right shift (sign-extending): ``-8 >> 1 = -4``."""
        return _req("bitwise_right_shift")

    def logical_and(self, a: Any, b: Any) -> Any:
        return _req("logical_and")

    def logical_or(self, a: Any, b: Any) -> Any:
        return _req("logical_or")

    def logical_xor(self, a: Any, b: Any) -> Any:
        return self.not_equal(a, b)  # type: ignore[attr-defined]

    def logical_not(self, a: Any) -> Any:
        return _req("logical_not")
