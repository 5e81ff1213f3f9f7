"""ember-backend-jax: Ember's backend on ``jax.Array`` (any jax device: cpu, gpu, tpu).

Users select it with ``ember.backend("jax")``; this package only needs to be installed. The
plugin registry imports this package to discover the entry point, so jax is imported lazily:
only when the backend is first used (or ``ember_jax.JaxBackend`` is accessed).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._backend import JaxBackend

__all__ = ["JaxBackend"]


def __getattr__(name: str) -> Any:
    if name == "JaxBackend":
        from ._backend import JaxBackend

        return JaxBackend
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
