"""Deprecated alias of :mod:`ember.tensor.functional` (the functional module ops were renamed in 0.2 so that
"module" means :class:`ember.Module` only); it will be removed in the next release.

Importing it warns with a :class:`DeprecationWarning`; every name is the one of :mod:`ember.tensor.functional`.
"""

from __future__ import annotations

import warnings

from .functional import *  # noqa: F403 - the alias re-exports the whole module
from .functional import __all__  # noqa: F401

warnings.warn(
    "ember.tensor.module is deprecated: it was renamed ember.tensor.functional (import "
    "`from ember.tensor import functional as F`); the alias will be removed in the next release.",
    DeprecationWarning,
    stacklevel=2,
)

