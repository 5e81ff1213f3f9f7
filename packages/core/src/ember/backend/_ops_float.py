"""Float-only primitives: transcendental functions, rounding, NaN/Inf tests, statistics.

Results follow IEEE 754 as torch does (``log(0) = -inf``, ``sqrt(-1) = NaN``, ``exp(1000) = inf``)
and a backend never lets a library warning escape for such values. Every op keeps the float
dtype of its input; the NaN/Inf tests return bool primitives.

Required: the element-wise functions the array libraries all have. Defaults are written with
other primitives (so they are differentiable under ``Autodiff`` without a rule of their own) and
a backend overrides them where it has a faster or more accurate kernel.
"""

from __future__ import annotations

import math
from typing import Any


def _req(name: str) -> Any:
    raise NotImplementedError(
        f"this backend does not implement the required primitive {name!r}; see ember.backend.Backend"
    )


class FloatOps:
    """Float primitives. ``b`` operands are primitives or Python floats; dims are normalized."""

    # ---- exponentials and logarithms (required) -------------------------------
    def exp(self, a: Any) -> Any:
        return _req("exp")

    def log(self, a: Any) -> Any:
        """Natural log: ``-inf`` at 0, NaN below 0."""
        return _req("log")

    def log1p(self, a: Any) -> Any:
        """``log(1 + a)``, accurate for small ``|a|``."""
        return _req("log1p")

    def sqrt(self, a: Any) -> Any:
        """Square root: NaN below 0."""
        return _req("sqrt")

    def square(self, a: Any) -> Any:
        return self.mul(a, a)  # type: ignore[attr-defined]

    def recip(self, a: Any) -> Any:
        """``1 / a`` (``inf`` at 0)."""
        return self.powf(a, -1.0)  # type: ignore[attr-defined]

    # ---- trigonometry (required) ----------------------------------------------
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
        """Inverse sine on ``[-1, 1]`` (NaN outside)."""
        return _req("asin")

    def acos(self, a: Any) -> Any:
        """Inverse cosine on ``[-1, 1]`` (NaN outside)."""
        return _req("acos")

    def atan(self, a: Any) -> Any:
        return _req("atan")

    def asinh(self, a: Any) -> Any:
        return _req("asinh")

    def acosh(self, a: Any) -> Any:
        """Inverse hyperbolic cosine on ``[1, inf)`` (NaN below 1)."""
        return _req("acosh")

    def atanh(self, a: Any) -> Any:
        """Inverse hyperbolic tangent on ``(-1, 1)`` (``±inf`` at ``±1``, NaN outside)."""
        return _req("atanh")

    def atan2(self, a: Any, b: Any) -> Any:
        """Angle of the point ``(x=b, y=a)`` in ``[-pi, pi]`` (C's ``atan2(a, b)``); ``b`` may be a float."""
        return _req("atan2")

    def erf(self, a: Any) -> Any:
        """Gauss error function ``2/sqrt(pi) * integral_0^a exp(-t^2) dt``."""
        return _req("erf")

    # ---- rounding (required) ----------------------------------------------------
    def floor(self, a: Any) -> Any:
        return _req("floor")

    def ceil(self, a: Any) -> Any:
        return _req("ceil")

    def round(self, a: Any) -> Any:
        """Round half to even (Burn, numpy, torch): ``round(2.5) = 2``, ``round(-0.5) = -0``."""
        return _req("round")

    def trunc(self, a: Any) -> Any:
        """Round toward zero."""
        return _req("trunc")

    # ---- NaN / Inf tests (bool results) ----------------------------------------
    def is_nan(self, a: Any) -> Any:
        return self.not_equal(a, a)  # type: ignore[attr-defined]

    def is_inf(self, a: Any) -> Any:
        return self.equal(self.abs(a), math.inf)  # type: ignore[attr-defined]

    def is_finite(self, a: Any) -> Any:
        """Neither NaN nor ``±inf`` (a comparison with NaN is false)."""
        return self.lower(self.abs(a), math.inf)  # type: ignore[attr-defined]

    def contains_nan(self, a: Any) -> Any:
        """Bool shape ``(1,)``: whether any element is NaN (``inf + -inf`` alone is not NaN here,
        unlike Burn's ``sum().is_nan()``)."""
        return self.any(self.is_nan(a))  # type: ignore[attr-defined]

    def is_close(self, a: Any, b: Any, rtol: float, atol: float) -> Any:
        """``|a - b| <= atol + rtol * |b|`` where both are finite, or equal infinities (Burn's
        ``is_close``; numpy.isclose with ``equal_nan=False``). ``b`` is a primitive broadcasting with ``a``."""
        bound = self.add(self.mul(self.abs(b), rtol), atol)  # type: ignore[attr-defined]
        close = self.lower_equal(self.abs(self.sub(a, b)), bound)  # type: ignore[attr-defined]
        finite = self.logical_and(self.is_finite(a), self.is_finite(b))  # type: ignore[attr-defined]
        same_inf = self.logical_and(self.is_inf(a), self.equal(a, b))  # type: ignore[attr-defined]
        return self.logical_or(self.logical_and(close, finite), same_inf)  # type: ignore[attr-defined]

    # ---- statistics ---------------------------------------------------------------
    def var(self, a: Any, dim: int, correction: int) -> Any:
        """Variance along ``dim`` (kept with size 1): ``sum((a - mean)^2) / (n - correction)``.

        ``correction`` 1 is Bessel's (unbiased) estimate, 0 the biased one. ``n <= correction``
        gives NaN (PyTorch's result)."""
        return self.var_mean(a, dim, correction)[0]

    def var_mean(self, a: Any, dim: int, correction: int) -> tuple[Any, Any]:
        """``(var(a, dim, correction), mean_dim(a, dim))``, both keeping ``dim``."""
        n = self.shape(a)[dim]  # type: ignore[attr-defined]
        mean = self.mean_dim(a, dim)  # type: ignore[attr-defined]
        d = self.sub(a, mean)  # type: ignore[attr-defined]
        s = self.sum_dim(self.mul(d, d), dim)  # type: ignore[attr-defined]
        # multiplying by NaN (rather than dividing by 0) gives NaN without an IEEE exception
        return self.mul(s, 1.0 / (n - correction) if n > correction else math.nan), mean  # type: ignore[attr-defined]

    def cov(self, a: Any, dim: int, correction: int) -> Any:
        """Covariance matrix of a rank-2 ``a`` whose observations lie along ``dim``: the result is
        ``[v, v]`` with ``v`` the size of the other dim (Burn's ``cov``; ``numpy.cov(a, ddof=...)`` for
        ``dim = 1``). ``n <= correction`` gives NaN."""
        n = self.shape(a)[dim]  # type: ignore[attr-defined]
        c = self.sub(a, self.mean_dim(a, dim))  # type: ignore[attr-defined]
        if dim == 0:
            c = self.permute(c, (1, 0))  # type: ignore[attr-defined]
        m = self.matmul(c, self.permute(c, (1, 0)))  # type: ignore[attr-defined]
        return self.mul(m, 1.0 / (n - correction) if n > correction else math.nan)  # type: ignore[attr-defined]

    def cross(self, a: Any, b: Any, dim: int) -> Any:
        """Cross product of 3-vectors along ``dim`` (size 3 in both; other dims broadcast)."""

        def comp(p: Any, i: int) -> Any:
            shape = self.shape(p)  # type: ignore[attr-defined]
            sl = tuple(slice(i, i + 1, 1) if d == dim else slice(0, s, 1) for d, s in enumerate(shape))
            return self.slice(p, sl)  # type: ignore[attr-defined]

        a0, a1, a2 = comp(a, 0), comp(a, 1), comp(a, 2)
        b0, b1, b2 = comp(b, 0), comp(b, 1), comp(b, 2)
        c0 = self.sub(self.mul(a1, b2), self.mul(a2, b1))  # type: ignore[attr-defined]
        c1 = self.sub(self.mul(a2, b0), self.mul(a0, b2))  # type: ignore[attr-defined]
        c2 = self.sub(self.mul(a0, b1), self.mul(a1, b0))  # type: ignore[attr-defined]
        return self.cat([c0, c1, c2], dim)  # type: ignore[attr-defined]
