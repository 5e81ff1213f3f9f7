"""Checks of a model's values that only reject bad input, marked so that ModelGen does not count them as branches.

A converter compares the values it reads from an input (an axis, ``k``, a size) to reject a bad model with a
clear message. At run time (``load_model``) such a check is an ordinary ``if``. When ModelGen traces the
converter, those values are known only when the generated code runs, and a comparison of them normally refuses
the node (the generated code would take one branch for every input). A comparison made inside
:func:`validating` is only a check: the generated code takes the branch of a valid input, and the Tensor-API
call that the value reaches checks it again when the generated code runs (``narrow``, ``squeeze_dims`` ... raise
on a bad value).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

__all__ = ["is_validating", "validating"]

_local = threading.local()


@contextlib.contextmanager
def validating() -> Iterator[None]:
    """Mark the comparisons made in the block as checks that only reject bad input (see the module docstring)."""
    _local.depth = getattr(_local, "depth", 0) + 1
    try:
        yield
    finally:
        _local.depth -= 1


def is_validating() -> bool:
    """Whether a :func:`validating` block is active on this thread."""
    return bool(getattr(_local, "depth", 0))
