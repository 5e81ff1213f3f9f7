"""Int bitwise and Bool logical tensor ops, with the ``~ & | ^ << >>`` operators."""

from __future__ import annotations


class IntBoolTensorOps:
    __slots__ = ()
