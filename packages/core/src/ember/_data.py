"""Deprecated alias of ``ember._tensor_data`` (renamed in 0.2 so that it is not mistaken for :mod:`ember.data`, the
datasets); it will be removed in the next release. Use the public :class:`ember.TensorData` and
:class:`ember.Tolerance`.

Importing it warns with a :class:`DeprecationWarning`.
"""

from __future__ import annotations

import warnings

from ._tensor_data import *  # noqa: F403 - the alias re-exports the whole module
from ._tensor_data import __all__  # noqa: F401

warnings.warn(
    "ember._data is deprecated: it was renamed ember._tensor_data; use the public ember.TensorData and "
    "ember.Tolerance. The alias will be removed in the next release.",
    DeprecationWarning,
    stacklevel=2,
)
