"""``quantized_matmul`` and ``quantized_linear``: int8 x int8 -> int32 products through each library's own kernel
(:meth:`~ember.backend.contract.QuantOps.int_matmul`), with the float fallback where the integer path does not
apply.

The integer path (``a`` and ``b`` quantized with 8-bit or int4 values):

``a @ b ~= (sa * sb) * ((qa - za) @ qb) = (sa * sb) * (qa @ qb - za * colsum(qb))``

which holds exactly in integer arithmetic when ``b`` is symmetric (no zero point) and one scale of ``a`` is shared
along the reduction dim (``a`` per tensor, or per row: ``QuantLevel.axis(-2)``) and one scale of ``b`` along it
(``b`` per tensor or per column: ``QuantLevel.axis(-1)``). Other schemes (block levels, affine ``b``) take the
documented fallback: dequantize both and multiply in float, which gives the same numbers up to float rounding.
"""

from __future__ import annotations

from .._dtype import DType
from .._kind import Float, Int
from ..tensor._tensor import Tensor
from ._errors import QuantizationError
from ._qtensor import QuantizedTensor
from ._quantize import quantize_dynamic
from ._scheme import QuantScheme

__all__ = ["quantized_matmul", "quantized_linear", "int_path_applies"]

#: k * 128 * 128 must stay below 2**31 for an exact int32 accumulation
MAX_K = (2**31 - 1) // (128 * 128)


def _axis_is(level_axis: int | None, rank: int, want: int) -> bool:
    return level_axis is not None and level_axis % rank == want % rank


def int_path_applies(a: QuantizedTensor, b: QuantizedTensor) -> bool:
    """Whether ``quantized_matmul(a, b)`` runs on the int8 kernel (else it dequantizes and multiplies in float)."""
    la, lb = a.scheme.level, b.scheme.level
    ok_a = la.kind == "tensor" or (la.kind == "axis" and _axis_is(la.dim, a.rank, -2))
    ok_b = lb.kind == "tensor" or (lb.kind == "axis" and b.rank >= 2 and _axis_is(lb.dim, b.rank, -1))
    return ok_a and ok_b and b.scheme.value.symmetric and a.shape[-1] <= MAX_K


def _check(op: str, a: object, b: object) -> None:
    for name, t in (("a", a), ("b", b)):
        if not isinstance(t, QuantizedTensor):
            raise QuantizationError(
                f"{op}: {name} must be a QuantizedTensor, got {type(t).__name__}; quantize it "
                "first (x.quantize_dynamic(scheme))."
            )
    assert isinstance(a, QuantizedTensor) and isinstance(b, QuantizedTensor)
    if a.rank < 2 or b.rank < 2 or a.shape[-1] != b.shape[-2]:
        raise QuantizationError(
            f"{op}: expected a [..., m, k] and b [..., k, n], got {list(a.shape)} and {list(b.shape)}."
        )
    if a.device is not b.device:
        raise QuantizationError(f"{op}: a is on {a.device} and b on {b.device}; move one of them.")


def quantized_matmul(a: QuantizedTensor, b: QuantizedTensor, *, accumulate: bool = False) -> Tensor:
    """The matrix product of two quantized tensors (``[..., m, k] x [..., k, n] -> [..., m, n]``, leading dims
    broadcast as ``Tensor.matmul``).

    Args:
        a: quantized ``[..., m, k]``.
        b: quantized ``[..., k, n]``, on ``a``'s device.
        accumulate: ``True`` returns the raw accumulator ``(qa - za) @ qb`` as an int32 Int tensor (int path
            only); ``False`` (default) returns ``sa * sb * accumulator``, a Float tensor of the backend's float
            type, i.e. ``dequantize(a) @ dequantize(b)`` up to float rounding.

    Raises:
        QuantizationError: not quantized tensors, shapes that do not multiply, different devices, or
            ``accumulate=True`` for schemes the int path does not take (see :func:`int_path_applies`).
    """
    _check("quantized_matmul", a, b)
    if not int_path_applies(a, b):
        if accumulate:
            raise QuantizationError(
                f"quantized_matmul: accumulate=True needs a per tensor or per row (axis -2) and b symmetric per "
                f"tensor or per column (axis -1), got {a.scheme.value.name} {a.scheme.level!r} and "
                f"{b.scheme.value.name} {b.scheme.level!r}; use accumulate=False (float fallback)."
            )
        return a.dequantize().matmul(b.dequantize())
    dev = a.device
    inner = dev.inner
    ai, bi = a.inner(), b.inner()
    qa, qb = ai.int_values(), bi.int_values()
    acc = Tensor(inner.ops[1].int_matmul(qa.primitive, qb.primitive), inner, Int)
    za = ai.qparams.zero_point
    if za is not None:
        # (qa - za) @ qb = qa @ qb - za * colsum(qb): za is per tensor ([1]) or per row ([m]); the column sums
        # of b (a layer's weight, the same every call) are computed once per quantized tensor
        colsum = b.derived("colsum", lambda: qb.cast("int32").sum_dim(-2))  # [..., 1, n]
        z = za.cast("int32").reshape(_row_shape(a))
        acc = acc - z * colsum
    if accumulate:
        out = acc
    else:
        fd = inner.backend.float_dtype
        sa = ai.qparams.scale.cast(fd).reshape(_row_shape(a))
        sb = b.derived(f"scale-{fd.value}", lambda: _col_scale(b, bi, fd))
        out = acc.float() * (sa * sb) if fd is not DType.FLOAT64 else acc.float() * sa * sb
    return out if inner is dev else Tensor.from_inner(out, dev)


