"""Ember's error hierarchy.

Every error Ember raises on purpose derives from :class:`EmberError`. Messages say what
was expected, what was found, and what to do.
"""

from __future__ import annotations

__all__ = [
    "EmberError",
    "ShapeError",
    "DTypeError",
    "KindError",
    "DeviceError",
    "BackendError",
    "IndexError_",
    "RecordError",
    "ConfigError",
    "CollectiveError",
]


class EmberError(Exception):
    """Base class of every error raised by Ember."""


class ShapeError(EmberError, ValueError):
    """Shapes or ranks of tensors do not fit the operation (names the op and the shapes)."""


class DTypeError(EmberError, TypeError):
    """An element type is not supported by the operation or the backend."""


class KindError(EmberError, TypeError):
    """A tensor of the wrong kind (Float, Int, Bool) was given to an operation."""


class DeviceError(EmberError, ValueError):
    """Tensors on different devices or backends were mixed in one operation."""


class BackendError(EmberError, RuntimeError):
    """A backend could not be found, loaded or configured."""


class IndexError_(EmberError, IndexError):
    """A dimension or index is out of range (exported as ``ember.IndexError``)."""


class RecordError(EmberError, ValueError):
    """A record or record file is malformed, truncated, of the wrong format, or does not fit."""


class ConfigError(EmberError, ValueError):
    """A config has a missing, unknown or wrongly typed field."""


class CollectiveError(EmberError, RuntimeError):
    """A collective op (``ember.distributed``) cannot run: no process group, a backend without
    collectives, a bad argument (op, source rank), or the engine (gloo, nccl, jax) failed or timed out."""
