"""Walking and rebuilding the values held by module fields.

A field value is classified by what it *is*, not by its annotation: :class:`Param` and
:class:`RunningState` are state leaves, a :class:`Module` is a node, lists/tuples/dicts are
containers, an ember ``Tensor`` outside a ``Param`` is a constant, anything else a plain value. So
``Optional`` and union ("enum") module fields need nothing special.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from ..tensor import Tensor
from ._param import Param, RunningState

__all__ = ["join", "walk_state", "map_leaves", "has_state", "rebuild", "fields_of"]


def join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _is_module(v: Any) -> bool:
    return hasattr(type(v), "__ember_fields__")


def fields_of(module: Any) -> tuple[str, ...]:
    return type(module).__ember_fields__  # type: ignore[no-any-return]


def has_state(v: Any) -> bool:
    """Whether ``v`` is or contains a module, a Param or a RunningState (such fields are recorded)."""
    if isinstance(v, (Param, RunningState)) or _is_module(v):
        return True
    if isinstance(v, (list, tuple)):
        return any(has_state(x) for x in v)
    if isinstance(v, dict):
        return any(has_state(x) for x in v.values())
    return False


def items(v: Any) -> Iterator[tuple[str, Any]]:
    """(key, child) pairs of a container (index strings for sequences)."""
    if isinstance(v, dict):
        for k, x in v.items():
            yield str(k), x
    else:
        for i, x in enumerate(v):
            yield str(i), x


def walk_state(
    v: Any, path: str, on_leaf: Callable[[str, Any], None],
    enter: Callable[[str, Any], None] | None = None, leave: Callable[[str, Any], None] | None = None,
) -> None:
    """Call ``on_leaf(path, leaf)`` for every Param and RunningState under ``v``, depth first, in field order."""
    if isinstance(v, (Param, RunningState)):
        on_leaf(path, v)
    elif _is_module(v):
        if enter is not None:
            enter(path, v)
        for name in fields_of(v):
            walk_state(getattr(v, name), join(path, name), on_leaf, enter, leave)
        if leave is not None:
            leave(path, v)
    elif isinstance(v, (list, tuple, dict)):
        for k, x in items(v):
            walk_state(x, join(path, k), on_leaf, enter, leave)


def rebuild(module: Any, values: dict[str, Any]) -> Any:
    """A copy of ``module`` with some field values replaced, without running ``__init__``."""
    new = object.__new__(type(module))
    state = dict(module.__dict__)
    state.update(values)
    object.__setattr__(new, "__dict__", state)
    return new


def _rebuild_seq(v: Any, new: list[Any]) -> Any:
    if isinstance(v, list):
        return new
    if hasattr(v, "_fields"):  # namedtuple
        return type(v)(*new)
    return type(v)(new)


def map_leaves(v: Any, path: str, fn: Callable[[str, Any], Any]) -> Any:
    """``v`` with every Param, RunningState and constant Tensor leaf replaced by ``fn(path, leaf)``.

    Modules and containers are rebuilt (new objects); plain values are kept.
    """
    if isinstance(v, (Param, RunningState, Tensor)):
        return fn(path, v)
    if _is_module(v):
        return rebuild(v, {name: map_leaves(getattr(v, name), join(path, name), fn) for name in fields_of(v)})
    if isinstance(v, dict):
        return type(v)((k, map_leaves(x, join(path, str(k)), fn)) for k, x in v.items())
    if isinstance(v, (list, tuple)):
        return _rebuild_seq(v, [map_leaves(x, join(path, str(i)), fn) for i, x in enumerate(v)])
    return v
