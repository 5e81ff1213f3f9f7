"""Backward rules of element-wise arithmetic, float math and activations.

Derivatives are the textbook ones (as in PyTorch's ``derivatives.yaml``); they are written with
inner-backend primitives so they run on every backend. ``g`` is the incoming gradient.
"""

from __future__ import annotations

import math
from typing import Any

from ._rules_util import as_float, unbroadcast, zeros_like
from ._table import binary, unary, zero

_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)

# ---------------------------------------------------------------------------- arithmetic


@binary("add", save="s", direct=True)
def _add(B: Any, g: Any, s: Any, ps: Any) -> Any:
    a, b = s[0], s[1]
    na, nb = ps[0] is not None, ps[1] is not None
    gs = B.shape(g)  # the common case, no broadcasting, needs no call to unbroadcast
    ga = (g if gs == a else unbroadcast(B, g, a)) if na else None
    if not nb:
        return ga, None
    if gs == b:
        return ga, g
    if len(gs) == len(b) + 1 and gs[1:] == b:  # a bias: unbroadcast's first case inlined (one frame less)
        return ga, B.reshape(B.sum_dim(g, 0), b)
    return ga, unbroadcast(B, g, b)


@binary("sub", save="s", direct=True)
def _sub(B: Any, g: Any, s: Any, ps: Any) -> Any:
    a, b = s[0], s[1]
    na, nb = ps[0] is not None, ps[1] is not None
    gs = B.shape(g)
    ga = (g if gs == a else unbroadcast(B, g, a)) if na else None
    gb = None
    if nb:
        gb = B.neg(g)
        gb = gb if gs == b else unbroadcast(B, gb, b)
    return ga, gb


@binary("mul", direct=True)
def _mul(B: Any, g: Any, s: Any, ps: Any) -> Any:
    a, b = s[0], s[1]
    ga = unbroadcast(B, B.mul(g, b), B.shape(a)) if ps[0] is not None else None
    gb = unbroadcast(B, B.mul(g, a), B.shape(b)) if ps[1] is not None else None
    return ga, gb


@binary("div", save="xy")
def _div(B: Any, g: Any, a: Any, b: Any, y: Any, na: bool, nb: bool) -> Any:
    gab = B.div(g, b)
    ga = unbroadcast(B, gab, B.shape(a)) if na else None
    gb = unbroadcast(B, B.neg(B.mul(gab, y)), B.shape(b)) if nb else None
    return ga, gb


@binary("remainder")
def _remainder(B: Any, g: Any, a: Any, b: Any, y: Any, na: bool, nb: bool) -> Any:
    # a % b = a - floor(a / b) * b
    ga = unbroadcast(B, g, B.shape(a)) if na else None
    gb = unbroadcast(B, B.neg(B.mul(g, B.floor(B.div(a, b)))), B.shape(b)) if nb else None
    return ga, gb


@binary("fmod")
def _fmod(B: Any, g: Any, a: Any, b: Any, y: Any, na: bool, nb: bool) -> Any:
    # fmod(a, b) = a - trunc(a / b) * b
    ga = unbroadcast(B, g, B.shape(a)) if na else None
    gb = unbroadcast(B, B.neg(B.mul(g, B.trunc(B.div(a, b)))), B.shape(b)) if nb else None
    return ga, gb


@binary("powf", save="xy")
def _powf(B: Any, g: Any, a: Any, b: Any, y: Any, na: bool, nb: bool) -> Any:
    ga = gb = None
    if na:
        if isinstance(b, (int, float)):
            # b a^(b-1); exactly 0 for b == 0 (also at a == 0)
            d = B.mul(B.powf(a, b - 1.0), b) if b != 0 else zeros_like(B, a)
        else:
            d = B.mul(B.powf(a, B.sub(b, 1.0)), b)
        ga = unbroadcast(B, B.mul(g, d), B.shape(a))
    if nb:
        # d(a^b)/db = a^b log(a); taken as 0 where a == 0 (PyTorch) so 0^b does not give NaN
        la = B.log(B.mask_fill(a, B.equal(a, 0.0), 1.0))
        gb = unbroadcast(B, B.mul(B.mul(g, y), la), B.shape(b))
    return ga, gb


