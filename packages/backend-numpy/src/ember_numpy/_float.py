"""Float primitives of the numpy backend."""

from __future__ import annotations

import numpy as np


class NumpyFloatOps:
    exp = staticmethod(np.exp)
    log = staticmethod(np.log)
    sqrt = staticmethod(np.sqrt)
    floor = staticmethod(np.floor)
