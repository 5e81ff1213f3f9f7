"""Values read from the data that the converters' host logic may still look at: when a comparison decides nothing.

A converter that reads an axis list, a count or a diagonal from a traced tensor gets :class:`~._sym.Sym`\\ s
whose source is the host read (``sizes[0]``). Passing them on to a Tensor-API call keeps them as code; comparing
them in Python would pick one branch for every input, so such a comparison is a *guard* and the node is
refused (:data:`~._sym.GUARDS`). Two kinds of comparison decide nothing, and are not guards:

- one made inside :func:`~.._validate.validating` (a check that only rejects a bad model);
- one made *inside* a recorded Tensor-API call (the call is written with the symbolic argument and makes the
  same comparison when generated code runs);
- one whose outcome is the same for every value the Sym can take (its :attr:`~._sym.Sym.domain`): an axis
  normalised by :func:`~._sym.norm_axis` is one of ``range(rank)``, so ``x.shape[axis] == 0`` decides nothing when no
  dim of ``x`` is 0 (:class:`~._shape.Shape` gives ``x.shape[axis]`` the domain of ``x``'s dims).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

from .._validate import is_validating
from ._active import active

__all__ = ["DataInt", "decided", "domain_values"]

#: at most this many value pairs are tried before a comparison counts as a guard
_MAX_PAIRS = 4096


class DataInt(int):
    """An int that may be read from the data (:attr:`data`), with the values it can take (:attr:`domain`): the
    base of :class:`~._sym.Sym`, what :func:`decided` looks at (it sits below :mod:`._sym`)."""

    data: bool = False
    #: the values it can take when generated code runs, where known (an axis of a given rank, a dim of a static
    #: shape): a comparison that comes out the same for each of them decides nothing
    domain: frozenset[int] | None = None


def domain_values(v: Any) -> frozenset[int] | None:
    """The values ``v`` can take when generated code runs: its domain, the hint of a size of the input (shapes
    are specialised on), the int itself; ``None`` when unknown (a value read from the data)."""
    return _values(v)


def _values(v: Any) -> frozenset[int] | None:
    if isinstance(v, DataInt):
        if v.domain is not None:
            return v.domain
        return None if v.data else frozenset((int(v),))  # a dim of the input: specialised on as a shape guard
    if isinstance(v, int):
        return frozenset((int(v),))
    return None


def decided(a: Any, b: Any, cmp: Callable[[int, int], bool] | None) -> bool:
    """Whether ``cmp(a, b)`` decides nothing: made inside a recorded call, or the same for every value pair."""
    gen = active()
    if (gen is not None and gen.depth) or is_validating():
        return True
    if cmp is None:
        return False
    va, vb = _values(a), _values(b)
    if va is None or vb is None or len(va) * len(vb) > _MAX_PAIRS:
        return False
    return len({bool(cmp(x, y)) for x, y in itertools.product(va, vb)}) == 1
