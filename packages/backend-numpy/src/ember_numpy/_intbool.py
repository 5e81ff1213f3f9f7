"""Int bitwise and Bool logical primitives of the numpy backend (numpy ufuncs; a Python int or
bool second operand keeps the array's dtype under NEP 50)."""

from __future__ import annotations

import numpy as np


class NumpyIntBoolOps:
    bitwise_and = staticmethod(np.bitwise_and)
    bitwise_or = staticmethod(np.bitwise_or)
    bitwise_xor = staticmethod(np.bitwise_xor)
    bitwise_not = staticmethod(np.invert)
    bitwise_left_shift = staticmethod(np.left_shift)
    bitwise_right_shift = staticmethod(np.right_shift)
    logical_and = staticmethod(np.logical_and)
    logical_or = staticmethod(np.logical_or)
    logical_xor = staticmethod(np.logical_xor)
    logical_not = staticmethod(np.logical_not)
