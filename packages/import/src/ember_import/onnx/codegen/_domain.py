"""Values read from the data that the converters' host logic may still look at: when a comparison decides nothing.

A converter that reads an axis list, a count or a diagonal from a traced tensor gets :class:`~._sym.Sym`\\ s
whose source is the host read (``sizes[0]``). Passing them on to a Tensor-API call keeps them as code; comparing
them in Python would pick one branch for every input, so such a comparison is a *guard* and the node is
refused (:data:`~._sym.GUARDS`). Two kinds of comparison decide nothing, and are not guards:

- one made inside :func:`~.._validate.validating` (a check that only rejects a bad model);
- one made *inside* a recorded Tensor-API call (the call is written with the symbolic argument and makes the
  same comparison when generated code runs);
- one whose outcome is the same for every value the Sym can take (its :attr:`~._sym.Sym.domain`): an axis
  normalised by :func:`norm_axis` is one of ``range(rank)``, so ``x.shape[axis] == 0`` decides nothing when no
  dim of ``x`` is 0 (:class:`Shape` gives ``x.shape[axis]`` the domain of ``x``'s dims).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

from .._validate import is_validating

__all__ = ["Shape", "decided", "norm_axis"]

#: at most this many value pairs are tried before a comparison counts as a guard
_MAX_PAIRS = 4096


def _values(v: Any) -> frozenset[int] | None:
    from ._sym import Sym

    if isinstance(v, Sym):
        if v.domain is not None:
            return v.domain
        return None if v.data else frozenset((int(v),))  # a dim of the input: specialised on as a shape guard
    if isinstance(v, int):
        return frozenset((int(v),))
    return None


def decided(a: Any, b: Any, cmp: Callable[[int, int], bool] | None) -> bool:
    """Whether ``cmp(a, b)`` decides nothing: made inside a recorded call, or the same for every value pair."""
    from ._trace import active

    gen = active()
    if (gen is not None and gen.depth) or is_validating():
        return True
    if cmp is None:
        return False
    va, vb = _values(a), _values(b)
    if va is None or vb is None or len(va) * len(vb) > _MAX_PAIRS:
        return False
    return len({bool(cmp(x, y)) for x, y in itertools.product(va, vb)}) == 1


def norm_axis(axis: Any, rank: int) -> Any:
    """``axis`` (a Sym read from the data, in ``[-rank, rank)``) as an axis in ``[0, rank)``, branch-free: the
    code ``(axis % rank)``, whose domain is ``range(rank)``. An out-of-range axis is the model's error (ONNX
    refuses it); the trace's own value is checked, so the example input cannot hide one."""
    from .._errors import OnnxImportError
    from ._sym import Sym

    n = max(int(rank), 1)
    h = int(axis)
    if not -rank <= h < n:
        raise OnnxImportError(
            f"axis {h} read from the data is out of range for rank {rank} (expected {-rank} .. {rank - 1})."
        )
    return Sym(h % n, ("(", *Sym._p(axis), f" % {n})"), data=True, domain=frozenset(range(n)))


class Shape(tuple):  # type: ignore[type-arg]
    """A traced tensor's shape: indexing it with a Sym read from the data gives a Sym (the dim it picks when
    generated code runs, with the dims as its domain); slicing it with one is a guard."""

    __slots__ = ()

    def __getitem__(self, key: Any) -> Any:
        from ._sym import GUARDS, Sym

        if isinstance(key, Sym) and key.data:
            dims = tuple(self)
            hint = dims[int(key)]
            static = all(not isinstance(d, Sym) for d in dims)
            elems: list[Any] = []
            for k, d in enumerate(dims):
                elems.extend((", ",) * bool(k) + Sym._p(d))
            picks = (
                key.domain
                if key.domain is not None and all(-len(dims) <= i < len(dims) for i in key.domain)
                else range(len(dims))
            )
            return Sym(
                hint,
                ("[", *elems, "][", *key.parts, "]"),
                data=True,
                domain=frozenset(int(dims[i]) for i in picks) if static else None,
            )
        if isinstance(key, slice) and any(isinstance(p, Sym) and p.data for p in (key.start, key.stop, key.step)):
            GUARDS.append(key)
        return tuple.__getitem__(self, key)
