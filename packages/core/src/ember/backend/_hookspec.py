"""The pluggy hook specification backends implement.

A backend distribution declares, in its ``pyproject.toml``::

    [project.entry-points.ember]
    numpy = "ember_numpy.plugin"

and the module ``ember_numpy.plugin`` implements :func:`ember_backends` with ``@hookimpl``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from ._base import Backend

__all__ = ["hookspec", "hookimpl", "BackendSpec", "EmberSpec"]

hookspec = pluggy.HookspecMarker("ember")
"""pluggy's marker of the hook specifications of the ``ember`` project (for plugin authors)."""
hookimpl = pluggy.HookimplMarker("ember")
"""pluggy's marker of a hook implementation: decorate a backend plugin's ``ember_backends``."""


@dataclass(frozen=True)
class BackendSpec:
    """What a plugin declares about one backend.

    Attributes:
        name: the name users pass to ``ember.backend(name)``.
        load: a callable returning the ``Backend`` subclass; it imports the array library, so it
            runs only when the backend is first used (``import ember`` stays light).
        description: one line for ``ember backends``.
        libraries: the distributions of the array library the backend runs on (``("torch",)``,
            ``("jax", "jaxlib")``), whose versions ``ember backends`` lists from their installed metadata
            (:func:`importlib.metadata.version`, without importing them); one that is not installed marks the
            backend broken before it is loaded.
    """

    name: str
    load: Callable[[], type[Backend]]
    description: str = ""
    libraries: tuple[str, ...] = ()
    distribution: str = field(default="", compare=False)
    version: str = field(default="", compare=False)


class EmberSpec:
    """Hook specifications of the ``ember`` plugin group."""

    @hookspec
    def ember_backends(self) -> list[BackendSpec]:  # type: ignore[empty-body]
        """Return the backends this plugin provides."""
