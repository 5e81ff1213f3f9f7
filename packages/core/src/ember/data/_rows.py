"""Rows (dicts read from JSON, CSV or SQLite) into items: dataclass construction and CSV typing."""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable
from typing import Any

from ._errors import DatasetError

__all__ = ["make_item", "csv_converters", "infer_csv_columns"]

_TRUE = {"true", "1", "yes", "y", "t"}
_FALSE = {"false", "0", "no", "n", "f"}


def make_item(item_type: Callable[..., Any] | None, row: Any, where: str) -> Any:
    """``item_type(**row)``, or ``row`` itself when ``item_type`` is ``None``.

    Raises:
        DatasetError: the row is not a mapping, its keys do not match the dataclass fields (names the
            unknown and missing ones), or the constructor raised; the message starts with ``where``.
    """
    if item_type is None:
        return row
    if isinstance(row, dict):
        try:
            return item_type(**row)
        except Exception:
            pass  # diagnose below
    if not isinstance(row, dict):
        raise DatasetError(
            f"{where}: expected a row that is a mapping of field names to build {_name(item_type)}, found "
            f"{type(row).__name__}. Read the items without item_type, or store dicts/dataclasses."
        )
    if dataclasses.is_dataclass(item_type):
        fields = [f for f in dataclasses.fields(item_type) if f.init]
        names = {f.name for f in fields}
        required = {
            f.name for f in fields if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        }
        unknown = sorted(set(row) - names)
        missing = sorted(required - set(row))
        if unknown or missing:
            raise DatasetError(
                f"{where}: the row does not fit {_name(item_type)}: unknown fields {unknown}, missing fields "
                f"{missing} (the row has {sorted(row)}). Rename the columns or fields, or read without item_type."
            )
    try:
        return item_type(**row)
    except Exception as exc:
        raise DatasetError(f"{where}: {_name(item_type)}(**row) raised {type(exc).__name__}: {exc}") from exc


def _name(item_type: Any) -> str:
    return getattr(item_type, "__qualname__", None) or repr(item_type)


def _parse_bool(text: str) -> bool:
    low = text.strip().lower()
    if low in _TRUE:
        return True
    if low in _FALSE:
        return False
    raise ValueError(f"{text!r} is not a boolean (expected one of {sorted(_TRUE | _FALSE)})")


def _converter(annotation: Any) -> Callable[[str], Any] | None:
    """A ``str -> value`` parser for a field annotation, ``None`` to keep the text."""
    optional = False
    origin = typing.get_origin(annotation)
    if origin is typing.Union or origin is types.UnionType:
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        optional = len(args) < len(typing.get_args(annotation))
        if len(args) != 1:
            return None
        annotation = args[0]
    base: Callable[[str], Any]
    if annotation is bool:
        base = _parse_bool
    elif annotation in (int, float):
        base = annotation
    elif optional:
        base = str
    else:
        return None
    if not optional:
        return base
    return lambda text: None if text == "" else base(text)


def csv_converters(item_type: Any, columns: list[str]) -> dict[str, Callable[[str], Any]]:
    """Parsers for the columns of a dataclass ``item_type`` from its field annotations.

    ``int``, ``float``, ``bool`` (true/false, 1/0, yes/no) are parsed; in an ``Optional`` field an empty
    cell is ``None``; other fields keep the cell's text.
    """
    try:
        hints = typing.get_type_hints(item_type)
    except Exception:  # unresolvable forward references: keep the text
        hints = getattr(item_type, "__annotations__", {})
    out: dict[str, Callable[[str], Any]] = {}
    for name in columns:
        conv = _converter(hints.get(name))
        if conv is not None:
            out[name] = conv
    return out


def _all_parse(values: list[str], parse: Callable[[str], Any]) -> bool:
    try:
        for v in values:
            if v != "":
                parse(v)
    except ValueError:
        return False
    return True


def infer_csv_columns(columns: list[str], rows: list[dict[str, str]]) -> dict[str, Callable[[str], Any]]:
    """Column-wise types for CSV cells, as pandas infers them: a column whose non-empty cells all
    parse as ``int`` is ``int``, else ``float`` if they all parse as ``float``, else the text is kept.
    In a numeric column an empty cell is ``None``."""
    out: dict[str, Callable[[str], Any]] = {}
    for name in columns:
        values = [r[name] for r in rows]
        if not any(v != "" for v in values):
            continue
        for parse in (int, float):
            if _all_parse(values, parse):
                out[name] = (lambda p: lambda text: None if text == "" else p(text))(parse)
                break
    return out
