"""Backward rules of the recurrent primitives ``lstm`` (issue 22) and ``lstm_stack`` (issue 32).

``lstm(x, h0, c0, w_x, w_h, bias, residual)`` records one node for the whole layer call, whose rule is one call
of the inner backend's ``lstm_backward`` (a native kernel where the backend has one), and one pick node per
output (:mod:`._output_grads`): ``y``, ``h_n`` and ``c_n`` are all differentiable. The forward runs with
``residual=True`` when any argument is tracked (and as asked otherwise); the residual stays in the node and the
op returns ``None`` in its place. ``lstm_backward`` itself runs as the contract's composite under ``Autodiff``
(:data:`RNN_COMPOSITE`).

``lstm_stack(x, h0, c0, weights, residual)`` likewise records one node for the whole stack, whose parents are
``x``, ``h0``, ``c0`` and every layer's ``w_x``, ``w_h``, ``bias`` in order (the list of triples flattened), and
whose rule is one ``lstm_stack_backward`` call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import _record
from ._output_grads import pick_rule
from ._record import _node, _unwrap_all, _wrap
from ._slice_grads import dense
from ._table import Spec, _register

__all__ = ["RNN_COMPOSITE"]

#: the backward primitive, run as the contract's composite default under Autodiff
RNN_COMPOSITE: frozenset[str] = frozenset({"lstm_backward", "lstm_stack_backward"})

_OUTPUTS = 3  # y, h_n, c_n
_PICKS = tuple(pick_rule("lstm", k, _OUTPUTS) for k in range(_OUTPUTS))
_STACK_PICKS = tuple(pick_rule("lstm_stack", k, _OUTPUTS) for k in range(_OUTPUTS))


def _lstm(I: Any, fwd: Callable[..., Any], spec: Spec) -> Callable[..., Any]:  # noqa: E741
    """Recording op of ``lstm(x, h0, c0, w_x, w_h, bias | None, residual) -> (y, h_n, c_n, residual)``."""

    def rule(B: Any, g: Any, s: Any, ps: Any) -> Any:
        gy, gh, gc = (None if a is None else dense(B, a) for a in g.grads)
        grads = B.lstm_backward(gy, gh, gc, *s)
        return tuple(gr if p is not None else None for gr, p in zip(grads, ps))

    rule.__name__ = spec.name

    def op(x: Any, h0: Any, c0: Any, w_x: Any, w_h: Any, bias: Any, residual: bool) -> Any:
        raw, parents, wrapped, tracked = _unwrap_all((x, h0, c0, w_x, w_h, bias))
        if not wrapped:
            return fwd(*raw, residual)
        y, h, c, res = fwd(*raw, residual or tracked)
        if not tracked:
            return _wrap(y, None), _wrap(h, None), _wrap(c, None), res
        node = _node(tuple(parents), rule, (*raw, y, res))
        outs = tuple(_wrap(v, _node((node,), pick, None)) for v, pick in zip((y, h, c), _PICKS))
        return (*outs, None)

    return op


def _lstm_stack(I: Any, fwd: Callable[..., Any], spec: Spec) -> Callable[..., Any]:  # noqa: E741
    """Recording op of ``lstm_stack(x, h0, c0, [(w_x, w_h, bias | None), ...], residual) -> (y, h_n, c_n,
    residual)``."""

    def rule(B: Any, g: Any, s: Any, ps: Any) -> Any:
        gy, gh, gc = (None if a is None else dense(B, a) for a in g.grads)
        gx, gh0, gc0, gws = B.lstm_stack_backward(gy, gh, gc, *s)
        grads = (gx, gh0, gc0, *(gr for triple in gws for gr in triple))
        return tuple(gr if p is not None else None for gr, p in zip(grads, ps))

    rule.__name__ = spec.name

    def op(x: Any, h0: Any, c0: Any, weights: Any, residual: bool) -> Any:
        raw, parents, wrapped, tracked = _unwrap_all((x, h0, c0, *(w for triple in weights for w in triple)))
        layers = [tuple(raw[3 + 3 * k:6 + 3 * k]) for k in range(len(weights))]
        if not wrapped:
            return fwd(x, h0, c0, layers, residual)
        y, h, c, res = fwd(raw[0], raw[1], raw[2], layers, residual or tracked)
        if not tracked:
            return _wrap(y, None), _wrap(h, None), _wrap(c, None), res
        node = _node(tuple(parents), rule, (raw[0], raw[1], raw[2], layers, y, res))
        outs = tuple(_wrap(v, _node((node,), pick, None)) for v, pick in zip((y, h, c), _STACK_PICKS))
        return (*outs, None)

    return op


_record._FACTORIES.setdefault("lstm", _lstm)
_register(Spec("lstm", "lstm", None))
_record._FACTORIES.setdefault("lstm_stack", _lstm_stack)
_register(Spec("lstm_stack", "lstm_stack", None))
