"""``ModelImportError``: every problem found while importing a model file."""

from __future__ import annotations

from ember import RecordError

__all__ = ["ModelImportError"]


class ModelImportError(RecordError):
    """A model file could not be imported: unreadable, malformed, unsupported or unsafe.

    Raised before any side effect: a pickle that names a global outside the allow-list (``os.system``,
    ``builtins.eval``, ...), a storage view past the end of its buffer, a zip entry with ``..`` or an
    absolute path, a size that would allocate absurd amounts of memory, a missing top-level key, a key
    collision after remapping. The message names the file, the offending item and what to do.
    Derives from :class:`ember.RecordError` (and ``ValueError``).
    """
