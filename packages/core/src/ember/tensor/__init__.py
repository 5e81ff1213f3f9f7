"""The tensor API."""

from . import _core
from ._tensor import Tensor

_core.Tensor = Tensor

__all__ = ["Tensor"]
