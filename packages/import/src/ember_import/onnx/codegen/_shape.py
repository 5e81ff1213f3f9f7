"""A traced tensor's shape (:class:`Shape`): indexed with a :class:`~._sym.Sym` read from the data, the dim it
picks when generated code runs, with the dims as its domain (:mod:`._domain`)."""

from __future__ import annotations

from typing import Any

from ._sym import GUARDS, Sym

__all__ = ["Shape"]


class Shape(tuple):  # type: ignore[type-arg]
    """A traced tensor's shape: indexing it with a Sym read from the data gives a Sym (the dim it picks when
    generated code runs, with the dims as its domain); slicing it with one is a guard."""

    __slots__ = ()

    def __getitem__(self, key: Any) -> Any:
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
