"""The sampling of one resized axis, computed with Tensor-API calls: source coordinates, neighbours, weights.

For output positions ``y = 0 .. n_out - 1`` of one axis this computes, as float64 tensors of shape ``[n_out]``
(one per tap), the source coordinate ``x`` (the coordinate transform), the neighbours' indices and their
weights (nearest rounding, linear, Keys' cubic, the antialiased kernels, ``exclude_outside``) and the
``tf_crop_and_resize`` outputs that take the extrapolation value. It follows ``_interpolate_1d_along_axis`` of
the ONNX reference implementation (``onnx/reference/ops/op_resize.py``), operation for operation, so the float64
values are the reference's.

Every step is a Tensor-API call and every branch on a value is a mask, never a Python ``if``: the sizes, scales
and ``roi`` may be known only when the model runs (graph inputs), and ModelGen records these calls as the code
of the generated ``forward``. The only Python branches are on the node's attributes and on whether a value
is known now (a plain ``int``/``float``), which picks the same result either way.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from ember import DType, Tensor
from ember.backend import Device

from .._context import Context

__all__ = ["Taps", "Sampling", "known", "taps"]

F64 = DType.FLOAT64


def known(*values: Any) -> bool:
    """Whether every value is a plain ``int``/``float`` (known now, not a size or scale computed when the model
    runs): only then may the converter branch on it."""
    return all(type(v) in (int, float) for v in values)


@dataclasses.dataclass(frozen=True)
class Sampling:
    """What the node's attributes fix about the sampling: ``mode`` (nearest/linear/cubic), the nearest
    ``rounding``, ``antialias``, Keys' ``a``, the coordinate transform ``ctm`` and ``exclude_outside``."""

    mode: str
    rounding: str = "round_prefer_floor"
    antialias: bool = False
    a: float = -0.75
    ctm: str = "half_pixel"
    exclude_outside: bool = False


@dataclasses.dataclass
class Taps:
    """One axis' sampling: ``idx[j]`` the (clamped, int) source index of tap ``j`` per output; ``w[j]`` its
    float64 weight (``None`` for nearest: one tap of weight 1); ``outside`` the Bool mask of the outputs taking
    the extrapolation value (``None`` when no output can)."""

    idx: list[Tensor]
    w: list[Tensor] | None
    outside: Tensor | None


def _scalar(ctx: Context, v: Any, dev: Device) -> Tensor:
    """``v`` as a float64 tensor of shape ``[1]`` (to compare or divide by it without a Python branch)."""
    return ctx.tensor([v], F64, dev)


def _divide(ctx: Context, num: Tensor, den: Any, dev: Device) -> tuple[Tensor, Any]:
    """``num / den`` and the Bool mask ``den == 0`` (shape ``[1]``; ``None`` when ``den`` is known non-zero);
    where ``den`` is 0 the quotient is ``num`` (the caller overwrites it)."""
    if known(den):
        return (num if den == 0 else num / den), (den == 0 or None)
    d = _scalar(ctx, den, dev)
    zero = d.equal_elem(0.0)
    return num / d.mask_fill(zero, 1.0), zero


def _fill(t: Tensor, mask: Any, value: Any) -> Tensor:
    """``t`` with ``value`` where ``mask`` holds (``mask``: a Bool tensor, ``True`` for all, ``None`` for none)."""
    if mask is None:
        return t
    if mask is True:
        return t * 0.0 + value
    return t.mask_fill(mask, value)


def source(ctx: Context, ctm: str, y: Tensor, scale: Any, n_in: Any, n_out: Any, roi: tuple[Any, Any],
           dev: Device) -> Tensor:
    """The source coordinate of each output ``y`` (float64 ``[n_out]``) under the coordinate transform ``ctm``
    (``_get_neighbor_idxes``' transforms of the ONNX reference)."""
    out_f = scale * n_in
    if ctm == "align_corners":
        x, zero = _divide(ctx, y * (n_in - 1), out_f - 1, dev)
        return _fill(x, zero, 0.0)
    if ctm == "asymmetric":
        return y / scale
    if ctm == "tf_crop_and_resize":
        lo, hi = roi
        x, zero = _divide(ctx, y * (hi - lo) * (n_in - 1), out_f - 1, dev)
        x = x + lo * (n_in - 1)
        return _fill(x, zero, (hi - lo) * (n_in - 1) / 2 + lo * (n_in - 1))
    if ctm == "pytorch_half_pixel":
        x = (y + 0.5) / scale - 0.5
        one = (out_f == 1 or None) if known(out_f) else _scalar(ctx, out_f, dev).equal_elem(1.0)
        return _fill(x, one, -0.5)
    if ctm == "half_pixel":
        return (y + 0.5) / scale - 0.5
    if ctm == "half_pixel_symmetric":
        offset = n_in / 2 * (1 - n_out / out_f)
        return (y + 0.5) / scale + offset - 0.5
    raise ValueError(ctm)


