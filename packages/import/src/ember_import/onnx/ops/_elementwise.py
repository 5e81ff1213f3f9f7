"""Element-wise arithmetic and math (ONNX operator specification, onnx/docs/Operators.md and its changelog).

Binary: ``Add``, ``Sub``, ``Mul``, ``Div`` (1, 6, 7, 13, 14), ``Pow`` (1, 7, 12, 13, 15), ``Mod`` (10, 13, 28);
variadic: ``Max``, ``Min``, ``Sum``, ``Mean`` (1, 6, 8, 12, 13). Unary: ``Abs``, ``Neg``, ``Sign``,
``Reciprocal``, ``Ceil``, ``Floor``, ``Round``, ``Exp``, ``Log``, ``Sqrt``, ``Erf``, the trigonometric and
hyperbolic functions, ``IsNaN``, ``IsInf``.

Numpy broadcasting from opset 7 (the legacy ``broadcast``/``axis`` attributes before). Integer ``Div``
truncates toward zero (C semantics; Ember's Int ``div`` floors, so the quotient is corrected); integer ``Mod``
takes the divisor's sign with ``fmod=0`` (Python's ``%``) and the dividend's with ``fmod=1`` (C's ``fmod``).
Outputs keep the element type of the first input (``Pow``: the base's).
"""

from __future__ import annotations

from collections.abc import Callable

from ember import DType, Tensor

from .._context import Context
from .._ir import Node
from .._registry import converter
from ._elementwise_util import (
    is_float,
    is_int,
    is_unsigned,
    legacy_broadcast,
    register_binary,
    register_unary,
    to_dtype,
)
from ._late import late

__all__ = ["trunc_div"]


def trunc_div(a: Tensor, b: Tensor) -> Tensor:
    """Integer division rounding toward zero (ONNX ``Div`` on integers, C's ``/``).

    Ember's Int ``div`` floors; the floored quotient is one less than the truncated one exactly when the
    remainder is non-zero and the operands have opposite signs.
    """
    q = a.div(b)
    if is_unsigned(a):
        return q
    r = a - q * b
    fix = r.not_equal(0).bool_and(a.lower(0).bool_xor(b.lower(0)))
    return q.mask_where(fix, q + 1)


register_binary("Add", late(Tensor, "add"), "1, 6, 7, 13, 14")
register_binary("Sub", late(Tensor, "sub"), "1, 6, 7, 13, 14")
register_binary("Mul", late(Tensor, "mul"), "1, 6, 7, 13, 14")
register_binary("Div", lambda a, b: trunc_div(a, b) if is_int(a) else a.div(b), "1, 6, 7, 13, 14; integers truncate")


@converter("Pow", since=1)
def pow_(ctx: Context, node: Node, x: Tensor, y: Tensor) -> Tensor:
    """ONNX ``Pow`` (1, 7, 12, 13, 15): ``x ** y`` in the base's element type.

    Float base: the exponent is converted to the base's type (``powf``; IEEE ``pow``). Int base with an Int
    exponent: exact integer power (``powi``). Int base with a float exponent: computed in float64 and truncated
    to the base's type (the ONNX reference: ``np.power(x, y).astype(x.dtype)``).
    """
    x, y = legacy_broadcast(ctx, node, x, y)
    if is_float(x):
        return x.powf(to_dtype(y, x.dtype))
    if is_int(y):
        return x.powi(y)
    wide = to_dtype(x, DType.FLOAT64).powf(to_dtype(y, DType.FLOAT64))
    return to_dtype(wide, x.dtype)


@converter("Mod", since=10)
def mod(ctx: Context, node: Node, a: Tensor, b: Tensor) -> Tensor:
    """ONNX ``Mod`` (10, 13, 28): ``fmod=0`` takes the divisor's sign (Python's ``%``, ``np.mod``),
    ``fmod=1`` the dividend's (C's ``fmod``, ``np.fmod``)."""
    if not node.attr("fmod", 0):
        return a.remainder(b)
    if is_float(a):
        return a.fmod(b)
    return a - trunc_div(a, b) * b


def _variadic(op: str, pair: Callable[[Tensor, Tensor], Tensor], mean: bool = False) -> None:
    def convert(ctx: Context, node: Node, *xs: Tensor) -> Tensor:
        out = xs[0]
        for x in xs[1:]:
            out = pair(out, x)
        return out.div(float(len(xs))) if mean and len(xs) > 1 else out

    convert.__name__ = op.lower()
    convert.__doc__ = f"ONNX ``{op}`` (1, 6, 8, 12, 13): any number of inputs (numpy broadcasting from 8)."
    converter(op, since=1)(convert)


_variadic("Max", late(Tensor, "max_pair"))
_variadic("Min", late(Tensor, "min_pair"))
_variadic("Sum", late(Tensor, "add"))
_variadic("Mean", late(Tensor, "add"), mean=True)


register_unary("Neg", late(Tensor, "neg"), "1, 6, 13: signed integers and floats")
register_unary("Abs", late(Tensor, "abs"), "1, 6, 13")
register_unary("Sign", late(Tensor, "sign"), "9, 13", since=9)
register_unary("Reciprocal", late(Tensor, "recip"), "1, 6, 13")
register_unary("Ceil", late(Tensor, "ceil"), "1, 6, 13")
register_unary("Floor", late(Tensor, "floor"), "1, 6, 13")
register_unary("Round", late(Tensor, "round"), "11, 22: halves to even", since=11)
register_unary("Exp", late(Tensor, "exp"), "1, 6, 13")
register_unary("Log", late(Tensor, "log"), "1, 6, 13")
register_unary("Sqrt", late(Tensor, "sqrt"), "1, 6, 13")
register_unary("Erf", late(Tensor, "erf"), "9, 13", since=9)
register_unary("IsNaN", late(Tensor, "is_nan"), "9, 13, 20", since=9)
for _name in ("Sin", "Cos", "Tan", "Asin", "Acos", "Atan"):
    register_unary(_name, late(Tensor, _name.lower()), "7, 22", since=7)
for _name in ("Sinh", "Cosh", "Asinh", "Acosh", "Atanh"):
    register_unary(_name, late(Tensor, _name.lower()), "9, 22", since=9)
register_unary("Tanh", late(Tensor, "tanh"), "1, 6, 13")


@converter("IsInf", since=10)
def is_inf(ctx: Context, node: Node, x: Tensor) -> Tensor:
    """ONNX ``IsInf`` (10, 20): true at ``+inf`` with ``detect_positive`` and at ``-inf`` with
    ``detect_negative`` (both default 1)."""
    pos, neg = node.attr("detect_positive", 1), node.attr("detect_negative", 1)
    out = x.is_inf()
    if pos and neg:
        return out
    if not pos and not neg:
        return out.bool_and(out.bool_not())
    return out.bool_and(x.greater(0.0) if pos else x.lower(0.0))
