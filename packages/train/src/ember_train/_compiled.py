"""The Learner's whole-step functions, compiled by the training backend (``Backend.compile``).

Each step is one function of its inputs, so a backend that compiles (jax: ``ember_jax.jit``) traces the forward
pass, Ember's backward pass and the optimizer update as one program:

- ``train(model, optim, batch, lr) -> (model, item)``: ``model.train_step(batch)`` then ``optim.step``;
  ``train(model, optim, batch, lr, stops) -> (model, item, stops.sum())`` under ``DistributedDataParallel`` on jax,
  where the step is one program over the ranks (the ranks' stop flags ride in it);
- ``grad(model, batch) -> (grads, item)`` and ``update(model, optim, grads, lr) -> model``: the same step split in
  two for gradient accumulation (the accumulator sums the gradients eagerly between them);
- ``valid(model, batch) -> item``: ``model.valid_step(batch)``, called on ``model.valid()``.

torch captures them with ``ember_torch.compile`` (one aten graph per argument structure); numpy returns the
functions unchanged (``Backend.compile``'s default), so its steps run eagerly exactly as written.

On a backend that donates arguments (``capabilities.donates_args``; jax) and a device that is not the CPU
(:func:`donates_on`), ``train`` and ``update`` donate the model with ``copy_donated``: the first call copies the
model it is given (the caller's, a restored one) and trains the copy, whose buffers the program then updates in
place at every call (no new model per step); the caller's model is never changed. ``grad`` and ``valid`` donate
nothing (the model is used again after them). Whatever else holds the model between steps (the validation model
``model.valid()``, a checkpoint's record) is used before the next training step and dropped: checkpoints are written
synchronously.

A compiled step is watched (:class:`_Watched`): its first call, which traces and compiles (tens of seconds
for a large network on jax), is announced to the renderer (``MetricsRenderer.compiling``) before it starts and
when it ends, and the time of every call that compiled (the first of each new argument structure, seen in the
compiled function's ``trace_count``) is kept per split (:meth:`CompiledSteps.compile_stats`), so that the ETA's
rate leaves it out. Under a compiling backend the learning rate goes in as a Float tensor of shape ``[1]`` (a
Python float would be a static value: every new rate from the scheduler would recompile the step).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from ember import Float, Tensor

from ._app_logger import LOGGER
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
        options: the backend's compile options for every step (``LearnerBuilder.compile(**options)``); the
            model's donation, where the Learner asks for it, goes over them.
        accumulation: gradient accumulation is on: ``grad`` and ``update`` are made instead of ``train``.

    Attributes:
        compiled: the backend really compiles (``compile(fn)`` is not ``fn``): the steps are traced, and
            :meth:`lr` gives a tensor.
        phase: the part of the step that ran last (``"train_step"``, ``"valid_step"`` or ``"other"``).
        on_compile: called with ``(step, None)`` before the first call of a compiled step (``step``:
            ``"training step"``, ``"validation step"``...), and with ``(step, seconds)`` after each call that
            compiled (the Learner passes ``MetricsRenderer.compiling``).
    """

    def __init__(self, device: Any, enabled: bool = True, accumulation: bool = False,
                 options: dict[str, Any] | None = None) -> None:
        self.device = device
        self.phase = OTHER
        self.on_compile: Callable[[str, float | None], None] | None = None
        self._compile_time: dict[str, list[float]] = {"train": [0.0, 0], "valid": [0.0, 0]}
        compile_fn: Callable[..., Any] = device.backend.compile if enabled else _identity
        if enabled and options:
            compile_fn = _with_options(device, options)
        valid = self._valid  # one bound method, so that "compile returned it unchanged" can be seen
        self.valid = compile_fn(valid)
        self.compiled = self.valid is not valid
        if self.compiled:
            self.valid = _Watched(self, "valid", "validation step", self.valid)
        watched = _watching(self, compile_fn)
        # the model (argument 0) of the steps that return the updated model: donated, a private copy at first
        donate: dict[str, Any] = {}
        if enabled and device.backend.capabilities.donates_args and donates_on(device):
            donate = {"donate_argnums": (0,), "copy_donated": True}
        if accumulation:
            self.grad = watched(self._grad, "training step")
            self.update = watched(self._update, "optimizer update", **donate)
        else:
            self.train = watched(self._train, "training step", **donate)
        self._lr: tuple[float, Tensor] | None = None
        #: puts the learning-rate tensor where the step's other inputs are (``MultiDevice``: on every device)
        self.place: Callable[[Any], Any] = _identity

    def reset_compile_time(self, split: str) -> None:
        """Start counting the compile time of ``split`` (``"train"``, ``"valid"``) afresh (at each epoch start)."""
        self._compile_time[split] = [0.0, 0]

    def compile_stats(self, split: str) -> dict[str, Any]:
        """``{"compile_seconds": s, "compile_iterations": n}``: the time and number of the calls of ``split``'s
        steps that compiled since :meth:`reset_compile_time` (the keyword arguments of ``TrainingProgress``)."""
        seconds, calls = self._compile_time[split]
        return {"compile_seconds": seconds, "compile_iterations": int(calls)}

    def _compiled_call(self, split: str, label: str, seconds: float, first: bool) -> None:
        acc = self._compile_time[split]
        acc[0] += seconds
        acc[1] += 1
        LOGGER.info("Compiled the %s%s in %.1f s (%s).", label, "" if first else " again for new argument shapes",
                    seconds, self.device.inner.backend.name)
        if self.on_compile is not None:
            self.on_compile(label, seconds)

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


