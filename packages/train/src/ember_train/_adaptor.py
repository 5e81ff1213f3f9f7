"""Adaptors: convert a step's output to a metric's input (Burn's ``Adaptor<Input> for Output``).

Burn implements ``Adaptor<AccuracyInput<B>> for ClassificationOutput<B>``; here a registry maps
``(output type, input type)`` to a function. Register your own for your outputs or your metrics::

    @adaptor(MyOutput, AccuracyInput)
    def _(out: MyOutput) -> AccuracyInput:
        return AccuracyInput(out.logits, out.labels)

Look-up follows the output type's MRO (a subclass of ``ClassificationOutput`` adapts like it), then an
``adapt(input_type)`` method on the output itself, then: an output that already *is* the input type is
passed as is, and a metric whose input type is ``object`` (system metrics) takes any output.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from ._errors import MetricAdaptError

__all__ = ["adaptor", "register_adaptor", "find_adaptor", "adapt"]

_REGISTRY: dict[tuple[type, type], Callable[[Any], Any]] = {}
I = TypeVar("I")  # noqa: E741


def register_adaptor(output_type: type, input_type: type, fn: Callable[[Any], Any]) -> None:
    """Register ``fn(output) -> input`` converting ``output_type`` items to ``input_type`` (replaces any
    previous adaptor for the pair)."""
    if not isinstance(output_type, type) or not isinstance(input_type, type):
        raise TypeError(
            f"register_adaptor: output_type and input_type must be classes, got {output_type!r}, {input_type!r}."
        )
    _REGISTRY[(output_type, input_type)] = fn


def adaptor(output_type: type, input_type: type) -> Callable[[Callable[[Any], Any]], Callable[[Any], Any]]:
    """Decorator form of :func:`register_adaptor`."""
    def deco(fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
        register_adaptor(output_type, input_type, fn)
        return fn

    return deco


def _identity(x: Any) -> Any:
    return x


def find_adaptor(output_type: type, input_type: type) -> Callable[[Any], Any] | None:
    """The function converting ``output_type`` items to ``input_type``, or ``None``."""
    if input_type is object or (isinstance(output_type, type) and issubclass(output_type, input_type)):
        return _identity
    for cls in getattr(output_type, "__mro__", (output_type,)):
        fn = _REGISTRY.get((cls, input_type))
        if fn is not None:
            return fn
    if callable(getattr(output_type, "adapt", None)):
        return lambda out: out.adapt(input_type)
    return None


def adapt(output: Any, input_type: type[I], metric: str = "a metric") -> I:
    """``output`` converted to ``input_type``.

    Raises:
        MetricAdaptError: no adaptor for the pair; the message names both types and how to register one.
    """
    fn = find_adaptor(type(output), input_type)
    if fn is None:
        raise no_adaptor_error(type(output), input_type, metric)
    return fn(output)  # type: ignore[no-any-return]


def no_adaptor_error(output_type: type, input_type: type, metric: str) -> MetricAdaptError:
    known = sorted({o.__name__ for (o, i) in _REGISTRY if i is input_type})
    hint = f" Outputs that adapt to it: {', '.join(known)}." if known else ""
    return MetricAdaptError(
        f"{metric} needs a {input_type.__name__}, but the step returned a {output_type.__name__} and no adaptor "
        f"converts it.{hint} Return one of those outputs from the step, or register one with "
        f"@ember_train.adaptor({output_type.__name__}, {input_type.__name__})."
    )
