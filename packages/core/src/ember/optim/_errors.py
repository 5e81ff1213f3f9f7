"""``OptimizerError``: what the optimizers and gradient helpers raise on misuse."""

from __future__ import annotations

from .._errors import EmberError

__all__ = ["OptimizerError"]


class OptimizerError(EmberError, ValueError):
    """An optimizer step cannot run: gradients of another model, a negative or NaN learning rate, NaN
    gradients under ``nan_check``, an optimizer record of another optimizer. The message says what was
    expected, what was found and what to do."""