@binary("powi")
def _powi(B: Any, g: Any, a: Any, b: Any, y: Any, na: bool, nb: bool) -> Any:
    # the exponent is an Int primitive or a Python int: a constant
    if isinstance(b, int):
        if b == 0:
            return zeros_like(B, a), None
        d = B.mul(B.powi(a, b - 1), float(b))
    else:
        d = B.mul(B.powi(a, B.sub(b, 1)), as_float(B, b, a))
    return unbroadcast(B, B.mul(g, d), B.shape(a)), None


@binary("maximum")
def _maximum(B: Any, g: Any, a: Any, b: Any, y: Any, na: bool, nb: bool) -> Any:
    # ties send the gradient to ``a`` (Burn's max_pair through mask_where)
    return _pick(B, g, a, b, na, nb, B.lower(a, b))


@binary("minimum")
def _minimum(B: Any, g: Any, a: Any, b: Any, y: Any, na: bool, nb: bool) -> Any:
    return _pick(B, g, a, b, na, nb, B.greater(a, b))


def _pick(B: Any, g: Any, a: Any, b: Any, na: bool, nb: bool, b_wins: Any) -> Any:
    ga = unbroadcast(B, B.mask_fill(g, b_wins, 0.0), B.shape(a)) if na else None
    gb = unbroadcast(B, B.mask_fill(g, B.logical_not(b_wins), 0.0), B.shape(b)) if nb else None
    return ga, gb


@binary("atan2")
def _atan2(B: Any, g: Any, a: Any, b: Any, y: Any, na: bool, nb: bool) -> Any:
    # atan2(a, b): d/da = b / (a^2 + b^2), d/db = -a / (a^2 + b^2)
    den = B.add(B.mul(a, a), B.mul(b, b)) if not isinstance(b, (int, float)) else B.add(B.mul(a, a), b * b)
    gd = B.div(g, den)
    ga = unbroadcast(B, B.mul(gd, b), B.shape(a)) if na else None
    gb = unbroadcast(B, B.neg(B.mul(gd, a)), B.shape(b)) if nb else None
    return ga, gb


@binary("matmul", direct=True)
def _matmul(B: Any, g: Any, s: Any, ps: Any) -> Any:
    a, b = s[0], s[1]
    na, nb = ps[0] is not None, ps[1] is not None
    ga = gb = None
    shape = B.shape
    sa, sb = shape(a), shape(b)
    if len(sa) == 2 and len(sb) == 2:  # no batch dims: nothing broadcast, the gradients have the shapes
        return (B.matmul(g, B.permute(b, (1, 0))) if na else None,
                B.matmul(B.permute(a, (1, 0)), g) if nb else None)
    if na:
        r = len(sb)
        ga = B.matmul(g, B.permute(b, (1, 0) if r == 2 else tuple(range(r - 2)) + (r - 1, r - 2)))
        if shape(ga) != sa:  # batch dims broadcast
            ga = unbroadcast(B, ga, sa)
    if nb:
        r = len(sa)
        gb = B.matmul(B.permute(a, (1, 0) if r == 2 else tuple(range(r - 2)) + (r - 1, r - 2)), g)
        if shape(gb) != sb:
            gb = unbroadcast(B, gb, sb)
    return ga, gb


@unary("neg", direct=True)
def _neg(B: Any, g: Any, s: Any, ps: Any) -> Any:
    return (B.neg(g),)


@unary("abs", save="x")
def _abs(B: Any, g: Any, x: Any, y: Any, args: Any) -> Any:
    return B.mul(g, B.sign(x))


@unary("clamp", save="x")
def _clamp(B: Any, g: Any, x: Any, y: Any, args: Any) -> Any:
    # the gradient passes where lo <= x <= hi (inclusive, PyTorch)
    lo, hi = args
    if lo is not None:
        g = B.mask_fill(g, B.lower(x, lo), 0.0)
    if hi is not None:
        g = B.mask_fill(g, B.greater(x, hi), 0.0)
    return g


zero("sign", "floor", "ceil", "round", "trunc")

# ---------------------------------------------------------------------------- float math


@unary("exp", save="y")
def _exp(B: Any, g: Any, x: Any, y: Any, args: Any) -> Any:
    return B.mul(g, y)


@unary("log", save="x")
def _log(B: Any, g: Any, x: Any, y: Any, args: Any) -> Any:
    return B.div(g, x)


@unary("log1p", save="x")
def _log1p(B: Any, g: Any, x: Any, y: Any, args: Any) -> Any:
    return B.div(g, B.add(x, 1.0))


