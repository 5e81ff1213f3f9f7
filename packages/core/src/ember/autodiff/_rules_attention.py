"""Backward rule of the attention primitive (``attention``; issue 22).

``attention(q, k, v, mask, dropout, scale, min_float, quiet) -> (out, residual)``: one node over ``q``, ``k`` and
``v`` whose gradient is one call of ``attention_backward`` on the inner backend (a fused kernel where the backend
has one), with the inner forward's ``residual``. Under ``Autodiff`` the op returns ``(out, None)``: the residual
lives in the node only. The mask is a Bool primitive and the dropout multiplier a constant (neither is tracked);
``attention_backward`` itself runs as the contract's composite under ``Autodiff`` (:data:`ATTENTION_COMPOSITE`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import _record
from ._graph import AutodiffPrimitive as AP
from ._record import _node, _unwrap_all, _wrap
from ._table import Spec, _register

__all__ = ["ATTENTION_COMPOSITE"]

#: the backward primitive, run as the contract's composite default under Autodiff
ATTENTION_COMPOSITE: frozenset[str] = frozenset({"attention_backward"})


def _rule(B: Any, g: Any, s: Any, ps: Any) -> Any:
    grads = B.attention_backward(g, *s)
    return tuple(gr if p is not None else None for gr, p in zip(grads, ps))


_rule.__name__ = "attention"


def _attention(I: Any, fwd: Callable[..., Any], spec: Spec) -> Callable[..., Any]:  # noqa: E741
    """Recording op of ``attention``; ``saved`` is the argument list of ``attention_backward`` after ``grad``."""

    def op(q: Any, k: Any, v: Any, mask: Any, dropout: Any, scale: float, min_float: float, quiet: bool) -> Any:
        raw, parents, wrapped, tracked = _unwrap_all((q, k, v))
        if dropout.__class__ is AP:  # a constant: no gradient flows to the dropout multiplier
            dropout = dropout.p
        out, residual = fwd(*raw, mask, dropout, scale, min_float, quiet)
        if not wrapped:
            return out, residual
        if not tracked:
            return _wrap(out, None), None
        node = _node(tuple(parents), _rule, (*raw, mask, dropout, residual, scale, min_float, quiet))
        return _wrap(out, node), None

    return op


_record._FACTORIES.setdefault("attention", _attention)
_register(Spec("attention", "attention", None))
