"""Activation primitives with composite defaults (a backend overrides the ones it has fused).

Only the activations worth a fused kernel are primitives: ``relu``, ``sigmoid``, ``log_sigmoid``,
``gelu``, ``softmax`` and ``log_softmax``. The others (:mod:`ember.tensor.activation`) are
compositions in the core. Formulas: PyTorch's documentation of the functions of the same name.

The defaults only ever call ``exp`` on non-positive arguments (so sigmoid, log_sigmoid and the
softmaxes cannot overflow and are exact to rounding for any finite input), and being
compositions of primitives they are differentiable under ``Autodiff`` without rules of their own.
"""

from __future__ import annotations

import math
from typing import Any

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_INV_SQRT_2 = 1.0 / math.sqrt(2.0)


def quiet_softmax_composite(B: Any, p: Any, dim: int) -> Any:
    """``quiet_softmax`` of primitive ``p`` along ``dim`` written with backend ``B``'s primitives (Evan Miller's
    "softmax1", 2023: ``exp(x_i) / (1 + sum_j exp(x_j))``), as ``exp(x_i - m) / (exp(-m) + sum_j exp(x_j - m))``
    with ``m = max(0, max_j x_j)`` so neither term overflows. Shared by :func:`ember.tensor.activation.quiet_softmax`
    and the attention primitive's default; not a primitive itself (no backend fuses it)."""
    m = B.maximum(B.detach(B.max_dim(p, dim)), 0.0)
    e = B.exp(B.sub(p, m))
    return B.div(e, B.add(B.sum_dim(e, dim), B.exp(B.neg(m))))


class ActivationOps:
    """Activations a backend may fuse; ``dim`` is normalized and ``a.shape[dim] > 0``."""

    def relu(self, a: Any) -> Any:
        """``max(a, 0)``; NaN stays NaN (PyTorch)."""
        return self.mask_fill(a, self.lower_equal(a, 0.0), 0.0)  # type: ignore[attr-defined]

    def sigmoid(self, a: Any) -> Any:
        """``1 / (1 + exp(-a))``, computed without overflow for large ``|a|``."""
        # sigmoid(a) = exp(min(a, 0)) / (1 + exp(-|a|)): exp only sees non-positive numbers
        e = self.exp(self.neg(self.abs(a)))  # type: ignore[attr-defined]
        num = self.mask_fill(e, self.greater_equal(a, 0.0), 1.0)  # type: ignore[attr-defined]
        return self.div(num, self.add(e, 1.0))  # type: ignore[attr-defined]

    def log_sigmoid(self, a: Any) -> Any:
        """``log(sigmoid(a)) = min(a, 0) - log1p(exp(-|a|))`` (exact for very negative ``a``)."""
        t = self.log1p(self.exp(self.neg(self.abs(a))))  # type: ignore[attr-defined]
        return self.sub(self.minimum(a, 0.0), t)  # type: ignore[attr-defined]

    def gelu(self, a: Any, approximate: bool = False) -> Any:
        """Exact: ``a/2 * (1 + erf(a / sqrt(2)))``; ``approximate``: the tanh form
        ``a/2 * (1 + tanh(sqrt(2/pi) * (a + 0.044715 a^3)))`` (Hendrycks & Gimpel 2016, PyTorch)."""
        if approximate:
            cube = self.mul(self.mul(a, a), a)  # type: ignore[attr-defined]
            inner = self.mul(self.add(a, self.mul(cube, 0.044715)), _SQRT_2_OVER_PI)  # type: ignore[attr-defined]
            return self.mul(self.mul(a, 0.5), self.add(self.tanh(inner), 1.0))  # type: ignore[attr-defined]
        return self.mul(self.mul(a, 0.5), self.add(self.erf(self.mul(a, _INV_SQRT_2)), 1.0))  # type: ignore[attr-defined]

    def softmax(self, a: Any, dim: int) -> Any:
        """``exp(a - max) / sum(exp(a - max))`` along ``dim``.

        ``-inf`` entries give 0; a slice whose entries are all ``-inf`` (or that holds ``+inf``
        or NaN) gives NaN, as in PyTorch."""
        e = self.exp(self.sub(a, self.detach(self.max_dim(a, dim))))  # type: ignore[attr-defined]
        return self.div(e, self.sum_dim(e, dim))  # type: ignore[attr-defined]

    def log_softmax(self, a: Any, dim: int) -> Any:
        """``a - max - log(sum(exp(a - max)))`` along ``dim`` (same edge cases as :meth:`softmax`,
        ``-inf`` entries give ``-inf``)."""
        s = self.sub(a, self.detach(self.max_dim(a, dim)))  # type: ignore[attr-defined]
        return self.sub(s, self.log(self.sum_dim(self.exp(s), dim)))  # type: ignore[attr-defined]
