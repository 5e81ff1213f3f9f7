"""The guide's own error: a mistake in the command line or in what it names (exit status 2)."""

from __future__ import annotations

__all__ = ["UsageError"]


class UsageError(Exception):
    """A mistake the user can fix: a bad argument, a missing input, an artifact directory that holds something
    the command must not replace. ``python -m guide`` prints it as one line on stderr (what was wrong, what to do)
    and exits with status 2; ``--debug`` shows the traceback."""
