"""The :func:`host_rule` decorator: a converter's host planning as a pure function that ModelGen can record.

A converter of :mod:`ember_import.onnx.ops` often plans on the host before it calls the Tensor API: ONNX's rules
for ``Reshape``'s ``0``/``-1``, a ``Range``'s element count, the sizes of a ``Split``. When the inputs of that
planning are read from the data (a shape input, a split-sizes input), ModelGen's trace cannot fold it into
constants, and the branches inside it would specialise the generated code on the trace's stand-in values. A
host rule is that planning written once as a small pure function over Python ints, floats and lists of them,
marked with :func:`host_rule`:

- called by ``load_model``'s converters (no trace running), it is a plain call;
- called under a ModelGen trace with a value read from the data among its arguments, the call is *recorded*
  as one line of the generated ``forward`` (``shape = rules.reshape_target([2, 3, 4], sizes, False)``) and its
  results come back as values known when that code runs (ints, floats and lists of them holding the code that
  reads them), which later Tensor-API calls take. The generated code imports the rule from its public module
  (``from ember_import.onnx import rules``): the planning is shared code, never restated.

Contract of a host rule (what the recording relies on):

- pure and deterministic: the result depends on the arguments only (no I/O, no globals, no tensors);
- arguments: ``None``, bools, ints, floats, strings and lists/tuples of them;
- results: ints, floats and lists/tuples of them (no bools, no ``None``: a result that decides a branch of the
  converter would be decided for every input by the trace's stand-in);
- the result's *structure* (list lengths, nesting) is decided by its static arguments and the lengths of its
  list arguments only, never by the values read from the data: the trace runs the rule once on its stand-in
  values and the generated code keeps that structure;
- exported from the public module :mod:`ember_import.onnx.rules` under its own name (ModelGen checks it);
- errors are :class:`~ember_import.onnx.OnnxImportError` with a message saying what was expected and found.

This module sits below :mod:`ember_import.onnx.ops` and knows nothing of ModelGen: the trace installs its handler
with :func:`set_trace_hook` (:mod:`ember_import.onnx.codegen._rules`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar, cast

__all__ = ["from_data", "host_rule", "is_host_rule", "set_trace_hook"]

F = TypeVar("F", bound=Callable[..., Any])

#: the trace's handler of a host-rule call: ``hook(rule, args, kwargs)`` (``rule.__wrapped__`` is the plain
#: function); installed by ModelGen's trace when :mod:`ember_import.onnx.codegen` is imported
_HOOK: list[Callable[[Callable[..., Any], tuple[Any, ...], dict[str, Any]], Any]] = []
#: the trace's test of :func:`from_data` (installed with the hook)
_FROM_DATA: list[Callable[[Any], bool]] = []


def host_rule(*, var: str) -> Callable[[F], F]:
    """Mark a function as a host rule (see the module docstring for the contract it must keep)::

        @host_rule(var="shape")
        def reshape_target(have: list[int], spec: list[int], allowzero: bool) -> list[int]: ...

    Args:
        var: the base name of the variable that holds the rule's result in generated code (``shape``); a
            lower-case identifier.

    Returns:
        A decorator giving a function with the rule's signature and docstring: the plain call when no ModelGen
        trace is running (``load_model``), a recorded call under one when an argument holds a value read from
        the data.
    """
    if not var.isidentifier() or var != var.lower():
        raise ValueError(f"host_rule: var must be a lower-case identifier, got {var!r}.")

    def mark(fn: F) -> F:
        @functools.wraps(fn)
        def rule(*args: Any, **kwargs: Any) -> Any:
            if _HOOK:
                return _HOOK[0](rule, args, kwargs)
            return fn(*args, **kwargs)

        rule.__ember_host_rule__ = var  # type: ignore[attr-defined]
        return cast(F, rule)

    return mark


def is_host_rule(fn: Any) -> bool:
    """Whether ``fn`` was made by :func:`host_rule`."""
    return isinstance(getattr(fn, "__ember_host_rule__", None), str)


def from_data(*values: Any) -> bool:
    """Whether one of ``values`` (ints, floats, lists of them) is read from the data when generated code runs:
    always ``False`` under ``load_model``; under a ModelGen trace, whether one holds such a value (a host read of
    a traced tensor, a host rule's result).

    A converter takes a shortcut that compares such values (``if target == list(x.shape): return x``) only when
    this is ``False``: under a trace the comparison would decide the generated code for every input."""
    return bool(_FROM_DATA) and _FROM_DATA[0](values)


def set_trace_hook(
    hook: Callable[[Callable[..., Any], tuple[Any, ...], dict[str, Any]], Any] | None,
    data_test: Callable[[Any], bool] | None = None,
) -> None:
    """Install ``hook`` as the handler of every host-rule call and ``data_test`` as :func:`from_data`'s test
    (``None``: plain calls, nothing from the data); ModelGen's trace does, once.

    The hook decides per call: no trace running on this thread, or no value read from the data among the
    arguments, and it calls ``rule.__wrapped__(*args, **kwargs)`` itself.
    """
    _HOOK[:] = [] if hook is None else [hook]
    _FROM_DATA[:] = [] if data_test is None else [data_test]
