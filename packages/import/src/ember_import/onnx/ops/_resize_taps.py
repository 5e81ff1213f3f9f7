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
    the extrapolation value (``None`` when no output can). With ``matrix`` (the antialiased kernels, whose tap
    count may be known only when the model runs), ``idx[0]`` and ``w[0]`` are ``[n_out, matrix]`` matrices
    holding every tap."""

    idx: list[Tensor]
    w: list[Tensor] | None
    outside: Tensor | None
    matrix: Any = None


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


def source(
    ctx: Context, ctm: str, y: Tensor, scale: Any, n_in: Any, n_out: Any, roi: tuple[Any, Any], dev: Device
) -> Tensor:
    """The source coordinate of each output ``y`` (float64 ``[n_out]``) under the coordinate transform ``ctm``
    (``_get_neighbor_idxes``' transforms of the ONNX reference). Sizes come first in products (``(n_in - 1) *
    lo``): a dim known only when the model runs is an ``int`` subclass, which a plain float on the left would
    turn into a float of the trace's value; the products are the reference's (multiplication commutes)."""
    out_f = n_in * scale
    if ctm == "align_corners":
        x, zero = _divide(ctx, y * (n_in - 1), out_f - 1, dev)
        return _fill(x, zero, 0.0)
    if ctm == "asymmetric":
        return y / scale
    if ctm == "tf_crop_and_resize":
        lo, hi = roi
        x, zero = _divide(ctx, y * (hi - lo) * (n_in - 1), out_f - 1, dev)
        x = x + (n_in - 1) * lo
        return _fill(x, zero, (n_in - 1) * (hi - lo) / 2 + (n_in - 1) * lo)
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
    square, cube = t**2, t**3
    near = cube * (a + 2) - square * (a + 3) + 1
    far = cube * a - square * (5 * a) + t * (8 * a) - 4 * a
    return near.mask_where(t.greater_elem(1.0), far).mask_fill(t.greater_equal_elem(2.0), 0.0)


def _weights(s: Sampling, ratio: Tensor) -> list[Tensor]:
    """The weights of the taps, ``[n_out]`` each (``coeffs`` of the reference's linear and cubic modes)."""
    if s.mode == "linear":
        return [1.0 - ratio, ratio]
    return [_keys(ratio + 1.0, s.a), _keys(ratio, s.a), _keys(1.0 - ratio, s.a), _keys(2.0 - ratio, s.a)]


def _antialiased(
    ctx: Context, s: Sampling, ratio: Tensor, n_out: Any, scale: Any, dev: Device
) -> tuple[Tensor, Tensor, Any]:
    """The antialiased kernel's weights as a ``[n_out, n]`` matrix, the tap numbers ``0 .. n - 1`` (float64
    ``[1, n]``) and the tap count ``n``: the kernel is stretched by ``1 / min(scale, 1)``, so ``n`` depends on
    the scale (an int read back from a tensor: the scale may be known only when the model runs)."""
    support = 1.0 if s.mode == "linear" else 2.0
    sc = _scalar(ctx, scale, dev).clamp_max(1.0)
    start = (-support / sc).floor() + 1.0
    n = (2.0 - start * 2.0).int().into_scalar()
    j = Tensor.arange(0, n, dev).float().cast(F64).reshape([1, n])
    t = (j + start - ratio.reshape([n_out, 1])) * sc
    w = (1.0 - t.abs()).clamp(0.0, 1.0) if s.mode == "linear" else _keys(t, s.a)
    return w / w.sum_dim(1), j, n


def _first(x: Tensor, n: Any) -> Tensor:
    """The first of ``n`` (even) neighbours of each coordinate ``x``: ``p - n/2 - pad`` with ``p =
    floor(x + pad)``, ``pad = ceil(n / 2)``, one further when ``x + pad`` is not integral."""
    pad = -(-n // 2)
    shifted = x + pad
    p = shifted.floor()
    first = p - (n // 2 + pad)
    return (first + 1.0).mask_where(shifted.equal(p), first)


def taps(ctx: Context, s: Sampling, n_in: Any, n_out: Any, scale: Any, roi: tuple[Any, Any], dev: Device) -> Taps:
    """The sampling of one axis of ``n_in`` elements resized to ``n_out`` with ``scale`` (``roi``: the axis'
    ``(start, end)`` for ``tf_crop_and_resize``), computed on ``dev``. ``n_in``, ``n_out``, ``scale`` and ``roi``
    may be values known only when the model runs."""
    y = Tensor.arange(0, n_out, dev).float().cast(F64)
    x = source(ctx, s.ctm, y, scale, n_in, n_out, roi, dev)
    xi = x.floor()
    integral = x.equal(xi)
    ratio = (x - xi).mask_fill(integral, 1.0)
    outside = x.lower_elem(0.0).bool_or(x.greater_elem(n_in - 1)) if s.ctm == "tf_crop_and_resize" else None
    if s.mode == "nearest":  # the second neighbour when rounding up, which an integral x always does
        first = _first(x, 2)
        up = _rounds_up(ctx, s.rounding, ratio, integral, scale, dev)
        pick = first + 1.0 if up is True else first.mask_where(up, first + 1.0)
        return Taps([pick.clamp(0, n_in - 1).int()], None, outside)
    if s.antialias:
        w_all, offsets, n = _antialiased(ctx, s, ratio, n_out, scale, dev)
        pos, w = [_first(x, n).reshape([n_out, 1]) + offsets], [w_all]
    else:
        n = None
        w = _weights(s, ratio)
        first = _first(x, len(w))
        pos = [first + j if j else first for j in range(len(w))]
    if s.exclude_outside:
        w = [c.mask_fill(i.lower_elem(0.0).bool_or(i.greater_equal_elem(n_in)), 0.0) for c, i in zip(w, pos)]
        total = w[0].sum_dim(1) if n is not None else w[0]
        for c in w[1:]:
            total = total + c
        total = total.mask_fill(total.equal_elem(0.0), 1.0)
        w = [c / total for c in w]
    return Taps([i.clamp(0, n_in - 1).int() for i in pos], w, outside, n)


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
