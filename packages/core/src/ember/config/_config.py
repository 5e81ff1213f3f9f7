"""``@config``: serializable, validated configuration classes (Burn's ``#[derive(Config)]``)."""

from __future__ import annotations

import dataclasses
import enum
import json
import os
import sys
import types
import typing
from pathlib import Path
from typing import Any, TypeVar, Union

from .._errors import ConfigError

__all__ = ["config", "is_config"]

T = TypeVar("T")
_MISSING = dataclasses.MISSING


def is_config(obj: Any) -> bool:
    """Whether ``obj`` is a ``@config`` class or an instance of one."""
    cls = obj if isinstance(obj, type) else type(obj)
    return bool(getattr(cls, "__ember_config__", False))


def _hints(cls: type) -> dict[str, Any]:
    try:
        return typing.get_type_hints(cls)
    except Exception as exc:  # unresolvable forward reference
        raise ConfigError(f"@config {cls.__name__}: cannot resolve the field annotations ({exc}).") from None


def _tname(tp: Any) -> str:
    if isinstance(tp, type):
        return tp.__name__
    return str(tp).replace("typing.", "")


def _bad(where: str, tp: Any, value: Any) -> ConfigError:
    return ConfigError(
        f"{where}: expected {_tname(tp)}, got {type(value).__name__} {value!r:.80}."
    )


def _coerce(tp: Any, value: Any, where: str, from_json: bool) -> Any:
    """``value`` checked against ``tp`` (and converted from its JSON form when ``from_json``).

    Raises:
        ConfigError: the value does not fit (``where`` names the field).
    """
    if tp is Any or tp is object:
        return value
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is Union or (hasattr(types, "UnionType") and origin is types.UnionType):
        if value is None and type(None) in args:
            return None
        errors = []
        for a in args:
            if a is type(None):
                continue
            try:
                return _coerce(a, value, where, from_json)
            except ConfigError as exc:
                errors.append(str(exc))
        raise _bad(where, tp, value)
    if origin is typing.Literal:
        if value in args:
            return value
        raise ConfigError(f"{where}: expected one of {list(args)}, got {value!r}.")
    if origin in (list, typing.List):  # noqa: UP006
        if not isinstance(value, (list, tuple)):
            raise _bad(where, tp, value)
        inner = args[0] if args else Any
        return [_coerce(inner, v, f"{where}[{i}]", from_json) for i, v in enumerate(value)]
    if origin in (tuple, typing.Tuple):  # noqa: UP006
        if not isinstance(value, (list, tuple)):
            raise _bad(where, tp, value)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_coerce(args[0], v, f"{where}[{i}]", from_json) for i, v in enumerate(value))
        if args and args != ((),):
            if len(args) != len(value):
                raise ConfigError(f"{where}: expected {len(args)} items ({_tname(tp)}), got {len(value)}.")
            return tuple(_coerce(a, v, f"{where}[{i}]", from_json) for i, (a, v) in enumerate(zip(args, value)))
        return tuple(value)
    if origin in (dict, typing.Dict):  # noqa: UP006
        if not isinstance(value, dict):
            raise _bad(where, tp, value)
        kt, vt = args if args else (Any, Any)
        return {_coerce(kt, k, f"{where} key", from_json): _coerce(vt, v, f"{where}[{k!r}]", from_json)
                for k, v in value.items()}
    if origin is not None:
        tp = origin
    if not isinstance(tp, type):
        return value
    if is_config(tp):
        if isinstance(value, tp):
            return value
        if from_json and isinstance(value, dict):
            return _from_dict(tp, value, where)
        raise _bad(where, tp, value)
    if issubclass(tp, enum.Enum):
        if isinstance(value, tp):
            return value
        if from_json:
            for member in tp:
                if member.value == value or member.name == value:
                    return member
        raise ConfigError(f"{where}: expected a {tp.__name__} member ({', '.join(m.name for m in tp)}), got {value!r}.")
    if tp is bool:
        if isinstance(value, bool):
            return value
        raise _bad(where, tp, value)
    if tp is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise _bad(where, tp, value)
    if tp is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        raise _bad(where, tp, value)
    if isinstance(value, tp):
        return value
    raise _bad(where, tp, value)


