"""Random distributions for ``Tensor.random`` (Burn's ``Distribution``)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Distribution"]


@dataclass(frozen=True)
class Distribution:
    """A distribution to sample tensors from.

    Build with the constructors: ``Distribution.default()`` (uniform on [0, 1), Burn's
    ``Default``), ``Distribution.uniform(low, high)`` (on [low, high)),
    ``Distribution.normal(mean, std)``, ``Distribution.bernoulli(prob)`` (1 with probability
    ``prob``, else 0).
    """

    kind: str
    a: float = 0.0
    b: float = 1.0

    @staticmethod
    def default() -> Distribution:
        return Distribution("default", 0.0, 1.0)

    @staticmethod
    def uniform(low: float, high: float) -> Distribution:
        """Uniform on ``[low, high)``.

        Raises:
            ValueError: ``high < low``.
        """
        if high < low:
            from ._errors import EmberError

            raise EmberError(f"Distribution.uniform: high ({high}) < low ({low}); swap them.")
        return Distribution("uniform", float(low), float(high))

    @staticmethod
    def normal(mean: float, std: float) -> Distribution:
        """Normal with ``mean`` and standard deviation ``std`` (>= 0)."""
        if std < 0:
            from ._errors import EmberError

            raise EmberError(f"Distribution.normal: std must be >= 0, got {std}.")
        return Distribution("normal", float(mean), float(std))

    @staticmethod
    def bernoulli(prob: float) -> Distribution:
        """1 with probability ``prob`` (in [0, 1]), else 0."""
        if not 0.0 <= prob <= 1.0:
            from ._errors import EmberError

            raise EmberError(f"Distribution.bernoulli: prob must be in [0, 1], got {prob}.")
        return Distribution("bernoulli", float(prob), 0.0)
