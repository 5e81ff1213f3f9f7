"""Replacing sub-modules of an immutable module tree (what ``torch.ao``'s ``prepare`` / ``convert`` do in place).

:func:`swap_modules` walks a module's fields in order (sub-modules, and lists, tuples and dicts of them) and
rebuilds the tree with the replacements ``fn`` returns; everything else is shared with the input. Module fields
are not type-checked at run time, so a ``linear: Linear`` field may hold a :class:`QuantizedLinear`: the model's
own class, with its ``forward``, ``train_step`` and ``valid_step``, stays the same.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Sequence
from typing import Any

from ..module._tree import fields_of, rebuild

__all__ = ["swap_modules", "PathFilter"]


def _is_module(v: Any) -> bool:
    return hasattr(type(v), "__ember_fields__")


def swap_modules(module: Any, fn: Callable[[str, Any], Any | None], path: str = "") -> Any:
    """``module`` with each sub-module ``m`` (the root included, at path ``""``) for which ``fn(path, m)`` returns
    something replaced by that result (not entered further); ``None`` keeps ``m`` and enters its fields."""
    if _is_module(module):
        out = fn(path, module)
        if out is not None:
            return out
        changes = {}
        for name in fields_of(module):
            x = getattr(module, name)
            new = _swap_value(x, fn, f"{path}.{name}" if path else name)
            if new is not x:
                changes[name] = new
        return rebuild(module, changes) if changes else module
    return _swap_value(module, fn, path)


def _swap_value(v: Any, fn: Callable[[str, Any], Any | None], path: str) -> Any:
    if _is_module(v):
        return swap_modules(v, fn, path)
    if isinstance(v, dict):
        new_items = {k: _swap_value(x, fn, f"{path}.{k}" if path else str(k)) for k, x in v.items()}
        return v if all(new_items[k] is v[k] for k in v) else type(v)(new_items)
    if isinstance(v, (list, tuple)):
        new = [_swap_value(x, fn, f"{path}.{i}" if path else str(i)) for i, x in enumerate(v)]
        if all(a is b for a, b in zip(new, v)):
            return v
        if isinstance(v, list):
            return new
        return type(v)(*new) if hasattr(v, "_fields") else type(v)(new)
    return v


class PathFilter:
    """Which layers a quantizer touches: by dotted module path (``fnmatch`` patterns, e.g. ``"linear*"``,
    ``"encoder.layers.*.attn.*"``) and by layer type.

    A layer at ``path`` of type ``T`` is chosen when ``T`` is one of ``types`` (subclasses included), ``path``
    matches one of ``include`` and none of ``exclude``. The root module has the path ``""``.

    Args:
        include: patterns a chosen path matches; default ``("*",)``: every path.
        exclude: patterns no chosen path matches; default none.
        types: the layer types to choose from.
    """

    __slots__ = ("include", "exclude", "types")

    def __init__(self, include: Sequence[str] = ("*",), exclude: Sequence[str] = (), types: Sequence[type] = ()):
        for name, pats in (("include", include), ("exclude", exclude)):
            if isinstance(pats, str) or not all(isinstance(p, str) for p in pats):
                raise TypeError(f"{name} must be a sequence of fnmatch pattern strings (e.g. ['linear*']), got "
                                f"{pats!r}.")
        self.include = tuple(include)
        self.exclude = tuple(exclude)
        self.types = tuple(types)

    def __call__(self, path: str, module: Any) -> bool:
        return (isinstance(module, self.types)
                and any(fnmatch.fnmatchcase(path, p) for p in self.include)
                and not any(fnmatch.fnmatchcase(path, p) for p in self.exclude))

    def __repr__(self) -> str:
        names = ", ".join(t.__name__ for t in self.types)
        return f"PathFilter(include={list(self.include)}, exclude={list(self.exclude)}, types=[{names}])"
