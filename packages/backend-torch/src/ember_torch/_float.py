"""Float primitives of the torch backend: transcendental functions, rounding, NaN/Inf tests,
statistics (contract: :mod:`ember.backend._ops_float`).

The element-wise ones are torch's kernels (float16 and bfloat16 included), which follow IEEE 754
silently as the contract asks. ``cov`` keeps the contract's matmul-based default.
"""

from __future__ import annotations

import math
from typing import Any

import torch


class TorchFloatOps:
    exp = staticmethod(torch.exp)
    log = staticmethod(torch.log)
    log1p = staticmethod(torch.log1p)
    sqrt = staticmethod(torch.sqrt)
    square = staticmethod(torch.square)
    recip = staticmethod(torch.reciprocal)
    sin = staticmethod(torch.sin)
    cos = staticmethod(torch.cos)
    tan = staticmethod(torch.tan)
    sinh = staticmethod(torch.sinh)
    cosh = staticmethod(torch.cosh)
    tanh = staticmethod(torch.tanh)
    asin = staticmethod(torch.asin)
    acos = staticmethod(torch.acos)
    atan = staticmethod(torch.atan)
    asinh = staticmethod(torch.asinh)
    acosh = staticmethod(torch.acosh)
    atanh = staticmethod(torch.atanh)
    erf = staticmethod(torch.erf)
    floor = staticmethod(torch.floor)
    ceil = staticmethod(torch.ceil)
    round = staticmethod(torch.round)  # half to even
    trunc = staticmethod(torch.trunc)
    is_nan = staticmethod(torch.isnan)
    is_inf = staticmethod(torch.isinf)
    is_finite = staticmethod(torch.isfinite)

    @staticmethod
    def contains_nan(a: Any) -> Any:
        return torch.any(torch.isnan(a)).view(1)

    @staticmethod
    def is_close(a: Any, b: Any, rtol: float, atol: float) -> Any:
        # torch.isclose is the contract's rule: |a - b| <= atol + rtol * |b| for finite values,
        # equal infinities are close, NaN never is (equal_nan=False)
        return torch.isclose(a, b, rtol=rtol, atol=atol, equal_nan=False)

    def var(self, a: Any, dim: int, correction: int) -> Any:
        return self.var_mean(a, dim, correction)[0]

    @staticmethod
    def var_mean(a: Any, dim: int, correction: int) -> tuple[Any, Any]:
        if a.shape[dim] > correction and a.numel():
            v, m = torch.var_mean(a, dim, correction=correction, keepdim=True)
            return v, m
        # n <= correction: NaN, as the contract; an empty input gives an empty result (torch would
        # warn about the degrees of freedom in both cases)
        m = torch.mean(a, dim, keepdim=True)
        return torch.full_like(m, math.nan), m

    @staticmethod
    def cross(a: Any, b: Any, dim: int) -> Any:
        return torch.linalg.cross(a, b, dim=dim)  # other dims broadcast

    @staticmethod
    def atan2(a: Any, b: Any) -> Any:
        if not isinstance(b, torch.Tensor):  # torch.atan2 takes tensors only (a captured one is a subclass)
            b = torch.tensor(b, dtype=a.dtype, device=a.device)
        return torch.atan2(a, b)
