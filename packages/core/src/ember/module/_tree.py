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


#: what a value is to the walks, by its type (cached in :data:`_KINDS`: a type never changes kind). Ordered so
#: that ``kind <= _SEQ`` may hold state (what :func:`walk_state` enters) and ``kind <= _TENSOR`` may hold leaves
#: (what :func:`map_leaves` enters): plain values are skipped without a call
_STATE, _MODULE, _DICT, _SEQ, _TENSOR, _PLAIN = range(6)
_KINDS: dict[type, int] = {}


def _kind(v: Any) -> int:
    t = type(v)
    k = _KINDS.get(t)
    if k is None:
        if issubclass(t, (Param, RunningState)):
            k = _STATE
        elif issubclass(t, Tensor):
            k = _TENSOR
        elif hasattr(t, "__ember_fields__"):
            k = _MODULE
        elif issubclass(t, dict):
            k = _DICT
        elif issubclass(t, (list, tuple)):
            k = _SEQ
        else:
            k = _PLAIN
        _KINDS[t] = k
    return k


def walk_state(
    v: Any, path: str, on_leaf: Callable[[str, Any], None],
    enter: Callable[[str, Any], None] | None = None, leave: Callable[[str, Any], None] | None = None,
) -> None:
    """Call ``on_leaf(path, leaf)`` for every Param and RunningState under ``v``, depth first, in field order."""
    k = _kind(v)
    if k == _STATE:
        on_leaf(path, v)
    elif k == _MODULE:
        if enter is not None:
            enter(path, v)
        for name in fields_of(v):
            x = getattr(v, name)
            if _kind(x) <= _SEQ:
                walk_state(x, f"{path}.{name}" if path else name, on_leaf, enter, leave)
        if leave is not None:
            leave(path, v)
    elif k == _DICT or k == _SEQ:
        for key, x in items(v):
            if _kind(x) <= _SEQ:
                walk_state(x, f"{path}.{key}" if path else key, on_leaf, enter, leave)


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
    k = _kind(v)
    if k == _STATE or k == _TENSOR:
        return fn(path, v)
    if k == _MODULE:
        new = {}
        for name in fields_of(v):
            x = getattr(v, name)
            new[name] = map_leaves(x, f"{path}.{name}" if path else name, fn) if _kind(x) <= _TENSOR else x
        return rebuild(v, new)
    if k == _DICT:
        return type(v)((key, map_leaves(x, join(path, str(key)), fn)) for key, x in v.items())
    if k == _SEQ:
        return _rebuild_seq(v, [map_leaves(x, join(path, str(i)), fn) if _kind(x) <= _TENSOR else x
                                for i, x in enumerate(v)])
    return v
