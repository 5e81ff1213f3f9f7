"""The Learner's whole-step functions, compiled by the training backend (``Backend.compile``).

Each step is one function of its inputs, so a backend that compiles (jax: ``ember_jax.jit``) traces the forward
pass, Ember's backward pass and the optimizer update as one program:

- ``train(model, optim, batch, lr) -> (model, item)``: ``model.train_step(batch)`` then ``optim.step``;
  ``train(model, optim, batch, lr, stops) -> (model, item, stops.sum())`` under ``DistributedDataParallel`` on jax,
  where the step is one program over the ranks (the ranks' stop flags ride in it);
- ``grad(model, batch) -> (grads, item)`` and ``update(model, optim, grads, lr) -> model``: the same step split in
  two for gradient accumulation (the accumulator sums the gradients eagerly between them);
- ``valid(model, batch) -> item``: ``model.valid_step(batch)``, called on ``model.valid()``.

numpy and torch return the functions unchanged (``Backend.compile``'s default), so their steps run eagerly
exactly as written. Under a compiling backend the learning rate goes in as a Float tensor of shape ``[1]`` (a
Python float would be a static value: every new rate from the scheduler would recompile the step).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ember import Float, Tensor

from ._checks import describe
from ._errors import LearnerError
from ._outputs import TrainOutput

__all__ = ["CompiledSteps"]

#: phases of a step, recorded while it runs (or is traced) so that a failure is attributed to the user's
#: ``train_step`` / ``valid_step`` (reported as such) or to the rest of the step (re-raised as it is)
TRAIN_STEP, VALID_STEP, OTHER = "train_step", "valid_step", "other"


class CompiledSteps:
    """The step functions of one ``Learner.fit``, compiled with ``device.backend.compile`` when ``enabled``.

    Args:
        device: the training device (an autodiff device); its backend compiles (``Autodiff`` delegates to the
            inner backend) and the learning-rate tensor is made on its inner device.
        enabled: ``False`` runs the steps eagerly on every backend (``LearnerBuilder.compile(False)``).
        accumulation: gradient accumulation is on: ``grad`` and ``update`` are made instead of ``train``.

    Attributes:
        compiled: the backend really compiles (``compile(fn)`` is not ``fn``): the steps are traced, and
            :meth:`lr` gives a tensor.
        phase: the part of the step that ran last (``"train_step"``, ``"valid_step"`` or ``"other"``).
    """

    def __init__(self, device: Any, enabled: bool = True, accumulation: bool = False) -> None:
        self.device = device
        self.phase = OTHER
        compile_fn: Callable[..., Any] = device.backend.compile if enabled else _identity
        valid = self._valid  # one bound method, so that "compile returned it unchanged" can be seen
        self.valid = compile_fn(valid)
        self.compiled = self.valid is not valid
        if accumulation:
            self.grad = compile_fn(self._grad)
            self.update = compile_fn(self._update)
        else:
            self.train = compile_fn(self._train)
        self._lr: tuple[float, Tensor] | None = None
        #: puts the learning-rate tensor where the step's other inputs are (``MultiDevice``: on every device)
        self.place: Callable[[Any], Any] = _identity

    def lr(self, lr: float) -> float | Tensor:
        """The learning rate to pass to the steps: ``lr`` itself when eager, else a Float ``[1]`` tensor on the
        inner device (made again only when the scheduler's value changes)."""
        if not self.compiled:
            return lr
        if self._lr is None or self._lr[0] != lr:
            self._lr = (lr, self.place(Tensor.from_data(np.asarray([lr], np.float64), self.device.inner, Float)))
        return self._lr[1]

    # -- the step functions (traced by a compiling backend: no host reads here) -------------------------
    def _train_output(self, model: Any, batch: Any) -> TrainOutput[Any]:
        self.phase = TRAIN_STEP
        out = model.train_step(batch)
        self.phase = OTHER
        if not isinstance(out, TrainOutput):
            raise LearnerError(
                f"model.train_step must return TrainOutput(model, grads, item), got {describe(out)}. "
                "Build it as TrainOutput(self, loss.backward(), ClassificationOutput(loss, output, targets))."
            )
        return out

    def _train(self, model: Any, optim: Any, batch: Any, lr: Any, stops: Any = None) -> tuple[Any, ...]:
        out = self._train_output(model, batch)
        new = optim.step(lr, model, out.grads)
        if stops is None:
            return new, out.item
        # a DistributedDataParallel step compiled as one program over the ranks: ``stops`` holds each rank's stop
        # flag (split over the ranks like a batch); their sum rides in the program's all-reduce
        return new, out.item, stops.sum()

    def _grad(self, model: Any, batch: Any) -> tuple[Any, Any]:
        out = self._train_output(model, batch)
        return out.grads, out.item

    def _update(self, model: Any, optim: Any, grads: Any, lr: Any) -> Any:
        self.phase = OTHER
        return optim.step(lr, model, grads)

    def _valid(self, model: Any, batch: Any) -> Any:
        self.phase = VALID_STEP
        item = model.valid_step(batch)
        self.phase = OTHER
        return item


def _identity(fn: Callable[..., Any]) -> Callable[..., Any]:
    return fn