def _keys(t: Tensor, a: float) -> Tensor:
    """Keys' cubic convolution kernel of ``t`` (elementwise)."""
    t = t.abs()
    near = (t**3) * (a + 2) - (t**2) * (a + 3) + 1
    far = (t**3) * a - (t**2) * (5 * a) + t * (8 * a) - 4 * a
    return near.mask_where(t.greater_elem(1.0), far).mask_fill(t.greater_equal_elem(2.0), 0.0)


def _weights(s: Sampling, ratio: Tensor, scale: Any) -> tuple[list[Tensor], int]:
    """The weights of the taps (``[n_out]`` each) and the first tap's offset (``coeffs`` of the reference's
    linear and cubic modes; the antialiased kernels stretch by ``1 / min(scale, 1)``)."""
    if not s.antialias:
        if s.mode == "linear":
            return [1.0 - ratio, ratio], 0
        return [_keys(ratio + 1.0, s.a), _keys(ratio, s.a), _keys(1.0 - ratio, s.a), _keys(2.0 - ratio, s.a)], 0
    sc = min(scale, 1.0)
    start = math.floor(-(1 if s.mode == "linear" else 2) / sc) + 1
    if s.mode == "linear":
        w = [(1.0 - ((i - ratio) * sc).abs()).clamp(0.0, 1.0) for i in range(start, 2 - start)]
    else:
        w = [_keys((i - ratio) * sc, s.a) for i in range(start, 2 - start)]
    total = w[0]
    for c in w[1:]:
        total = total + c
    return [c / total for c in w], start


def taps(ctx: Context, s: Sampling, n_in: Any, n_out: Any, scale: Any, roi: tuple[Any, Any],
         dev: Device) -> Taps:
    """The sampling of one axis of ``n_in`` elements resized to ``n_out`` with ``scale`` (``roi``: the axis'
    ``(start, end)`` for ``tf_crop_and_resize``), computed on ``dev``. ``n_in``, ``n_out``, ``scale`` and ``roi``
    may be values known only when the model runs.

    Raises:
        NotImplementedError: an antialiased kernel with a scale not known now (its tap count depends on it).
    """
    if s.antialias and not known(scale):
        raise NotImplementedError("an antialiased resize whose scale is read from the data: its number of taps "
                                  "depends on the scale")
    y = Tensor.arange(0, n_out, dev).float().cast(F64)
    x = source(ctx, s.ctm, y, scale, n_in, n_out, roi, dev)
    xi = x.floor()
    integral = x.equal(xi)
    ratio = (x - xi).mask_fill(integral, 1.0)
    if s.mode == "nearest":
        w: list[Tensor] | None = None
        n = 2
    else:
        w, _ = _weights(s, ratio, scale)
        n = len(w)
    pad = -(-n // 2)
    p = (x + pad).floor()
    # the first neighbour: p - n/2 - pad, one further when x + pad is not integral (n is even here)
    first = p - (n // 2 + pad)
    first = (first + 1.0).mask_where((x + pad).equal(p), first)
    pos = [first + j if j else first for j in range(n)]
    if w is not None and s.exclude_outside:
        w = [c.mask_fill(i.lower_elem(0.0).bool_or(i.greater_equal_elem(n_in)), 0.0) for c, i in zip(w, pos)]
        total = w[0]
        for c in w[1:]:
            total = total + c
        total = total.mask_fill(total.equal_elem(0.0), 1.0)
        w = [c / total for c in w]
    if w is None:  # nearest: the second neighbour when rounding up, which an integral x always does
        up = _rounds_up(ctx, s.rounding, ratio, integral, scale, dev)
        pos = [pos[1] if up is True else pos[0].mask_where(up, pos[1])]
    idx = [i.clamp(0, n_in - 1).int() for i in pos]
    outside = None
    if s.ctm == "tf_crop_and_resize":
        outside = x.lower_elem(0.0).bool_or(x.greater_elem(n_in - 1))
    return Taps(idx, w, outside)


def _rounds_up(ctx: Context, rounding: str, ratio: Tensor, integral: Tensor, scale: Any, dev: Device) -> Any:
    """Where nearest picks the upper neighbour (always at an integral coordinate): a Bool tensor, or ``True``
    (everywhere)."""
    if rounding == "round_prefer_floor":
        return ratio.greater_elem(0.5)
    if rounding == "round_prefer_ceil":
        return ratio.greater_equal_elem(0.5)
    if rounding == "floor":
        return integral
    if rounding == "ceil":
        return True
    if rounding == "simple":  # Resize-10 / Upsample (onnxruntime): ceil when downsampling, else floor
        if known(scale):
            return True if scale < 1 else integral
        return _scalar(ctx, scale, dev).lower_elem(1.0).bool_or(integral)
    raise ValueError(rounding)
