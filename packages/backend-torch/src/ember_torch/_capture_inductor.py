"""A captured step compiled by inductor directly (issue 32): ``torch._inductor.compile`` of the captured aten graph,
without TorchDynamo.

``torch.compile(graph)`` traces the captured graph's Python code once more with TorchDynamo and then checks
Dynamo's guards on every argument at every call (about 150 µs a call for the guide's step on the 2-core CPU,
"TorchDynamo Cache Lookup" in torch's profiler). The graph is already aten operations with no Python left to
trace, and :class:`~ember_torch._compile.CompiledStep` already keys its entries by the arguments' structure
(devices, kinds, shapes, dtypes, static values), so inductor compiles it as it is (``torch._inductor.compile``,
"compile a given FX graph ... captured without using TorchDynamo"): the guide's host-bound step went from 3.97 to
3.35 ms (bench/README.md, issue 32).

What Dynamo's guards checked besides Ember's key is the arguments' strides: inductor's code is specialized to the
strides it was compiled for and asserts them when called (``assert_size_stride``, an ``AssertionError`` before any
work). :class:`InductorRun` compiles once more for each new combination of strides met (a transposed batch, say),
so a step never fails on a layout; the steps' usual arguments (the previous step's outputs, the loader's
batches) keep one layout and one compile. After :data:`VARIANTS_MAX` combinations (Dynamo's own recompile limit
is 8), a call with yet other strides runs the captured graph as it is (``mode="capture"``'s replay: the same
results, no compile), with one ``RuntimeWarning``.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import torch

__all__ = ["VARIANTS_MAX", "CompileFailed", "InductorRun", "compile_graph"]

#: the most stride combinations compiled per captured graph; other strides replay the captured graph
VARIANTS_MAX = 8


def compile_graph(gm: torch.fx.GraphModule, example_inputs: list[Any], options: dict[str, Any]) -> Callable[..., Any]:
    """``torch._inductor.compile(gm, example_inputs, options)``: the graph compiled for these inputs' shapes,
    dtypes, devices and strides (module-level so that tests can observe the options)."""
    return torch._inductor.compile(gm, example_inputs, options)  # type: ignore[no-any-return]


class CompileFailed(RuntimeError):
    """Inductor failed to compile the captured graph (its error is the ``__cause__``): whatever raised it
    (inductor's lowering, the C++ or Triton compiler, AOTAutograd), it is a refusal of torch's compiler, which
    :class:`~ember_torch._compile.CompiledStep` reports as such (and, in the device's default mode, answers by
    replaying the captured graph), never an error of the step."""


def _strides(args: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(a.stride() if isinstance(a, torch.Tensor) else None for a in args)


def _stride_assertion(exc: AssertionError) -> bool:
    """Whether ``exc`` is inductor's check of an argument's size and stride (its message: "expected size 8==8,
    stride 1==4 at dim=0 ...")."""
    msg = str(exc)
    return msg.startswith("expected size") and "stride" in msg


class InductorRun:
    """The captured graph compiled by inductor at its first call, once more per new combination of argument
    strides; called with the graph's leaves.

    Args:
        gm: the captured graph.
        options: inductor's options (``torch._inductor.config`` keys), the mode's own with the caller's over them.

    Attributes:
        compiles: how many times the graph was compiled (1, plus one per new combination of strides).
    """

    __slots__ = ("gm", "options", "fn", "variants", "compiles", "warned")

    def __init__(self, gm: torch.fx.GraphModule, options: dict[str, Any]) -> None:
        self.gm = gm
        self.options = options
        self.fn: Callable[..., Any] | None = None
        self.variants: dict[tuple[Any, ...], Callable[..., Any]] = {}
        self.compiles = 0
        self.warned = False

    def _compile(self, args: tuple[Any, ...]) -> Callable[..., Any]:
        try:
            fn = compile_graph(self.gm, list(args), dict(self.options))
        except Exception as exc:
            raise CompileFailed(f"inductor could not compile the captured graph ({type(exc).__name__})") from exc
        self.compiles += 1
        self.variants[_strides(args)] = fn
        return fn

    def __call__(self, *args: Any) -> Any:
        fn = self.fn
        if fn is None:
            fn = self.fn = self._compile(args)
            return fn(*args)
        try:
            return fn(*args)
        except AssertionError as exc:  # raised before the graph runs: nothing was written
            if not _stride_assertion(exc):
                raise
        other = self.variants.get(_strides(args))
        if other is None:
            if len(self.variants) >= VARIANTS_MAX:
                return self._replay(args)
            other = self._compile(args)
        return other(*args)

    def _replay(self, args: tuple[Any, ...]) -> Any:
        """The captured graph run as it is, for arguments whose strides would need one compile too many."""
        if not self.warned:
            self.warned = True
            warnings.warn(
                f"ember_torch.compile: the step's tensors came with more than {VARIANTS_MAX} combinations of "
                f"strides (inductor compiles one per combination, {VARIANTS_MAX} at most); calls with other strides "
                "run the captured graph without inductor (the same results, slower). Pass tensors of one layout "
                "(e.g. row-major batches) to keep every call compiled.",
                RuntimeWarning,
                stacklevel=4,
            )
        return self.gm(*args)
