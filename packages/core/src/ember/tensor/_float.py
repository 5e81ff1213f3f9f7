"""Float tensor ops (Burn's ``Float`` API): exponentials, trigonometry, rounding, NaN tests,
closeness, statistics (``var``, ``cov``), ``cross`` and ``powf``.

Every op here needs a Float tensor and raises :class:`~ember.KindError` naming the op otherwise
(convert with ``.float()``). Results keep the tensor's float dtype and follow IEEE 754 as PyTorch
does: ``log(0) = -inf``, ``sqrt(-1) = NaN``, ``exp(1000) = inf``, ``asin(2) = NaN``; nothing warns.
"""

from __future__ import annotations

import math
from typing import Any

from .._errors import ShapeError
from .._kind import Bool, Float
from . import _core
from ._base import TensorBase
from ._core import FLOAT, binary, op_error, unary, wrap
from ._util import broadcast_shapes, check_same, norm_dim, require_kind

#: Burn's default relative tolerance of ``is_close`` / ``all_close``
DEFAULT_RTOL = 1e-5
#: Burn's default absolute tolerance of ``is_close`` / ``all_close``
DEFAULT_ATOL = 1e-8


def _doc(method: Any, text: str) -> Any:
    method.__doc__ = text
    return method


class FloatTensorOps(TensorBase):
    __slots__ = ()

    # ------------------------------------------------------------------ exponentials, powers
    exp = _doc(unary("exp", "exp", FLOAT), "``e^x`` element-wise (``inf`` on overflow).")
    log = _doc(unary("log", "log", FLOAT), "Natural log element-wise: ``-inf`` at 0, NaN below 0.")
    log1p = _doc(unary("log1p", "log1p", FLOAT), "``log(1 + x)``, accurate for small ``|x|``; ``-inf`` at -1.")
    sqrt = _doc(unary("sqrt", "sqrt", FLOAT), "Square root element-wise; NaN below 0.")
    square = _doc(unary("square", "square", FLOAT), "``x * x`` element-wise.")
    recip = _doc(unary("recip", "recip", FLOAT), "``1 / x`` element-wise (``±inf`` at ``±0``).")
    erf = _doc(
        unary("erf", "erf", FLOAT),
        "The Gauss error function ``erf(x) = 2/sqrt(pi) * integral_0^x exp(-t^2) dt`` element-wise.",
    )
    powf = _doc(
        binary("powf", "powf", FLOAT),
        """``x ** exponent`` element-wise; ``exponent`` is a Float tensor (broadcasting) or a float.

        Negative bases with non-integral exponents give NaN, ``0 ** -1 = inf`` (IEEE ``pow``).

        Raises:
            KindError: a tensor that is not Float, or an Int exponent tensor (use ``powi``).
            ShapeError: shapes that do not broadcast.
        """,
    )
    powf_scalar = powf

    # ------------------------------------------------------------------ trigonometry
    sin = _doc(unary("sin", "sin", FLOAT), "Sine (radians) element-wise; NaN at ``±inf``.")
    cos = _doc(unary("cos", "cos", FLOAT), "Cosine (radians) element-wise; NaN at ``±inf``.")
    tan = _doc(unary("tan", "tan", FLOAT), "Tangent (radians) element-wise; NaN at ``±inf``.")
    sinh = _doc(unary("sinh", "sinh", FLOAT), "Hyperbolic sine element-wise.")
    cosh = _doc(unary("cosh", "cosh", FLOAT), "Hyperbolic cosine element-wise.")
    tanh = _doc(unary("tanh", "tanh", FLOAT), "Hyperbolic tangent element-wise, in ``[-1, 1]``.")
    asin = _doc(unary("asin", "asin", FLOAT), "Inverse sine in ``[-pi/2, pi/2]``; NaN outside ``[-1, 1]``.")
    acos = _doc(unary("acos", "acos", FLOAT), "Inverse cosine in ``[0, pi]``; NaN outside ``[-1, 1]``.")
    atan = _doc(unary("atan", "atan", FLOAT), "Inverse tangent in ``[-pi/2, pi/2]``.")
    asinh = _doc(unary("asinh", "asinh", FLOAT), "Inverse hyperbolic sine.")
    acosh = _doc(unary("acosh", "acosh", FLOAT), "Inverse hyperbolic cosine; NaN below 1.")
    atanh = _doc(unary("atanh", "atanh", FLOAT), "Inverse hyperbolic tangent; ``±inf`` at ``±1``, NaN outside.")
    atan2 = _doc(
        binary("atan2", "atan2", FLOAT),
        """Element-wise angle of the point ``(x=other, y=self)`` in ``[-pi, pi]`` (C's and PyTorch's
        ``atan2(self, other)``); ``other`` is a Float tensor (broadcasting) or a float.

        Raises:
            KindError: a tensor that is not Float.
            ShapeError: shapes that do not broadcast.
        """,
    )

    def deg2rad(self) -> Any:
        """Degrees to radians: ``x * pi / 180`` (PyTorch's ``deg2rad``)."""
        require_kind("deg2rad", self, Float)
        return self._float_call("deg2rad", lambda ops, p: ops.mul(p, math.pi / 180.0))

    def rad2deg(self) -> Any:
        """Radians to degrees: ``x * 180 / pi`` (PyTorch's ``rad2deg``)."""
        require_kind("rad2deg", self, Float)
        return self._float_call("rad2deg", lambda ops, p: ops.mul(p, 180.0 / math.pi))

    # ------------------------------------------------------------------ rounding
    floor = _doc(unary("floor", "floor", FLOAT), "Largest integer value ``<= x``, as a float.")
    ceil = _doc(unary("ceil", "ceil", FLOAT), "Smallest integer value ``>= x``, as a float.")
    round = _doc(
        unary("round", "round", FLOAT),
        "Nearest integer value, halves to even (Burn, numpy, PyTorch): ``round(2.5) = 2``, ``round(-1.5) = -2``.",
    )
    trunc = _doc(unary("trunc", "trunc", FLOAT), "Integer part (rounds toward zero), as a float.")
    fmod = _doc(
        binary("fmod", "fmod", FLOAT),
        """C's ``fmod``: ``x - trunc(x / other) * other``, with the sign of ``x`` (Burn's and PyTorch's
        ``fmod``; compare ``remainder``, which takes the sign of the divisor). ``other`` is a Float
        tensor (broadcasting) or a float. ``fmod(x, 0)`` and ``fmod(±inf, y)`` are NaN,
        ``fmod(x, ±inf) = x`` for finite ``x``.

        Raises:
            KindError: a tensor that is not Float.
            ShapeError: shapes that do not broadcast.
        """,
    )
    fmod_scalar = fmod

    # ------------------------------------------------------------------ NaN / Inf tests
    is_nan = _doc(unary("is_nan", "is_nan", FLOAT, Bool), "Bool tensor: true where the element is NaN.")
    is_inf = _doc(unary("is_inf", "is_inf", FLOAT, Bool), "Bool tensor: true where the element is ``±inf``.")
    is_finite = _doc(
        unary("is_finite", "is_finite", FLOAT, Bool), "Bool tensor: true where the element is neither NaN nor infinite."
    )

    def contains_nan(self) -> Any:
        """Bool tensor of shape ``[1]``: whether any element is NaN (false when empty)."""
        require_kind("contains_nan", self, Float)
        return self._float_call("contains_nan", lambda ops, p: ops.contains_nan(p), Bool)

    def is_close(self, other: Any, rtol: float | None = None, atol: float | None = None) -> Any:
        """Bool tensor: ``|self - other| <= atol + rtol * |other|`` element-wise (Burn's ``is_close``).

        Infinities are close only to the same infinity; NaN is close to nothing. Shapes broadcast.

        Args:
            other: a Float tensor on the same device.
            rtol: relative tolerance, default ``1e-5`` (Burn's ``DEFAULT_RTOL``, PyTorch's too).
            atol: absolute tolerance, default ``1e-8`` (Burn's ``DEFAULT_ATOL``, PyTorch's too).

        Raises:
            KindError: either tensor is not Float.
            DeviceError: the tensors live on different devices.
            ShapeError: shapes that do not broadcast.
            ValueError: a negative tolerance.
        """
        require_kind("is_close", self, Float)
        o = self._float_other("is_close", other)
        r = DEFAULT_RTOL if rtol is None else float(rtol)
        a = DEFAULT_ATOL if atol is None else float(atol)
        if r < 0 or a < 0:
            raise ValueError(f"is_close: tolerances must be >= 0, got rtol={r} and atol={a}.")
        broadcast_shapes("is_close", self.shape, o.shape)
        return self._float_call("is_close", lambda ops, p: ops.is_close(p, o.primitive, r, a), Bool, o)

    def all_close(self, other: Any, rtol: float | None = None, atol: float | None = None) -> bool:
        """Whether every element is close to ``other`` (see :meth:`is_close`), as a Python bool.

        Raises:
            the errors of :meth:`is_close`.
        """
        return bool(self.is_close(other, rtol, atol).all().into_scalar())

    # ------------------------------------------------------------------ statistics
    def var(self, dim: int) -> Any:
        """Unbiased variance along ``dim`` (Bessel's correction: divides by ``n - 1``); the dim is
        kept with size 1 (Burn's ``var``). A dim of size 1 (or 0) gives NaN, as in PyTorch.

        Raises:
            KindError: not a Float tensor.
            IndexError: ``dim`` out of range.
        """
        return self._var("var", dim, 1)[0]

    def var_bias(self, dim: int) -> Any:
        """Biased (population) variance along ``dim``, dividing by ``n``; the dim is kept."""
        return self._var("var_bias", dim, 0)[0]

    def var_mean(self, dim: int) -> tuple[Any, Any]:
        """``(var(dim), mean_dim(dim))`` in one pass (Burn's ``var_mean``; both keep ``dim``)."""
        return self._var("var_mean", dim, 1)

    def var_mean_bias(self, dim: int) -> tuple[Any, Any]:
        """``(var_bias(dim), mean_dim(dim))`` (Burn's ``var_mean_bias``; both keep ``dim``)."""
        return self._var("var_mean_bias", dim, 0)

    def cov(self, dim: int, correction_factor: int = 1) -> Any:
        """Covariance matrix of a rank-2 tensor whose observations lie along ``dim`` (Burn's
        ``cov(dim, correction_factor)``).

        For ``[variables, observations]`` use ``dim=1`` (``numpy.cov(x, ddof=c)``, ``torch.cov``);
        for ``[observations, variables]`` use ``dim=0``. The result is ``[v, v]``, ``v`` the size of
        the other dim: ``sum_k (x_ik - mean_i)(x_jk - mean_j) / (n - correction_factor)``.
        ``correction_factor`` 1 (default) is the unbiased sample covariance, 0 the population one.
        ``n <= correction_factor`` gives NaN.

        Raises:
            KindError: not a Float tensor.
            ShapeError: the rank is not 2.
            IndexError: ``dim`` out of range.
            ValueError: a negative ``correction_factor``.
        """
        require_kind("cov", self, Float)
        if self.rank != 2:
            raise ShapeError(
                f"cov: expected a rank-2 tensor [variables, observations] (or [observations, variables] "
                f"with dim=0), got shape {list(self.shape)}; reshape it first."
            )
        d = norm_dim("cov", dim, 2)
        c = int(correction_factor)
        if c < 0:
            raise ValueError(f"cov: correction_factor must be >= 0, got {correction_factor}.")
        return self._float_call("cov", lambda ops, p: ops.cov(p, d, c))

    def cross(self, other: Any, dim: int) -> Any:
        """Cross product of 3-vectors along ``dim`` (Burn's ``cross``, ``torch.linalg.cross``).

        Both tensors have the same rank and size 3 along ``dim``; the other dims broadcast.

        Raises:
            KindError: either tensor is not Float.
            DeviceError: the tensors live on different devices.
            ShapeError: ranks differ, a size along ``dim`` is not 3, or shapes do not broadcast.
            IndexError: ``dim`` out of range.
        """
        require_kind("cross", self, Float)
        o = self._float_other("cross", other)
        sa, sb = self.shape, o.shape
        if len(sa) != len(sb):
            raise ShapeError(f"cross: ranks differ: shapes {list(sa)} and {list(sb)}; unsqueeze one operand.")
        d = norm_dim("cross", dim, len(sa))
        if sa[d] != 3 or sb[d] != 3:
            raise ShapeError(
                f"cross: both tensors need size 3 along dim {dim}, got shapes {list(sa)} and {list(sb)}."
            )
        broadcast_shapes("cross", sa, sb)
        return self._float_call("cross", lambda ops, p: ops.cross(p, o.primitive, d), Float, o)

    # ------------------------------------------------------------------ helpers
    def _var(self, op: str, dim: int, correction: int) -> tuple[Any, Any]:
        require_kind(op, self, Float)
        d = norm_dim(op, dim, self.rank)
        try:
            v, m = self.ops.var_mean(self.primitive, d, correction)
        except Exception as exc:
            raise op_error(op, exc, self) from exc
        return wrap(v, self, Float), wrap(m, self, Float)

    def _float_other(self, op: str, other: Any) -> Any:
        if type(other) is not _core.Tensor:
            raise TypeError(f"{op}: expected a Float tensor as other operand, got {type(other).__name__}.")
        if other.device is not self.device or other.kind is not Float:
            check_same(op, self, other)
        return other

    def _float_call(self, op: str, fn: Any, kind: Any = Float, *others: Any) -> Any:
        try:
            p = fn(self.ops, self.primitive)
        except Exception as exc:
            raise op_error(op, exc, self, *others) from exc
        return wrap(p, self, kind)
