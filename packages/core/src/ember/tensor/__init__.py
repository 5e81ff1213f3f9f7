"""The tensor API."""

from . import _core
from ._tensor import Tensor

_core.Tensor = Tensor

from . import activation  # noqa: E402  (needs Tensor bound in _core)

__all__ = ["Tensor", "activation"]