def donates_on(device: Any) -> bool:
    """Whether the training step donates the model on ``device`` (a backend with ``capabilities.donates_args``):
    on an accelerator (``cuda:0`` ...), where the program updates the model's buffers in place and Ember's host
    time per call falls (ResNet-18: about 640 -> 380 µs); not on the CPU (``cpu:0``), where XLA's CPU programs
    with the model donated ran about 15% slower per step on a 2-core machine (ResNet-18 batch 2: 115 -> 133 ms,
    the MNIST guide's CNN batch 4: 1.9 -> 2.2 ms), more than the host time saved. Measured again once each donated
    buffer went to its own new value (``ember_jax/_donation_order.py``): ResNet-18 at batch 1, 32x32, 85 ms a step
    with the optimizer state donated, 110 ms with the model too; XLA still copies each donated parameter that is
    read before its update (raw ``jax.jit``'s program does the same)."""
    return not str(getattr(device.inner, "name", "")).startswith("cpu")


def _identity(fn: Callable[..., Any], **_options: Any) -> Callable[..., Any]:
    return fn


def _with_options(device: Any, options: dict[str, Any]) -> Callable[..., Any]:
    """``device.backend.compile`` with the user's ``options`` (the call's own keywords over them); an option the
    backend refuses (``TypeError``, ``ValueError``) becomes a ``LearnerError`` naming the backend and the options."""
    def compile_with(fn: Callable[..., Any], **own: Any) -> Any:
        try:
            return device.backend.compile(fn, **{**options, **own})
        except (TypeError, ValueError) as exc:
            raise LearnerError(
                f"LearnerBuilder.compile: the {device.inner.backend.name} backend's compile refused the options "
                f"{options!r}: {exc} See its compile function (ember_torch.compile, ember_jax.jit) for what it takes."
            ) from exc

    return compile_with


def _watching(steps: CompiledSteps, compile_fn: Callable[..., Any]) -> Callable[..., Any]:
    """``compile_fn`` whose compiled training steps are watched (:class:`_Watched`); eager steps stay as they are."""
    def compile_and_watch(fn: Callable[..., Any], label: str, **options: Any) -> Any:
        out = compile_fn(fn, **options)
        return out if not steps.compiled else _Watched(steps, "train", label, out)

    return compile_and_watch


class _Watched:
    """A compiled step that reports its compiling calls: the first call is announced before it runs (it traces and
    compiles); a call that compiled (``trace_count`` grew, or the first call when the function has no count) is
    timed and reported after. Other attributes (``trace_count``, ``cache_size``) are the compiled function's."""

    def __init__(self, steps: CompiledSteps, split: str, label: str, fn: Callable[..., Any]) -> None:
        self.steps = steps
        self.split = split
        self.label = label
        self.fn = fn
        self.calls = 0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        fn = self.fn
        first = self.calls == 0
        self.calls += 1
        before = getattr(fn, "trace_count", None)
        if first and self.steps.on_compile is not None:
            self.steps.on_compile(self.label, None)
        t0 = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            seconds = time.perf_counter() - t0
            after = getattr(fn, "trace_count", None)
            compiled = first if before is None or after is None else after > before
            if compiled:
                self.steps._compiled_call(self.split, self.label, seconds, first)
            elif first and self.steps.on_compile is not None:
                self.steps.on_compile(self.label, seconds)   # ends the announcement

    def __getattr__(self, name: str) -> Any:
        if name == "fn":
            raise AttributeError(name)
        return getattr(self.fn, name)

    def __repr__(self) -> str:
        return repr(self.fn)
