"""onnxruntime's quantized element-wise operators (``com.microsoft`` domain, version 1): ``QLinearAdd`` and
``QLinearMul``, which its ``quantize_static`` / ``quantize_dynamic`` write in the QOperator format.

Semantics (onnxruntime's contrib-operator documentation, ``docs/ContribOperators.md``, and its MLAS kernels
``qladd.cpp`` / ``qlmul.cpp``): the inputs ``A``, ``B`` (uint8 or int8, numpy broadcasting) and the output ``C`` of
``A``'s type each have a per-tensor scale and an optional zero point (0 when omitted);

- ``QLinearAdd``: ``C = saturate(round(C_zp - (ra * A_zp + rb * B_zp) + ra * A + rb * B))`` with
  ``ra = A_scale / C_scale`` and ``rb = B_scale / C_scale``;
- ``QLinearMul``: ``C = saturate(round((A - A_zp) * (B - B_zp) * (A_scale * B_scale / C_scale) + C_zp))``

computed in float32 in MLAS's order of operations (the zero points enter before the rounding, so halfway values
round as onnxruntime's do), rounding half to even (``nearbyintf``), each scale ratio a correctly rounded float32
quotient.
"""

from __future__ import annotations

from ember import DType, Tensor

from .._context import Context
from .._errors import OnnxImportError
from .._ir import Node
from .._registry import converter
from ._axes import as_dtype
from ._quantize import _div, quant_range

__all__: list[str] = []

_DOMAIN = "com.microsoft"


def _scalar(node: Node, name: str, t: Tensor) -> Tensor:
    if t.num_elements() != 1:
        raise OnnxImportError(
            f"{node.where()}: {name} must be per tensor (one element), found shape {list(t.shape)}; onnxruntime's "
            "QLinearAdd / QLinearMul take per-tensor parameters only."
        )
    return as_dtype(t.reshape([]), DType.FLOAT32)


def _zp(node: Node, name: str, q: Tensor | None) -> Tensor | float:
    """A per-tensor zero point as a float32 scalar tensor; 0.0 when omitted."""
    return 0.0 if q is None else _scalar(node, name, q)


def _finish(node: Node, value: Tensor, out: DType) -> Tensor:
    lo, hi = quant_range(node, out)
    return as_dtype(value.round().clamp(lo, hi), out)


@converter("QLinearAdd", since=1, domain=_DOMAIN)
def qlinear_add(
    ctx: Context,
    node: Node,
    a: Tensor,
    a_scale: Tensor,
    a_zp: Tensor | None,
    b: Tensor,
    b_scale: Tensor,
    b_zp: Tensor | None,
    c_scale: Tensor,
    c_zp: Tensor | None = None,
) -> Tensor:
    """``QLinearAdd``: the sum of the dequantized operands, requantized (see the module docstring)."""
    quant_range(node, a.dtype)
    cs = _scalar(node, "C_scale", c_scale)
    ra = _div(_scalar(node, "A_scale", a_scale), cs, DType.FLOAT32)
    rb = _div(_scalar(node, "B_scale", b_scale), cs, DType.FLOAT32)
    fixed = ra.mul(_zp(node, "A_zero_point", a_zp)).add(rb.mul(_zp(node, "B_zero_point", b_zp)))
    fixed = fixed.neg().add(_zp(node, "C_zero_point", c_zp))
    value = fixed.add(as_dtype(a, DType.FLOAT32).mul(ra)).add(as_dtype(b, DType.FLOAT32).mul(rb))
    return _finish(node, value, a.dtype)


@converter("QLinearMul", since=1, domain=_DOMAIN)
def qlinear_mul(
    ctx: Context,
    node: Node,
    a: Tensor,
    a_scale: Tensor,
    a_zp: Tensor | None,
    b: Tensor,
    b_scale: Tensor,
    b_zp: Tensor | None,
    c_scale: Tensor,
    c_zp: Tensor | None = None,
) -> Tensor:
    """``QLinearMul``: the product of the dequantized operands, requantized (see the module docstring)."""
    quant_range(node, a.dtype)
    product = _scalar(node, "A_scale", a_scale).mul(_scalar(node, "B_scale", b_scale))
    ratio = _div(product, _scalar(node, "C_scale", c_scale), DType.FLOAT32)
    ca = as_dtype(a, DType.FLOAT32).sub(_zp(node, "A_zero_point", a_zp))
    cb = as_dtype(b, DType.FLOAT32).sub(_zp(node, "B_zero_point", b_zp))
    value = ca.mul(cb).mul(ratio).add(_zp(node, "C_zero_point", c_zp))
    return _finish(node, value, a.dtype)
