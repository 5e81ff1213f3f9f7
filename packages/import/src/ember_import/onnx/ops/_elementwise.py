"""Element-wise arithmetic and math: ``Add``, ``Sub``, ``Mul``, ``Div``, ``Neg`` (every opset: the legacy
``broadcast``/``axis`` attributes of opsets 1-6 included) and the unary float functions.

Semantics follow the ONNX operator specification (onnx/docs/Operators.md): numpy broadcasting from opset 7,
integer ``Div`` truncates toward zero (C semantics; Ember's Int ``div`` floors, so the quotient is corrected),
and every output keeps the element type of its inputs.
"""

from __future__ import annotations

from ember import Tensor
from ember.tensor import activation

from .._context import Context
from .._ir import Node
from .._registry import converter
from ._elementwise_util import is_float, is_int, legacy_broadcast

__all__: list[str] = []


def trunc_div(a: Tensor, b: Tensor) -> Tensor:
    """Integer division rounding toward zero (ONNX ``Div`` on integers, C's ``/``).

    Ember's Int ``div`` floors; the floored quotient is one less than the truncated one exactly when the
    remainder is non-zero and the operands have opposite signs.
    """
    q = a.div(b)
    if a.dtype.name.startswith("UINT"):
        return q
    r = a - q * b
    fix = r.not_equal(0).bool_and(a.lower(0).bool_xor(b.lower(0)))
    return q.mask_where(fix, q + 1)


@converter("Add", since=1)
def add(ctx: Context, node: Node, a: Tensor, b: Tensor) -> Tensor:
    """ONNX ``Add`` (1, 6, 7, 13, 14): ``a + b`` with numpy broadcasting (legacy ``broadcast``/``axis``
    before 7)."""
    a, b = legacy_broadcast(ctx, node, a, b)
    return a + b


@converter("Sub", since=1)
def sub(ctx: Context, node: Node, a: Tensor, b: Tensor) -> Tensor:
    """ONNX ``Sub`` (1, 6, 7, 13, 14): ``a - b`` with numpy broadcasting."""
    a, b = legacy_broadcast(ctx, node, a, b)
    return a - b


@converter("Mul", since=1)
def mul(ctx: Context, node: Node, a: Tensor, b: Tensor) -> Tensor:
    """ONNX ``Mul`` (1, 6, 7, 13, 14): ``a * b`` with numpy broadcasting."""
    a, b = legacy_broadcast(ctx, node, a, b)
    return a * b


@converter("Div", since=1)
def div(ctx: Context, node: Node, a: Tensor, b: Tensor) -> Tensor:
    """ONNX ``Div`` (1, 6, 7, 13, 14): true division for floats, truncating division for integers."""
    a, b = legacy_broadcast(ctx, node, a, b)
    return trunc_div(a, b) if is_int(a) else a / b


@converter("Neg", since=1)
def neg(ctx: Context, node: Node, x: Tensor) -> Tensor:
    """ONNX ``Neg`` (1, 6, 13): ``-x`` (signed integers and floats)."""
    return -x


@converter("Relu", since=1)
def relu(ctx: Context, node: Node, x: Tensor) -> Tensor:
    """ONNX ``Relu`` (1, 6, 13, 14: integer inputs from 14): ``max(0, x)``."""
    return activation.relu(x) if is_float(x) else x.clamp_min(0)
