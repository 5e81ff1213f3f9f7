"""A griffe extension: ``@ember.config.config`` classes get the ``__init__`` that the decorator synthesizes.

``@config`` is a ``typing.dataclass_transform`` (fields are the annotated class attributes, required first,
then defaults); griffe's static analysis recognises ``@dataclasses.dataclass`` only, so without this the
API reference would show configs without a signature and warn that every documented field "does not
appear in the function signature". Loaded from ``mkdocs.yml`` (``extensions:``).
"""

from __future__ import annotations

from typing import Any

import griffe

CONFIG_DECORATORS = {"ember.config.config", "ember.config._config.config"}


def _is_config(cls: griffe.Class) -> bool:
    return any(isinstance(d.value, griffe.Expr) and d.value.canonical_path in CONFIG_DECORATORS
               for d in cls.decorators)


def _fields(cls: griffe.Class) -> list[griffe.Parameter]:
    params = []
    for member in cls.members.values():
        # annotated names of the class body, with or without a default (griffe labels the ones without a
        # value "instance-attribute" only)
        if (isinstance(member, griffe.Attribute) and member.annotation is not None
                and "ClassVar" not in str(member.annotation)):
            params.append(griffe.Parameter(member.name, annotation=member.annotation,
                                           kind=griffe.ParameterKind.positional_or_keyword,
                                           default=member.value))
    return params


class ConfigInit(griffe.Extension):
    """Adds ``__init__(self, <fields>)`` to every ``@config`` class of the loaded packages."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        self._walk(pkg, set())

    def _walk(self, obj: griffe.Module | griffe.Class, seen: set[str]) -> None:
        if obj.path in seen:
            return
        seen.add(obj.path)
        for member in obj.members.values():
            if member.is_alias:
                continue
            if isinstance(member, griffe.Class):
                if _is_config(member) and "__init__" not in member.members:
                    self_param = griffe.Parameter("self", kind=griffe.ParameterKind.positional_or_keyword)
                    init = griffe.Function("__init__", lineno=member.lineno, endlineno=member.endlineno,
                                           parameters=griffe.Parameters(self_param, *_fields(member)),
                                           returns="None")
                    member.set_member("__init__", init)
                    member.labels.add("config")
                self._walk(member, seen)
            elif isinstance(member, griffe.Module):
                self._walk(member, seen)
