"""Expressions of generated code as data: a field's construction (``nn.Conv2dConfig(...).init(device)``) is
written into ``model.py`` by :func:`source` and built as an object by :func:`build`, from the same tree.

Generation saves the weights record from the objects :func:`build` makes, so it never imports or runs the text
it wrote (DESIGN §9, §11). The tree holds only names the generator chose (``nn``, ``Param``, layer classes) and
Python literals; a string from a model file can only be a literal here, written with ``repr``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np

from ._errors import ModelGenError

__all__ = ["Attr", "Call", "Expr", "Name", "Shared", "build", "layer", "literal", "quoted", "source"]


@dataclasses.dataclass(frozen=True)
class Name:
    """A name the generated module imports or binds (``nn``, ``Tensor``, ``Int``, ``Param``, ``device``)."""

    name: str


@dataclasses.dataclass(frozen=True)
class Attr:
    """``obj.name``."""

    obj: Expr
    name: str


@dataclasses.dataclass(frozen=True)
class Call:
    """``fn(*args, **kwargs)``; arguments are expressions or literals (tuples are written as tuples)."""

    fn: Expr
    args: tuple[Any, ...] = ()
    kwargs: tuple[tuple[str, Any], ...] = ()


@dataclasses.dataclass(frozen=True)
class Shared:
    """A module-level constant of the generated file: written as ``name``, built from ``value``."""

    name: str
    value: Expr


Expr = Name | Attr | Call | Shared


def quoted(text: str) -> str:
    """``text`` as a double-quoted Python string literal: ``\\`` and ``"`` escaped, every character that is not
    printable (newlines, ``\\r``, NUL, U+2028/U+2029 ...) written as its escape, as ``repr`` writes them."""
    out = ['"']
    for ch in text:
        if ch in '\\"':
            out.append("\\" + ch)
        else:
            out.append(ch if ch.isprintable() else repr(ch)[1:-1])
    out.append('"')
    return "".join(out)


def literal(v: Any) -> str:
    """Python source of a constant: ``None``, a bool, int, float (float32 values as their exact float64
    ``repr``), str, bytes, or a list/tuple of those (a tuple is written as a list).

    Raises:
        ModelGenError: any other type (nothing but these literals is ever written from data).
    """
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, str):
        return quoted(v)
    if v is None or isinstance(v, (bool, int, bytes)):
        return repr(v)
    if isinstance(v, float):
        if v != v:
            return 'float("nan")'
        if v in (float("inf"), float("-inf")):
            return 'float("inf")' if v > 0 else '-float("inf")'
        return repr(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(literal(x) for x in v) + "]"
    raise ModelGenError(f"generated code: expected a constant (None, bool, int, float, str, bytes or a list of them), "
                        f"found a {type(v).__name__}; this is a bug in ModelGen, please report it.")


def layer(config: str, *args: Any, device: bool = True, **kwargs: Any) -> Call:
    """``nn.<config>(*args, **kwargs).init(device)`` (``.init()`` when ``device`` is False)."""
    made = Call(Attr(Name("nn"), config), args, tuple(kwargs.items()))
    return Call(Attr(made, "init"), (Name("device"),) if device else ())


def _arg(v: Any) -> str:
    if isinstance(v, (Name, Attr, Call, Shared)):
        return source(v)
    if isinstance(v, tuple):
        return "(" + ", ".join(_arg(x) for x in v) + ("," if len(v) == 1 else "") + ")"
    return literal(v)


def source(e: Expr) -> str:
    """The Python source of ``e``."""
    if isinstance(e, Name):
        return e.name
    if isinstance(e, Shared):
        return e.name
    if isinstance(e, Attr):
        return f"{source(e.obj)}.{e.name}"
    parts = [_arg(a) for a in e.args] + [f"{k}={_arg(v)}" for k, v in e.kwargs]
    return f"{source(e.fn)}({', '.join(parts)})"


def _value(v: Any, names: Mapping[str, Any]) -> Any:
    if isinstance(v, (Name, Attr, Call, Shared)):
        return build(v, names)
    if isinstance(v, tuple):
        return tuple(_value(x, names) for x in v)
    if isinstance(v, list):
        return [_value(x, names) for x in v]
    return v


def build(e: Expr, names: Mapping[str, Any]) -> Any:
    """The object ``e`` evaluates to in the generated module, where ``names`` maps each :class:`Name` to its
    value (no source is parsed or run: only attribute look-ups and calls of the tree).

    Raises:
        ModelGenError: a name missing from ``names`` or a private attribute (a bug in ModelGen).
    """
    if isinstance(e, Name):
        if e.name not in names:
            raise ModelGenError(f"generated code: name {e.name!r} is not bound; this is a bug in ModelGen.")
        return names[e.name]
    if isinstance(e, Shared):
        return build(e.value, names)
    if isinstance(e, Attr):
        if not e.name.isidentifier() or e.name.startswith("_"):
            raise ModelGenError(f"generated code: attribute {e.name!r} is not a public name; a bug in ModelGen.")
        return getattr(build(e.obj, names), e.name)
    fn = build(e.fn, names)
    return fn(*(_value(a, names) for a in e.args), **{k: _value(v, names) for k, v in e.kwargs})
