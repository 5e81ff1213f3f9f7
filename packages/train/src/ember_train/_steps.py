"""Step protocols (Burn's ``TrainStep`` and ``ValidStep`` traits), for type checkers and documentation.

The Learner compiles the steps with the training backend (``Backend.compile``; jax: ``ember_jax.jit``), so a step
should be a function of its tensors: no host reads (``into_scalar``, ``to_data``, a Python ``if`` on a tensor)
inside it. Return such values in the item; ``LearnerBuilder.compile(False)`` runs the steps eagerly.
"""

from __future__ import annotations

from typing import Any, Protocol, TypeVar, runtime_checkable

from ._outputs import TrainOutput

__all__ = ["TrainStep", "ValidStep"]

B_contra = TypeVar("B_contra", contravariant=True)
O_co = TypeVar("O_co", covariant=True)


@runtime_checkable
class TrainStep(Protocol[B_contra]):
    """A model the Learner can train: ``train_step(batch) -> TrainOutput(model, grads, item)``."""

    def train_step(self, batch: B_contra) -> TrainOutput[Any]: ...


@runtime_checkable
class ValidStep(Protocol[B_contra, O_co]):
    """A model the Learner can validate: ``valid_step(batch) -> item`` (called on ``model.valid()``)."""

    def valid_step(self, batch: B_contra) -> O_co: ...
