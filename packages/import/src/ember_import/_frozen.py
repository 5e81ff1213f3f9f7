"""``Frozen``: a base for objects a hostile pickle can reach but must not modify.

The pickle ``BUILD`` opcode sets attributes on the object below it on the stack (``setattr`` for "slot
state"). Without protection a file could, after its tensor declarations were checked, rewrite a view's shape
or a storage's size (reading out of bounds later), or rewrite the shared storage-type markers and poison every
later load in the process. Objects deriving from :class:`Frozen` refuse ``setattr`` from outside; Ember's own
code sets fields with :func:`object.__setattr__`.
"""

from __future__ import annotations

from typing import Any

from ._errors import ModelImportError

__all__ = ["Frozen"]


class Frozen:
    """Refuses attribute assignment (``obj.x = v``, pickle ``BUILD``) with :class:`ModelImportError`."""

    __slots__ = ()

    def __setattr__(self, name: str, value: Any) -> None:
        raise ModelImportError(
            f"the pickle tries to set the attribute {name!r} of {type(self).__name__}; a state_dict never does. "
            "Refusing the file."
        )

    def __delattr__(self, name: str) -> None:
        raise ModelImportError(f"the pickle tries to delete the attribute {name!r} of {type(self).__name__}.")
