"""The values a trace's host reads of a small int (or float) graph input give the converters, tried in turn.

A converter that reads such an input on the host (``axes``, ``k``, a depth) runs, during the trace, on a stand-in
value; the generated code keeps the read as code (:mod:`._domain`), so the stand-in only has to be one the
converter accepts. No single choice suits every role (``[0, 0]`` repeats an axis, a depth of 0 is empty, an
axis of 1 is out of range for a vector), so the node is traced with each candidate in turn until one converts:
zeros (the stand-in's own data), distinct axes ``0, 1, 2 ...``, distinct counts ``1, 2, 3 ...``, then shapes
that keep any input's elements: ones (an ``Expand`` or ``Tile``) and ``-1, 1, 1 ...`` (a ``Reshape``), then
``-1, -2, -3 ...`` (distinct axes and negative steps: a ``Slice`` walking each axis backward). The value
that converts is kept for the input's later reads, so every node sees the same stand-in. A converter that
knows a value consistent with its other inputs (a size list whose batch must be another input's) names it with
:meth:`~.._context.Context.example`, and that value is the stand-in.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ember import EmberError

from .._errors import OnnxImportError
from ._errors import ModelGenError
from ._sym import GUARDS

__all__ = ["Hints", "traced_with_hints"]


class Hints:
    """The candidate values of one int graph input's host reads (nested as its shape) and the one in use."""

    __slots__ = ("options", "pick", "fixed", "example")

    def __init__(self, shape: list[int], real: bool = False) -> None:
        if not shape:
            self.options: list[Any] = [0, 1]
        else:
            n = shape[0]
            self.options = [[0] * n] + ([list(range(n))] if n > 1 else []) + [list(range(1, n + 1))]
            for keep in ([1] * n, [-1] + [1] * (n - 1)):  # shapes keeping any input's elements (Expand, Reshape)
                if n and keep not in self.options:
                    self.options.append(keep)
            if n > 1:  # distinct axes from the end, non-zero negative steps (a Slice walking every axis backward)
                self.options.append(list(range(-1, -n - 1, -1)))
        if real:  # a Float input read on the host (a ratio, a fill value, a depth): the same values as floats
            self.options = [[float(x) for x in o] if isinstance(o, list) else float(o) for o in self.options]
        self.pick = 0
        self.fixed = False
        #: a value the converter named consistent with its other inputs (:meth:`~.._context.Context.example`):
        #: used before the candidates
        self.example: Any = None

    @property
    def value(self) -> Any:
        return self.options[self.pick] if self.example is None else self.example


def traced_with_hints(gen: Any, args: list[Any], convert: Callable[[], Any]) -> Any:
    """``convert()`` retried with the next candidate of the unfixed :class:`Hints` of ``args`` while it fails
    (the failed attempt's lines and reads are dropped); the last failure propagates. The candidates of the
    attempt that converts are fixed."""
    hints = [gen.read_hints[id(a)] for a in args if id(a) in gen.read_hints and not gen.read_hints[id(a)].fixed]
    tries = max((len(hi.options) for hi in hints), default=1)
    lines, reads, device = list(gen.lines), len(gen.reads), gen.device_var
    # a failed attempt may have re-bound a traced input (a call that returns its receiver): restored with the lines
    traced, sym_shapes = (dict(gen.traced), dict(gen.sym_shapes)) if tries > 1 else (None, None)
    for k in range(tries):
        for hi in hints:
            hi.pick = min(k, len(hi.options) - 1)
        try:
            out = convert()
        except ModelGenError:
            raise
        except (OnnxImportError, EmberError, ValueError, TypeError, IndexError, ArithmeticError) as exc:
            if k == tries - 1:
                if isinstance(exc, ArithmeticError):  # the stand-ins divide by zero: no value the trace can use
                    raise ModelGenError(f"{gen.node.where()} could not be traced: {type(exc).__name__}: {exc}") from exc
                raise
            kept = {id(ln) for ln in lines}
            for ln in gen.lines:
                if id(ln) not in kept:
                    for var in ln.targets:
                        gen.var_names.release(var.name)
            gen.lines[:] = lines  # (``device = x.device`` may have been inserted first)
            if traced is not None and sym_shapes is not None:
                gen.traced.clear()
                gen.traced.update(traced)
                gen.sym_shapes.clear()
                gen.sym_shapes.update(sym_shapes)
            gen.device_var = device
            del gen.reads[reads:]
            GUARDS.clear()
            continue
        for hi in hints:
            hi.fixed = True
        return out
    raise AssertionError("unreachable")
