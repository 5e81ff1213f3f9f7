"""quantize / dequantize / quantize_dynamic: the core side of the ``QuantOps`` primitives."""

from __future__ import annotations

from .._dtype import DType
from .._kind import Float, Int
from ..tensor._base import TensorBase, TensorT
from ..tensor._core import new
from ._errors import QuantizationError
from ._layout import Layout, check_finite, layout
from ._pack import pack_int4
from ._qtensor import QuantizedTensor
from ._range import compute_range, qparams_of_range
from ._scheme import QParams, QuantScheme
from ._validate import check_qparams

__all__ = ["quantize", "quantize_dynamic", "dequantize"]


def quantize(x: TensorT, scheme: QuantScheme, qparams: QParams[TensorT]) -> QuantizedTensor[TensorT]:
    """``x`` quantized with ``scheme`` and ``qparams``: ``q = clamp(round_half_even(x / scale) + zero_point, qmin,
    qmax)`` (ONNX ``QuantizeLinear``; see :class:`~ember.backend.contract.QuantOps`).

    Args:
        x: Float tensor, any shape, finite values (tracked or not: the result has no graph).
        scheme: the :class:`QuantScheme`.
        qparams: scales (and zero points) of the shape the level gives (see :class:`QParams`).

    Returns:
        A :class:`QuantizedTensor` on ``x``'s device.

    Raises:
        QuantizationError: ``x`` not Float, holding NaN/inf; ``qparams`` that do not fit (shape, device, type, zero
            point presence, non-positive scale); a level that does not fit ``x``'s shape.
    """
    if not isinstance(x, TensorBase) or x.kind is not Float:
        raise QuantizationError(
            f"quantize: expected a Float tensor, got "
            f"{x.kind.name + ' tensor' if isinstance(x, TensorBase) else type(x).__name__}."
        )
    lay = check_qparams("quantize", scheme, qparams, x.shape, x.device)
    check_finite("quantize", x, "the tensor")
    return apply_quantize(x, scheme, qparams, lay)


def apply_quantize(x: TensorT, scheme: QuantScheme, qparams: QParams[TensorT], lay: Layout) -> QuantizedTensor[TensorT]:
    """:func:`quantize` without the checks, for arguments already checked (or qparams computed from ``x``)."""
    dev = x.device
    xi = x.inner()
    inner = xi.device
    ops = inner.ops[0]
    s = qparams.scale.inner().reshape(lay.bcast)
    zp = None if qparams.zero_point is None else qparams.zero_point.inner().reshape(lay.bcast)
    qmin, qmax = scheme.value.range
    p = ops.quantize(
        xi.reshape(lay.view).primitive, s.primitive, None if zp is None else zp.primitive, qmin, qmax, DType.INT8
    )
    q = new(p, inner, Int, inner.ops[Int.index]).reshape(x.shape)
    if scheme.value.packed:
        q = pack_int4(q)
    if inner is not dev:
        q = q.from_inner(q, dev)
    return QuantizedTensor.trusted(q, x.shape, scheme, qparams)


def quantize_dynamic(x: TensorT, scheme: QuantScheme) -> QuantizedTensor[TensorT]:
    """``x`` quantized with qparams computed from its own range: ``quantize(x, scheme, compute_qparams(scheme,
    *compute_range(scheme, x)))`` (Burn's ``quantize_dynamic``, ONNX ``DynamicQuantizeLinear`` for ``Q8F`` per
    tensor).

    Raises:
        QuantizationError: as :func:`quantize` and :func:`~ember.quantization.compute_range`.
    """
    lo, hi = compute_range(scheme, x)  # checks x, and that the values are finite
    return apply_quantize(x, scheme, qparams_of_range(scheme, lo, hi), layout("quantize_dynamic", scheme, x.shape))


def dequantize(qt: QuantizedTensor[TensorT]) -> TensorT:
    """``(q - zero_point) * scale`` as a Float tensor of the backend's float type (ONNX ``DequantizeLinear``),
    untracked, on ``qt``'s device.

    Raises:
        QuantizationError: ``qt`` is not a QuantizedTensor.
    """
    if not isinstance(qt, QuantizedTensor):
        raise QuantizationError(f"dequantize: expected a QuantizedTensor, got {type(qt).__name__}.")
    return qt.dequantize()
