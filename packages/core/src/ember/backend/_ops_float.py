"""Float-only primitives: transcendental functions, rounding, NaN/Inf tests."""

from __future__ import annotations

import math
from typing import Any


def _req(name: str) -> Any:
    raise NotImplementedError(
        f"this backend does not implement the required primitive {name!r}; see ember.backend.Backend"
    )


class FloatOps:
    """Unary float primitives. Rounding ops keep the float dtype."""

    def exp(self, a: Any) -> Any:
        return _req("exp")

    def log(self, a: Any) -> Any:
        return _req("log")

    def log1p(self, a: Any) -> Any:
        return _req("log1p")

    def sqrt(self, a: Any) -> Any:
        return _req("sqrt")

    def square(self, a: Any) -> Any:
        return self.mul(a, a)  # type: ignore[attr-defined]

    def recip(self, a: Any) -> Any:
        return self.powf(a, -1.0)  # type: ignore[attr-defined]

    def sin(self, a: Any) -> Any:
        return _req("sin")

    def cos(self, a: Any) -> Any:
        return _req("cos")

    def tan(self, a: Any) -> Any:
        return _req("tan")

    def sinh(self, a: Any) -> Any:
        return _req("sinh")

    def cosh(self, a: Any) -> Any:
        return _req("cosh")

    def tanh(self, a: Any) -> Any:
        return _req("tanh")

    def asin(self, a: Any) -> Any:
        return _req("asin")

    def acos(self, a: Any) -> Any:
        return _req("acos")

    def atan(self, a: Any) -> Any:
        return _req("atan")

    def asinh(self, a: Any) -> Any:
        return _req("asinh")

    def acosh(self, a: Any) -> Any:
        return _req("acosh")

    def atanh(self, a: Any) -> Any:
        return _req("atanh")

    def atan2(self, a: Any, b: Any) -> Any:
        return _req("atan2")

    def erf(self, a: Any) -> Any:
        return _req("erf")

    def floor(self, a: Any) -> Any:
        return _req("floor")

    def ceil(self, a: Any) -> Any:
        return _req("ceil")

    def round(self, a: Any) -> Any:
        """Round half to even (Burn, numpy, torch)."""
        return _req("round")

    def trunc(self, a: Any) -> Any:
        return _req("trunc")

    def is_nan(self, a: Any) -> Any:
        return self.not_equal(a, a)  # type: ignore[attr-defined]

    def is_inf(self, a: Any) -> Any:
        return self.equal(self.abs(a), math.inf)  # type: ignore[attr-defined]
