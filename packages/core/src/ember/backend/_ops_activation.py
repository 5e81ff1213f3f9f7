"""Activation primitives with composite defaults (a backend overrides the ones it has fused).

Formulas: PyTorch's documentation of the functions of the same name.
"""

from __future__ import annotations

import math
from typing import Any


class ActivationOps:
    """Activations a backend may fuse. Defaults compose other primitives, so they are
    differentiable under ``Autodiff`` without a rule of their own."""

    def relu(self, a: Any) -> Any:
        return self.mask_fill(a, self.lower_equal(a, 0), 0)  # type: ignore[attr-defined]

    def sigmoid(self, a: Any) -> Any:
        """``1 / (1 + exp(-a))``, computed without overflow for large |a|."""
        # exp of a non-positive number never overflows: sigmoid(a) = exp(min(a,0)) / (1 + exp(-|a|))
        e = self.exp(self.neg(self.abs(a)))  # type: ignore[attr-defined]
        num = self.mask_fill(e, self.greater_equal(a, 0), 1.0)  # type: ignore[attr-defined]
        return self.div(num, self.add(e, 1.0))  # type: ignore[attr-defined]

    def log_sigmoid(self, a: Any) -> Any:
        """``-softplus(-a) = min(a, 0) - log1p(exp(-|a|))``."""
        return self.sub(self.minimum(a, 0.0), self.log1p(self.exp(self.neg(self.abs(a)))))  # type: ignore[attr-defined]

    def gelu(self, a: Any, approximate: bool = False) -> Any:
        """Exact: ``a * 0.5 * (1 + erf(a / sqrt(2)))``; tanh approximation:
        ``0.5 a (1 + tanh(sqrt(2/pi) (a + 0.044715 a^3)))`` (Hendrycks & Gimpel 2016)."""
        if approximate:
            inner = self.mul(self.add(a, self.mul(self.mul(self.mul(a, a), a), 0.044715)), math.sqrt(2.0 / math.pi))  # type: ignore[attr-defined]
            return self.mul(self.mul(a, 0.5), self.add(self.tanh(inner), 1.0))  # type: ignore[attr-defined]
        return self.mul(self.mul(a, 0.5), self.add(self.erf(self.mul(a, 1.0 / math.sqrt(2.0))), 1.0))  # type: ignore[attr-defined]

    def softmax(self, a: Any, dim: int) -> Any:
        """``exp(a - max) / sum(exp(a - max))`` along ``dim``."""
        e = self.exp(self.sub(a, self.detach(self.max_dim(a, dim))))  # type: ignore[attr-defined]
        return self.div(e, self.sum_dim(e, dim))  # type: ignore[attr-defined]

    def log_softmax(self, a: Any, dim: int) -> Any:
        """``a - max - log(sum(exp(a - max)))`` along ``dim``."""
        s = self.sub(a, self.detach(self.max_dim(a, dim)))  # type: ignore[attr-defined]
        return self.sub(s, self.log(self.sum_dim(self.exp(s), dim)))  # type: ignore[attr-defined]
