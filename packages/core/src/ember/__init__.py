"""Ember: a deep-learning framework for Python on the design of Burn.

One tensor API over interchangeable backends (numpy, PyTorch, JAX), autodiff as a backend
decorator, modules as immutable parameter trees, configs, records and a training loop.

>>> import ember
>>> from ember import Tensor
>>> device = ember.backend("numpy").device()
>>> Tensor.from_data([[1.0, 2.0]], device).sum().into_scalar()
3.0
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    # At run time ``ember.backend`` is a callable module (``ember.backend("numpy")`` and
    # ``ember.backend.Backend`` both work); type checkers see the function.
    from .backend._registry import backend
else:
    from . import backend
from ._distribution import Distribution
from ._dtype import DType
from ._errors import (
    BackendError,
    CollectiveError,
    ConfigError,
    DeviceError,
    DTypeError,
    EmberError,
    KindError,
    RecordError,
    ShapeError,
)
from ._errors import (
    IndexError_ as IndexError,  # noqa: A004 - exported under the natural name
)
from ._install import install_command
from ._kind import Bool, Float, Int, Kind
from ._tensor_data import TensorData, Tolerance
from ._version import __version__
from .backend import Backend, Device, backends, device
from .config import config
from .module import Module, Param, ParamId, RunningState
from .tensor import Tensor

__all__ = [
    "Backend",
    "BackendError",
    "Bool",
    "CollectiveError",
    "ConfigError",
    "DType",
    "DTypeError",
    "Device",
    "DeviceError",
    "Distribution",
    "EmberError",
    "Float",
    "IndexError",
    "Int",
    "Kind",
    "KindError",
    "RecordError",
    "ShapeError",
    "Tensor",
    "TensorData",
    "Tolerance",
    "backend",
    "backends",
    "device",
    "install_command",
    "__version__",
    "Module",
    "Param",
    "ParamId",
    "RunningState",
    "config",
]
