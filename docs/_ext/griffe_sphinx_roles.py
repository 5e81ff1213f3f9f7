"""A griffe extension: Sphinx roles in docstrings become Markdown inline code.

The docstrings are written with Sphinx roles (``:class:`Linear```, ``:func:`~a.b.f```), which Markdown would
show literally; each becomes inline code of the name as Sphinx displays it (``~`` keeps the last part).
Loaded from ``mkdocs.yml`` (``extensions:``).
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:py:)?(?:class|func|meth|attr|mod|data|exc|obj|const):`(~?)([^`]+)`")


def _role_as_code(match: re.Match[str]) -> str:
    target = match.group(2)
    shown = target.rsplit(".", 1)[-1] if match.group(1) else target  # ``~a.b.C`` shows ``C``, as Sphinx
    return f"`{shown}`"


class SphinxRoles(griffe.Extension):
    """Rewrites Sphinx roles in every docstring as Markdown inline code before it is parsed."""

    def on_object(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        _rewrite(obj)

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        _rewrite(pkg)  # a package's own docstring: on_object does not see the root


def _rewrite(obj: griffe.Object) -> None:
    if obj.docstring is not None and ":`" in obj.docstring.value:
        obj.docstring.value = _ROLE.sub(_role_as_code, obj.docstring.value)
