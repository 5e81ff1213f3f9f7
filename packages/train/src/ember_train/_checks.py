"""Checks run before the first epoch, so bad input fails with a clear message and not deep in the loop."""

from __future__ import annotations

import inspect
import typing
from typing import Any

from ._errors import LearnerError

__all__ = ["require_method", "check_batch_type", "describe"]


def describe(x: Any) -> str:
    """A short description of a value for error messages (type and, for tensors, shape)."""
    shape = getattr(x, "shape", None)
    if shape is not None and not isinstance(x, type):
        return f"{type(x).__name__} of shape {list(shape)}"
    if isinstance(x, (tuple, list)):
        inner = ", ".join(type(v).__name__ for v in list(x)[:4])
        return f"{type(x).__name__} of {len(x)} [{inner}{', ...' if len(x) > 4 else ''}]"
    return type(x).__name__


def require_method(model: Any, name: str, returns: str, where: str) -> None:
    if not callable(getattr(model, name, None)):
        raise LearnerError(
            f"{where}: the model ({type(model).__name__}) has no {name}(batch) method. The Learner calls "
            f"model.{name}(batch) -> {returns} (Burn's {'TrainStep' if name == 'train_step' else 'ValidStep'}); "
            f"define it on {type(model).__name__}."
        )


def check_batch_type(model: Any, name: str, batch: Any, split: str) -> None:
    """If ``model.<name>``'s ``batch`` parameter is annotated with a class, the batch must be an instance."""
    fn = getattr(model, name)
    try:
        params = list(inspect.signature(fn).parameters.values())
        hints = typing.get_type_hints(fn)
    except Exception:  # noqa: BLE001 - unresolvable annotations: nothing to check
        return
    if not params:
        return
    expected = hints.get(params[0].name)
    if isinstance(expected, type) and expected is not object and not isinstance(batch, expected):
        raise LearnerError(
            f"the {split} data loader yields {describe(batch)}, but {type(model).__name__}.{name} takes a "
            f"{expected.__name__}; make the loader's batcher return {expected.__name__} items."
        )
