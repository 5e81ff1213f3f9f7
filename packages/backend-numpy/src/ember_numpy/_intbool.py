"""Int bitwise and Bool logical primitives of the numpy backend."""

from __future__ import annotations


class NumpyIntBoolOps:
    pass
