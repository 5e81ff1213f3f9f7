"""Helpers of the rules that update many parameters in one fused backend call (issue 22).

A rule's :meth:`~ember.optim.SimpleOptimizer.step_many` receives the parameters of one device and dtype (inner
tensors), their gradients and states, and calls one primitive of :mod:`ember.backend._ops_optim` with the
primitives. These helpers unwrap scalars and states, keep the state buffers the backend may overwrite distinct,
and wrap the results back into tensors.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ..tensor import Tensor
from ._scalar import Scalar

__all__ = ["prim", "buffers", "wrap", "wrap_all", "by_counter", "step_one"]


def prim(s: Scalar | None) -> Any:
    """A scalar for a fused primitive: a Python number as it is, a ``[1]`` tensor as its primitive."""
    return s.primitive if s.__class__ is Tensor else s  # type: ignore[union-attr]


def buffers(B: Any, states: Sequence[dict[str, Any]], key: str, seen: set[int]) -> list[Any]:
    """The primitives of ``state[key]`` for each state, each a buffer the backend may overwrite: a primitive
    already taken (an alias between two states or two keys, ``seen`` holds their ids) is replaced by a copy."""
    out = []
    for st in states:
        p = st[key].primitive
        if id(p) in seen:
            p = B.mul(p, 1.0)  # a copy (x * 1.0 keeps every value, -0.0 and NaN included)
        seen.add(id(p))
        out.append(p)
    return out


def wrap(p: Any, like: Tensor) -> Tensor:
    """Primitive ``p`` as a Float tensor on ``like``'s device."""
    return Tensor(p, like.device)


def wrap_all(ps: Iterable[Any], likes: Sequence[Tensor]) -> list[Tensor]:
    return [Tensor(p, t.device) for p, t in zip(ps, likes, strict=True)]


def by_counter(states: Sequence[dict[str, Any]]) -> list[tuple[Any, list[int]]]:
    """The indices of ``states`` grouped by their ``"time"`` counter (a Python int, compared by value, or a
    ``[1]`` tensor, compared by identity), in first-seen order: one fused call per group, since the bias
    correction depends on the count (a parameter that missed steps has its own)."""
    groups: dict[Any, tuple[Any, list[int]]] = {}
    for i, st in enumerate(states):
        t = st["time"]
        key = ("t", id(t)) if t.__class__ is Tensor else ("n", t)
        if key not in groups:
            groups[key] = (t, [])
        groups[key][1].append(i)
    return list(groups.values())


def step_one(rule: Any, lr: Scalar, tensor: Tensor, grad: Tensor, state: Any) -> tuple[Tensor, Any]:
    """``rule.step`` as ``rule.step_many`` of one tensor (``state``'s buffers are consumed)."""
    new_t, new_s = rule.step_many(lr, [tensor], [grad], [state])
    return new_t[0], new_s[0]
