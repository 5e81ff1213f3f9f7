"""Float tensor ops (Burn's ``Float`` API): exp, log, trigonometry, rounding, NaN tests,
statistics (var, median, cov) and ``powf``."""

from __future__ import annotations

from .._kind import Bool
from ._core import FLOAT, binary, unary


class FloatTensorOps:
    __slots__ = ()

    exp = unary("exp", "exp", FLOAT)
    log = unary("log", "log", FLOAT)
    sqrt = unary("sqrt", "sqrt", FLOAT)
    floor = unary("floor", "floor", FLOAT)
    powf = binary("powf", "powf", FLOAT)
    powf_scalar = powf
    is_nan = unary("is_nan", "is_nan", FLOAT, Bool)
