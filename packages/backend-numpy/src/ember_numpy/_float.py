"""Float primitives of the numpy backend.

numpy signals IEEE exceptions (``log(0)``, ``sqrt(-1)``, overflow in ``exp``) as RuntimeWarnings;
the results themselves follow IEEE 754 as torch's do, so every op that can raise one runs under
:func:`~._quiet.quiet` (numpy's error state set to "ignore" for the call) and no warning reaches
the user.

numpy has no ``erf``: :func:`erf` / :func:`erfc` implement W. J. Cody's rational Chebyshev
approximations ("Rational Chebyshev approximations for the error function", Math. Comp. 23,
1969; Netlib SPECFUN ``CALERF``), accurate to about 1e-16 relative in float64, vectorized.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._quiet import quiet, quiet1


def _quiet(ufunc: Any) -> Any:
    """A unary numpy function run with IEEE warnings silenced, as a static method."""
    return staticmethod(quiet1(ufunc))


# ---------------------------------------------------------------- Cody's erf / erfc
_A = (3.16112374387056560e00, 1.13864154151050156e02, 3.77485237685302021e02, 3.20937758913846947e03,
      1.85777706184603153e-1)
_B = (2.36012909523441209e01, 2.44024637934444173e02, 1.28261652607737228e03, 2.84423683343917062e03)
_C = (5.64188496988670089e-1, 8.88314979438837594e00, 6.61191906371416295e01, 2.98635138197400131e02,
      8.81952221241769090e02, 1.71204761263407058e03, 2.05107837782607147e03, 1.23033935479799725e03,
      2.15311535474403846e-8)
_D = (1.57449261107098347e01, 1.17693950891312499e02, 5.37181101862009858e02, 1.62138957456669019e03,
      3.29079923573345963e03, 4.36261909014324716e03, 3.43936767414372164e03, 1.23033935480374942e03)
_P = (3.05326634961232344e-1, 3.60344899949804439e-1, 1.25781726111229246e-1, 1.60837851487422766e-2,
      6.58749161529837803e-4, 1.63153871373020978e-2)
_Q = (2.56852019228982242e00, 1.87295284992346047e00, 5.27905102951428412e-1, 6.05183413124413191e-2,
      2.33520497626869185e-3)
_SQRPI = 5.6418958354775628695e-1  # 1 / sqrt(pi)
_THRESH = 0.46875


def _rational(t: np.ndarray, num_c: tuple[float, ...], den_c: tuple[float, ...]) -> np.ndarray:
    """Cody's ratio of polynomials in ``t``: numerator coefficients ``num_c`` (the last one is the
    leading term), monic denominator ``den_c``; evaluated in place (one temporary per polynomial)."""
    n = len(den_c) - 1
    num = t * num_c[-1]
    den = t.copy()
    for i in range(n):
        num += num_c[i]
        num *= t
        den += den_c[i]
        den *= t
    num += num_c[n]
    den += den_c[n]
    num /= den
    return num


def _erf_small(x: np.ndarray) -> np.ndarray:
    """erf(x) for |x| <= 0.46875."""
    r = _rational(x * x, _A, _B)
    r *= x
    return r


def _erfc_pos(y: np.ndarray) -> np.ndarray:
    """erfc(y) for y > 0.46875 (``inf`` gives 0)."""
    mid = y <= 4.0
    if mid.all():
        out = _rational(y, _C, _D)
    else:
        out = np.empty_like(y)
        if mid.any():
            out[mid] = _rational(y[mid], _C, _D)
        big = ~mid
        t = y[big]
        z = 1.0 / (t * t)
        r = _rational(z, _P, _Q)
        r *= z
        np.subtract(_SQRPI, r, out=r)
        r /= t
        out[big] = r
    # multiply by exp(-y^2) split as exp(-s^2) exp(-(y-s)(y+s)) with s = y rounded down to 1/16, so
    # that y^2 is not rounded before the exponential (Cody)
    s = np.trunc(y * 16.0)
    s *= 1.0 / 16.0
    d = y - s
    d *= y + s
    s *= s
    np.negative(s, out=s)
    np.negative(d, out=d)
    out *= np.exp(s, out=s)
    out *= np.exp(d, out=d)
    out[np.isinf(y)] = 0.0
    return out


def _as64(a: Any) -> tuple[np.ndarray, np.ndarray]:
    a = np.asarray(a)
    return a.astype(np.float64, copy=False).reshape(-1), a


@quiet
def _erf_or_erfc(a: Any, complement: bool) -> Any:
    x, orig = _as64(a)
    small = np.abs(x) <= _THRESH  # NaN goes to the large branch, where it propagates
    n_small = int(np.count_nonzero(small))
    if n_small == x.size:
        out = _erf_small(x)
        if complement:
            np.subtract(1.0, out, out=out)
    else:
        xl = x if n_small == 0 else x[~small]
        c = _erfc_pos(np.abs(xl))  # erfc(|x|)
        if complement:  # erfc(x) = 2 - erfc(-x) for x < 0
            c = np.where(xl < 0, 2.0 - c, c)
        else:  # erf(x) = sign(x) (1 - erfc(|x|))
            np.subtract(1.0, c, out=c)
            np.copysign(c, xl, out=c)
        if n_small == 0:
            out = c
        else:
            out = np.empty_like(x)
            e = _erf_small(x[small])
            out[small] = 1.0 - e if complement else e
            out[~small] = c
    return out.reshape(orig.shape).astype(orig.dtype, copy=False)


def erf(a: Any) -> Any:
    """The error function of a float array, computed in float64 and returned in ``a``'s dtype."""
    return _erf_or_erfc(a, False)