def _col_scale(b: QuantizedTensor, bi: QuantizedTensor, fd: DType) -> Tensor:
    """The scales of ``b`` (inner) as float ``fd``, shaped to broadcast against ``[..., m, n]``."""
    sb = bi.qparams.scale.cast(fd)
    if b.scheme.level.kind == "axis":
        return sb.reshape((1,) * (b.rank - 1) + (sb.shape[0],))
    return sb.reshape((1,) * b.rank)


def _row_shape(a: QuantizedTensor) -> tuple[int, ...]:
    """The shape the scale (or zero point) of ``a`` broadcasts with against ``[..., m, n]``."""
    if a.scheme.level.kind == "tensor":
        return (1,) * a.rank
    return (1,) * (a.rank - 2) + (a.shape[-2], 1)


def quantized_linear(
    x: Tensor, w_q: QuantizedTensor, bias: Tensor | None = None, *, activation_scheme: QuantScheme | None = None
) -> Tensor:
    """A linear layer with a quantized weight: ``x @ dequantize(w_q) + bias`` (Ember's ``Linear`` layout: the
    weight is ``[d_input, d_output]``).

    - ``activation_scheme=None``: weight-only quantization. The weight is dequantized and the product runs in float
      (the memory saving is the stored weight; the speed is float's).
    - ``activation_scheme`` given (dynamic quantization, PyTorch's ``torch.ao.nn.quantized.dynamic.Linear``): ``x``
      is quantized on the fly with its own range (:meth:`Tensor.quantize_dynamic`, e.g. ``QuantScheme()``: int8
      symmetric per tensor; ``QuantLevel.axis(-2)`` on 2-D ``x`` is one scale per row) and the product runs on the
      int8 kernel: ``dequantize(quantize_dynamic(x)) @ dequantize(w_q) + bias``. Weights per tensor or per output
      channel (``QuantLevel.axis(-1)``), symmetric; other weights take the float fallback with the same formula.

    Args:
        x: Float tensor ``[..., d_input]``.
        w_q: quantized weight ``[d_input, d_output]``.
        bias: optional Float tensor ``[d_output]``.
        activation_scheme: the scheme for ``x`` (8-bit or int4 values), or ``None``.

    Returns:
        Float tensor ``[..., d_output]``, the backend's float type. Under ``Autodiff`` the result is differentiable
        with respect to ``x`` and ``bias`` only in the weight-only mode (dynamic quantization has no gradient; use
        :func:`~ember.quantization.fake_quantize` for training).

    Raises:
        QuantizationError: ``w_q`` not a rank-2 QuantizedTensor, ``x`` not Float or of the wrong last dim, a bias of
            the wrong shape, devices that differ.
    """
    if not isinstance(w_q, QuantizedTensor) or w_q.rank != 2:
        raise QuantizationError(
            f"quantized_linear: w_q must be a rank-2 QuantizedTensor [d_input, d_output], got {_what(w_q)}."
        )
    if not isinstance(x, Tensor) or x.kind is not Float or x.rank < 1 or x.shape[-1] != w_q.shape[0]:
        got = f"shape {list(x.shape)}" if isinstance(x, Tensor) else type(x).__name__
        raise QuantizationError(
            f"quantized_linear: x must be a Float tensor [..., {w_q.shape[0]}] for a weight of shape "
            f"{list(w_q.shape)}, got {got}."
        )
    if x.device is not w_q.device:
        raise QuantizationError(f"quantized_linear: x is on {x.device} and the weight on {w_q.device}.")
    if bias is not None and (not isinstance(bias, Tensor) or tuple(bias.shape) != (w_q.shape[1],)):
        found = str(list(bias.shape)) if isinstance(bias, Tensor) else type(bias).__name__
        raise QuantizationError(f"quantized_linear: bias must have shape [{w_q.shape[1]}], got {found}.")
    if activation_scheme is None:
        y = x.matmul(w_q.dequantize()) if x.rank >= 2 else x.unsqueeze_dim(0).matmul(w_q.dequantize()).squeeze_dim(0)
    else:
        lead = x.shape[:-1]
        x2 = x.reshape((-1, x.shape[-1])) if x.rank != 2 else x
        xq = quantize_dynamic(x2.detach(), activation_scheme)
        y = quantized_matmul(xq, w_q)
        if x.rank != 2:
            y = y.reshape(lead + (w_q.shape[1],))
    if bias is not None:
        y = y + bias
    return y


def _what(w: object) -> str:
    if isinstance(w, QuantizedTensor):
        return f"a QuantizedTensor of shape {list(w.shape)}"
    return type(w).__name__