@unary("sqrt", save="y")
def _sqrt(B: Any, g: Any, x: Any, y: Any, args: Any) -> Any:
    return B.div(B.mul(g, 0.5), y)


@unary("square", save="x")
def _square(B: Any, g: Any, x: Any, y: Any, args: Any) -> Any:
    return B.mul(B.mul(g, x), 2.0)


@unary("recip", save="y")
def _recip(B: Any, g: Any, x: Any, y: Any, args: Any) -> Any:
    return B.neg(B.mul(g, B.mul(y, y)))


@unary("sin", save="x")
def _sin(B: Any, g: Any, x: Any, y: Any, args: Any) -> Any:
    return B.mul(g, B.cos(x))


@unary("cos", save="x")
def _cos(B: Any, g: Any, x: Any, y: Any, args: Any) -> Any:
    return B.neg(B.mul(g, B.sin(x)))


@unary("tan", save="y")
def _tan(B: Any, g: Any, x: Any, y: Any, args: Any) -> Any:
    return B.mul(g, B.add(B.mul(y, y), 1.0))


@unary("sinh", save="x")
def _sinh(B: Any, g: Any, x: Any, y: Any, args: Any) -> Any:
    return B.mul(g, B.cosh(x))


@unary("cosh", save="x")
def _cosh(B: Any, g: Any, x: Any, y: Any, args: Any) -> Any:
    return B.mul(g, B.sinh(x))


@unary("tanh", save="y")
def _tanh(B: Any, g: Any, x: Any, y: Any, args: Any) -> Any:
    return B.tanh_backward(g, y)


@unary("asin", save="x")
def _asin(B: Any, g: Any, x: Any, y: Any, args: Any) -> Any:
    return B.div(g, B.sqrt(B.neg(B.sub(B.mul(x, x), 1.0))))


@unary("acos", save="x")
def _acos(B: Any, g: Any, x: Any, y: Any, args: Any) -> Any:
    return B.neg(B.div(g, B.sqrt(B.neg(B.sub(B.mul(x, x), 1.0)))))


@unary("atan", save="x")
def _atan(B: Any, g: Any, x: Any, y: Any, args: Any) -> Any:
    return B.div(g, B.add(B.mul(x, x), 1.0))


@unary("asinh", save="x")
def _asinh(B: Any, g: Any, x: Any, y: Any, args: Any) -> Any:
    return B.div(g, B.sqrt(B.add(B.mul(x, x), 1.0)))


@unary("acosh", save="x")
def _acosh(B: Any, g: Any, x: Any, y: Any, args: Any) -> Any:
    return B.div(g, B.sqrt(B.sub(B.mul(x, x), 1.0)))


@unary("atanh", save="x")
def _atanh(B: Any, g: Any, x: Any, y: Any, args: Any) -> Any:
    return B.div(g, B.neg(B.sub(B.mul(x, x), 1.0)))


@unary("erf", save="x")
def _erf(B: Any, g: Any, x: Any, y: Any, args: Any) -> Any:
    # d erf(x)/dx = 2/sqrt(pi) exp(-x^2)
    return B.mul(g, B.mul(B.exp(B.neg(B.mul(x, x))), _TWO_OVER_SQRT_PI))


# ---------------------------------------------------------------------------- activations


@unary("relu", save="y", direct=True)
def _relu(B: Any, g: Any, s: Any, ps: Any) -> Any:
    return (B.relu_backward(g, s[1]),)


@unary("sigmoid", save="y")
def _sigmoid(B: Any, g: Any, x: Any, y: Any, args: Any) -> Any:
    return B.sigmoid_backward(g, y)


@unary("log_sigmoid", save="x")
def _log_sigmoid(B: Any, g: Any, x: Any, y: Any, args: Any) -> Any:
    # d log(sigmoid(x)) / dx = 1 - sigmoid(x) = sigmoid(-x)
    return B.mul(g, B.sigmoid(B.neg(x)))


@unary("gelu", save="x")
def _gelu(B: Any, g: Any, x: Any, y: Any, args: Any) -> Any:
    return B.gelu_backward(g, x, bool(args[0]) if args else False)


@unary("softmax", save="y")
def _softmax(B: Any, g: Any, x: Any, y: Any, args: Any) -> Any:
    return B.softmax_backward(g, y, args[0])


@unary("log_softmax", save="y", direct=True)
def _log_softmax(B: Any, g: Any, s: Any, ps: Any) -> Any:
    return (B.log_softmax_backward(g, s[1], s[2][0]),)
