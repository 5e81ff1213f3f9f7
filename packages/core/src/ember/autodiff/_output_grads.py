"""Gradients of a multi-output op (issue 22: ``lstm`` returns ``y``, ``h_n`` and ``c_n``, all differentiable).

A node has one output. An op with ``k`` tracked outputs records one node for the op and, per output, a small
"pick" node whose only parent is the op's node and whose rule sends an :class:`OutputGrads` with its gradient in
its slot. The sweep gathers the slots (:func:`ember.autodiff._slice_grads.accumulate`) and hands the op's rule
the :class:`OutputGrads`: each slot ``None`` (no gradient reached that output) or a gradient, possibly still a
:class:`~ember.autodiff._slice_grads.SliceGrad` that the rule writes out with ``dense``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["OutputGrads", "pick_rule"]


class OutputGrads:
    """The gradients of an op's ``len(grads)`` outputs, ``None`` where none arrived."""

    __slots__ = ("grads",)

    def __init__(self, grads: list[Any]) -> None:
        self.grads = grads


def pick_rule(name: str, k: int, n: int) -> Callable[[Any, Any, Any, Any], tuple[OutputGrads]]:
    """The rule of the node of output ``k`` of ``n``: its gradient into slot ``k`` of an :class:`OutputGrads`."""

    def rule(B: Any, g: Any, s: Any, ps: Any) -> tuple[OutputGrads]:
        grads: list[Any] = [None] * n
        grads[k] = g
        return (OutputGrads(grads),)

    rule.__name__ = f"{name}[{k}]"
    return rule
