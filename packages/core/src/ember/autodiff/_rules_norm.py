"""Backward rules of the normalization primitives (``batch_norm``, ``layer_norm``, ``group_norm``, ``rms_norm``;
issue 22).

Each op takes its tensors (``x``, ``gamma`` and, but for ``rms_norm``, ``beta``) then plain values (``num_groups``,
``epsilon``) and returns ``(y, *statistics)``; only ``y`` is tracked (a node whose gradient is one call of
the op's ``*_backward`` primitive on the inner backend, a native kernel where the backend has one), the
statistics come back untracked (the modules use them detached, e.g. for BatchNorm's running statistics).
The backward primitives themselves run as the contract's composites under ``Autodiff`` (:data:`NORM_COMPOSITE`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import _record
from ._record import _node, _unwrap_all, _wrap
from ._table import Spec, _register

__all__ = ["NORM_COMPOSITE"]

#: the backward primitives, run as the contract's composite defaults under Autodiff
NORM_COMPOSITE: frozenset[str] = frozenset({"batch_norm_backward", "layer_norm_backward", "group_norm_backward",
                                            "rms_norm_backward"})

#: how many leading arguments of each op are tensors
_TENSORS = {"batch_norm": 3, "layer_norm": 3, "group_norm": 3, "rms_norm": 2}


def _norm(I: Any, fwd: Callable[..., Any], spec: Spec) -> Callable[..., Any]:  # noqa: E741
    """Recording op of ``op(x, gamma[, beta], *values) -> (y, *statistics)``, whose backward is
    ``op_backward(grad, x, gamma, *statistics, *values)``."""
    backward = spec.name + "_backward"
    k = _TENSORS[spec.name]

    def rule(B: Any, g: Any, s: Any, ps: Any) -> Any:
        grads = getattr(B, backward)(g, *s)
        return tuple(gr if p is not None else None for gr, p in zip(grads, ps))

    rule.__name__ = spec.name

    def op(*args: Any) -> Any:
        raw, parents, wrapped, tracked = _unwrap_all(args[:k])
        values = args[k:]
        y, *stats = fwd(*raw, *values)
        if not wrapped:
            return (y, *stats)
        node = _node(tuple(parents), rule, (raw[0], raw[1], *stats, *values)) if tracked else None
        return (_wrap(y, node), *[_wrap(a, None) for a in stats])

    return op


_record._FACTORIES.setdefault("norm", _norm)
_register(Spec("batch_norm", "norm", None))
_register(Spec("layer_norm", "norm", None))
_register(Spec("group_norm", "norm", None))
_register(Spec("rms_norm", "norm", None))
