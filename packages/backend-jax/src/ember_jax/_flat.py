"""One call's flattened arguments (:class:`Flat`): what :mod:`._tree` fills and the rebuilding and write-back read."""

from __future__ import annotations

from typing import Any

__all__ = ["Flat", "rewind"]


class Flat:
    """One call's flattened arguments: the leaves, the caller's objects by number and the two memos
    (object id -> number, array id -> leaf index)."""

    __slots__ = ("leaves", "objs", "memo", "pmemo", "fast", "hits", "marks")

    def __init__(self, fast: dict[int, Any] | None = None) -> None:
        self.leaves: list[Any] = []
        self.objs: list[Any] = []
        self.memo: dict[int, int] = {}
        self.pmemo: dict[int, int] = {}
        #: the previous call's flattened results (see :func:`fast_spec`), or None for a complete walk
        self.fast = fast
        self.hits = 0  # objects taken from ``fast``
        #: optimizer id -> (objects, leaves) counted before its states were walked (see :func:`shift_spec`)
        self.marks: dict[int, tuple[int, int]] = {}


def rewind(fl: Flat, mark: tuple[int, int]) -> None:
    """Forget what was walked after ``mark`` = (objects, leaves) counted before."""
    n_objs, n_leaves = mark
    for o in fl.objs[n_objs:]:
        del fl.memo[id(o)]
    del fl.objs[n_objs:]
    for p in fl.leaves[n_leaves:]:
        del fl.pmemo[id(p)]
    del fl.leaves[n_leaves:]