def erfc(a: Any) -> Any:
    """``1 - erf(a)`` without cancellation (accurate down to ``erfc(26) ~ 1e-296``), in ``a``'s dtype."""
    return _erf_or_erfc(a, True)


def _work(a: Any) -> np.ndarray:
    """``a`` as an array to compute in: float16 is widened to float32 (numpy's own float16 math
    is done that way too)."""
    a = np.asarray(a)
    return a.astype(np.float32) if a.dtype == np.float16 else a


class NumpyFloatOps:
    exp = _quiet(np.exp)
    log = _quiet(np.log)
    log1p = _quiet(np.log1p)
    sqrt = _quiet(np.sqrt)
    square = _quiet(np.square)
    recip = _quiet(np.reciprocal)
    sin = _quiet(np.sin)
    cos = _quiet(np.cos)
    tan = _quiet(np.tan)
    sinh = _quiet(np.sinh)
    cosh = _quiet(np.cosh)
    tanh = staticmethod(np.tanh)
    asin = _quiet(np.arcsin)
    acos = _quiet(np.arccos)
    atan = staticmethod(np.arctan)
    asinh = staticmethod(np.arcsinh)
    acosh = _quiet(np.arccosh)
    atanh = _quiet(np.arctanh)
    floor = staticmethod(np.floor)
    ceil = staticmethod(np.ceil)
    round = staticmethod(np.rint)  # half to even
    trunc = staticmethod(np.trunc)
    is_nan = staticmethod(np.isnan)
    is_inf = staticmethod(np.isinf)
    is_finite = staticmethod(np.isfinite)
    erf = staticmethod(erf)

    @staticmethod
    @quiet
    def atan2(a: Any, b: Any) -> Any:
        return np.arctan2(a, b).astype(a.dtype, copy=False)

    @staticmethod
    def contains_nan(a: Any) -> Any:
        return np.asarray(np.isnan(a).any()).reshape(1)

    @staticmethod
    @quiet
    def is_close(a: Any, b: Any, rtol: float, atol: float) -> Any:
        return np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=False)

    def var(self, a: Any, dim: int, correction: int) -> Any:
        return self.var_mean(a, dim, correction)[0]

    @staticmethod
    @quiet
    def var_mean(a: Any, dim: int, correction: int) -> tuple[Any, Any]:
        w = _work(a)
        n = w.shape[dim]
        mean = np.mean(w, axis=dim, keepdims=True) if n else np.full_like(w.sum(axis=dim, keepdims=True), np.nan)
        d = w - mean
        s = np.sum(d * d, axis=dim, keepdims=True)
        var = s / (n - correction) if n > correction else np.full_like(s, np.nan)
        return var.astype(a.dtype, copy=False), mean.astype(a.dtype, copy=False)

    @staticmethod
    @quiet
    def cross(a: Any, b: Any, dim: int) -> Any:
        return np.cross(a, b, axis=dim).astype(a.dtype, copy=False)
