"""The checks of a fit's first steps: the first training step and the first validation batch, run before training
goes on, with a failure of the user's ``train_step`` / ``valid_step`` named as such and the step's item checked
against the metrics."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ember import BackendError

from ._checks import check_batch_type, describe
from ._compiled import OTHER, TRAIN_STEP, VALID_STEP, CompiledSteps
from ._errors import LearnerError, MetricAdaptError
from ._iteration import close_iterator
from ._metrics_set import MetricsSet

__all__ = ["first_train_step", "probe_valid", "advice"]


def first_train_step(steps: CompiledSteps, model: Any, batch: Any, metrics: MetricsSet,
                     step: Callable[[], tuple[Any, Any]]) -> tuple[Any, Any]:
    """``step()`` (the first training batch's step, ``batch``: the strategy's ``train_step``, or the accumulated
    gradients' ``steps.grad``), with the first step's checks: the batch type, a failure of ``train_step`` named as
    such, the item against the metrics."""
    check_batch_type(model, "train_step", batch, "training")
    steps.phase = OTHER
    try:
        result, item = step()
    except LearnerError:
        raise
    except Exception as exc:
        if steps.phase != TRAIN_STEP:
            raise
        raise LearnerError(
            f"model.train_step raised {type(exc).__name__} on the first training batch ({describe(batch)}): "
            f"{advice(steps, exc, 'training', 'train_step')}"
        ) from exc
    try:
        metrics.check(item)
    except MetricAdaptError:
        raise
    return result, item


def probe_valid(steps: CompiledSteps, method: Any, model: Any, loader: Any, metrics: MetricsSet) -> None:
    """Run ``valid_step`` on the first validation batch and check the metrics can take its output (the
    compiled step: a step that cannot be compiled fails here, before training)."""
    it = iter(loader)
    try:
        batch = next(it, None)
    finally:
        close_iterator(it)
    if batch is None:
        return
    vm = model.valid()
    check_batch_type(vm, "valid_step", batch, "validation")
    steps.phase = OTHER
    try:
        item = method.local_item(steps.valid(vm, method.place(batch)))
    except LearnerError:
        raise
    except Exception as exc:
        if steps.phase != VALID_STEP:
            raise
        raise LearnerError(
            f"model.valid_step raised {type(exc).__name__} on the first validation batch ({describe(batch)}), "
            f"before training started: {advice(steps, exc, 'validation', 'valid_step')}"
        ) from exc
    metrics.check(item)


def advice(steps: CompiledSteps, exc: Exception, split: str, step: str) -> str:
    """The end of a first-step failure message: the error, then what to check. A BackendError raised while a
    compiling backend traced the step (e.g. ``into_scalar`` on a traced tensor) already says what to do instead;
    the advice is then how to run the step eagerly."""
    text = str(exc).rstrip()
    text = text if text.endswith(".") else text + "."
    if steps.compiled and isinstance(exc, BackendError):
        return (f"{text} The steps are compiled by the {steps.device.inner.backend.name} backend; "
                "LearnerBuilder.compile(False) runs them eagerly (e.g. to debug a step with prints or breakpoints).")
    return f"{text} Check that the {split} loader's batcher produces the batch {step} expects."
