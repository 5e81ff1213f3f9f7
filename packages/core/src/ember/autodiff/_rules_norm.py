"""Backward rules of the normalization primitives (``batch_norm``, ``layer_norm``; issue 22).

Each op returns ``(y, statistic_1, statistic_2)``; only ``y`` is tracked (a node whose gradient is one call of
the op's ``*_backward`` primitive on the inner backend, a native kernel where the backend has one), the
statistics come back untracked (the modules use them detached, e.g. for BatchNorm's running statistics).
The backward primitives themselves run as the contract's composites under ``Autodiff`` (:data:`NORM_COMPOSITE`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import _record
from ._graph import AutodiffPrimitive as AP
from ._record import _node, _wrap
from ._table import Spec, _register

__all__ = ["NORM_COMPOSITE"]

#: the backward primitives, run as the contract's composite defaults under Autodiff
NORM_COMPOSITE: frozenset[str] = frozenset({"batch_norm_backward", "layer_norm_backward"})


def _norm(I: Any, fwd: Callable[..., Any], spec: Spec) -> Callable[..., Any]:  # noqa: E741
    """Recording op of ``op(x, gamma, beta, epsilon) -> (y, a, b)``."""
    backward = spec.name + "_backward"

    def rule(B: Any, g: Any, s: Any, ps: Any) -> Any:
        x, gamma, a, b, epsilon = s
        grads = getattr(B, backward)(g, x, gamma, a, b, epsilon)
        return tuple(gr if p is not None else None for gr, p in zip(grads, ps))

    rule.__name__ = spec.name

    def op(x: Any, gamma: Any, beta: Any, epsilon: float) -> Any:
        raw, parents = [], []
        tracked = wrapped = False
        for v in (x, gamma, beta):
            if v.__class__ is AP:
                wrapped = True
                parents.append(v.node)
                tracked = tracked or v.node is not None
                raw.append(v.p)
            else:
                parents.append(None)
                raw.append(v)
        y, a, b = fwd(*raw, epsilon)
        if not wrapped:
            return y, a, b
        node = _node(tuple(parents), rule, (raw[0], raw[1], a, b, epsilon)) if tracked else None
        return _wrap(y, node), _wrap(a, None), _wrap(b, None)

    return op


_record._FACTORIES.setdefault("norm", _norm)
_register(Spec("batch_norm", "norm", None))
_register(Spec("layer_norm", "norm", None))
