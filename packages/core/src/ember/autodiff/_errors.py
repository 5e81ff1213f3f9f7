"""The autodiff error."""

from __future__ import annotations

from .._errors import EmberError

__all__ = ["AutodiffError"]


class AutodiffError(EmberError, RuntimeError):
    """A misuse of the autodiff graph: ``backward()`` on an untracked tensor, a second
    ``backward()`` through a graph that the first one consumed, ``require_grad`` on a tensor that
    cannot hold a gradient."""
