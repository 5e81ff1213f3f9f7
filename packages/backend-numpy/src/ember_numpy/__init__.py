"""ember-backend-numpy: Ember's reference CPU backend on numpy.

Users select it with ``ember.backend("numpy")``; this package only needs to be installed.
"""

from ._backend import NumpyBackend

__all__ = ["NumpyBackend"]