def _to_json(value: Any) -> Any:
    if is_config(value):
        return value.to_dict()
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, (list, tuple)):
        return [_to_json(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _to_json(v) for k, v in value.items()}
    return value


def _from_dict(cls: type[T], data: Any, where: str = "") -> T:
    name = where or cls.__name__
    if not isinstance(data, dict):
        raise ConfigError(f"{name}: expected a JSON object for {cls.__name__}, got {type(data).__name__}.")
    fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    unknown = [k for k in data if k not in fields]
    if unknown:
        raise ConfigError(
            f"{name}: unknown field {', '.join(map(repr, unknown))} for {cls.__name__}; fields are "
            f"{', '.join(fields)}."
        )
    hints = _hints(cls)
    kwargs = {}
    for k, v in data.items():
        kwargs[k] = _coerce(hints.get(k, Any), v, f"{name}.{k}", True)
    missing = [f for f, spec in fields.items()
               if f not in kwargs and spec.default is _MISSING and spec.default_factory is _MISSING]
    if missing:
        raise ConfigError(f"{name}: missing required field {', '.join(map(repr, missing))} for {cls.__name__}.")
    return cls(**kwargs)


def _post_init(self: Any) -> None:
    cls = type(self)
    hints = _hints(cls)
    for f in dataclasses.fields(cls):
        v = getattr(self, f.name)
        checked = _coerce(hints.get(f.name, Any), v, f"{cls.__name__}.{f.name}", False)
        if checked is not v:
            object.__setattr__(self, f.name, checked)
    user = getattr(cls, "__ember_user_post_init__", None)
    if user is not None:
        user(self)


def _make_with(name: str) -> Any:
    def with_(self: Any, value: Any) -> Any:
        return dataclasses.replace(self, **{name: value})

    with_.__name__ = f"with_{name}"
    with_.__doc__ = f"A copy with ``{name}`` set to ``value`` (validated). Raises ConfigError on a wrong type."
    return with_


def _to_dict(self: Any) -> dict[str, Any]:
    """The fields as JSON-compatible values (nested configs as dicts, enums as values, tuples as lists)."""
    return {f.name: _to_json(getattr(self, f.name)) for f in dataclasses.fields(self)}


def _save(self: Any, path: str | os.PathLike[str]) -> Path:
    """Write the config as indented JSON, atomically. Returns the path."""
    from ..record._atomic import atomic_write

    text = json.dumps(self.to_dict(), indent=2, allow_nan=True).encode("utf-8") + b"\n"
    return atomic_write(path, lambda f: f.write(text))


def _load(cls: type[T], path: str | os.PathLike[str]) -> T:
    """Read a config saved by ``save``.

    Raises:
        FileNotFoundError: no such file.
        ConfigError: invalid JSON, an unknown or missing field, or a wrongly typed value (names the field).
    """
    raw = Path(path).read_bytes()
    try:
        data = json.loads(raw)
    except (UnicodeDecodeError, ValueError) as exc:
        raise ConfigError(f"config file '{path}': not valid JSON ({exc}).") from None
    return _from_dict(cls, data)


def _from_dict_cm(cls: type[T], data: dict[str, Any]) -> T:
    """Build from a dict as produced by ``to_dict`` (nested dicts become nested configs).

    Raises:
        ConfigError: an unknown or missing field, or a wrongly typed value (names the field).
    """
    return _from_dict(cls, data)


if sys.version_info >= (3, 11):
    from typing import dataclass_transform
else:  # pragma: no cover - Python 3.10: the decorator only informs type checkers

    def dataclass_transform(**_kwargs: Any) -> Any:
        return lambda f: f


@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field,))
def config(cls: type[T]) -> type[T]:
    """Turn a class with annotated fields into a config (Burn's ``#[derive(Config)]``).

    ::

        @config
        class LinearConfig:
            d_input: int
            d_output: int
            bias: bool = True

        cfg = LinearConfig(784, 128).with_bias(False)
        cfg.save("linear.json"); LinearConfig.load("linear.json") == cfg

    The class becomes a frozen dataclass: required fields first, then defaulted ones (positional or keyword
    construction), ``with_<field>(value)`` for each field, ``to_dict`` / ``from_dict``, ``save(path)`` /
    ``load(path)`` as JSON (atomic write). Fields may be other configs (nested), enums, lists, tuples, dicts,
    ``Optional``/unions and ``Literal``. Values are type-checked on construction and load (an ``int`` is
    accepted for a ``float`` field). A ``__post_init__`` defined on the class runs after the checks.

    Raises:
        ConfigError: a wrongly typed value, an unknown or missing key (names the field); a required field
            after a defaulted one (at class definition).
    """
    user_post = cls.__dict__.get("__post_init__")
    if user_post is not None:
        cls.__ember_user_post_init__ = user_post  # type: ignore[attr-defined]
    cls.__post_init__ = _post_init  # type: ignore[attr-defined]
    try:
        dc = dataclasses.dataclass(frozen=True)(cls)
    except TypeError as exc:
        raise ConfigError(f"@config {cls.__name__}: {exc}; put required fields before defaulted ones.") from None
    dc.__ember_config__ = True  # type: ignore[attr-defined]
    for f in dataclasses.fields(dc):  # type: ignore[arg-type]
        attr = f"with_{f.name}"
        if attr not in dc.__dict__:
            setattr(dc, attr, _make_with(f.name))
    dc.to_dict = _to_dict  # type: ignore[attr-defined]
    dc.from_dict = classmethod(_from_dict_cm)  # type: ignore[attr-defined]
    dc.save = _save  # type: ignore[attr-defined]
    dc.load = classmethod(_load)  # type: ignore[attr-defined]
    return dc
