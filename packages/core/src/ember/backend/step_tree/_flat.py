"""One call's flattened arguments (:class:`Flat`): what :func:`~._flatten.flatten` fills and the rebuilding, the
optimizer-state normalization and the backend's write-back read."""

from __future__ import annotations

from typing import Any

from ._kinds import StepTree

__all__ = ["Flat", "rewind"]


class Flat:
    """One call's flattened arguments: the leaves (the backend's arrays, one per distinct array), the caller's
    objects with an identity by number (``objs``; numbered in walk order) and the two memos (object id -> number,
    array id -> leaf index).

    Args:
        tree: the backend's :class:`~ember.backend.step_tree.StepTree`.
        fast: the previous call's results flattened ahead (see :func:`~ember.backend.step_tree.fast_spec`), or
            ``None`` for a complete walk.
    """

    __slots__ = ("tree", "h", "leaves", "objs", "memo", "pmemo", "fast", "hits", "marks", "own")

    def __init__(self, tree: StepTree, fast: dict[int, Any] | None = None, own: bool = False) -> None:
        self.tree = tree
        self.h = tree.flat
        self.leaves: list[Any] = []
        self.objs: list[Any] = []
        self.memo: dict[int, int] = {}
        self.pmemo: dict[int, int] = {}
        self.fast = fast
        self.hits = 0  # objects taken from ``fast``
        #: optimizer id -> (objects, leaves) counted before its states were walked (see ``shift_spec``)
        self.marks: dict[int, tuple[int, int]] = {}
        #: the lists of ``fast`` entries may become this walk's ``objs`` / ``leaves`` (the caller drops ``fast``)
        self.own = own


def rewind(fl: Flat, mark: tuple[int, int]) -> None:
    """Forget what was walked after ``mark`` = (objects, leaves) counted before."""
    n_objs, n_leaves = mark
    for o in fl.objs[n_objs:]:
        del fl.memo[id(o)]
    del fl.objs[n_objs:]
    for p in fl.leaves[n_leaves:]:
        del fl.pmemo[id(p)]
    del fl.leaves[n_leaves:]
