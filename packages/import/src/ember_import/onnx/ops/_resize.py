"""Resampling: ``Resize`` (opsets 10, 11, 13, 18, 19) and ``Upsample`` (opsets 7 and 9).

Resizing is separable: each resized axis is resampled in turn. For one axis the output positions, their
source neighbours and weights are computed on the host in Python (they depend on the sizes only), then the
tensor is gathered with :meth:`Tensor.take` and the neighbours are summed with their weights, so every mode
runs on every backend and is differentiable. The coordinate transforms, neighbour choice, nearest rounding,
cubic (Keys) and antialiased kernels, ``exclude_outside``, ``tf_crop_and_resize`` extrapolation and
``keep_aspect_ratio_policy`` follow the ONNX reference implementation (``onnx/reference/ops/op_resize.py``).

Opset differences: Resize-10 and Upsample take ``scales`` only, with the ``asymmetric`` transform and the
"simple" nearest rounding of onnxruntime (floor when upsampling, ceil when downsampling); Resize-11 adds
``roi``, ``sizes`` and the transform/cubic/nearest attributes; 13 makes ``roi``/``scales`` optional; 18 adds
``antialias``, ``axes`` and ``keep_aspect_ratio_policy``; 19 adds ``half_pixel_symmetric``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence

from ember import DType, Float, Tensor
from ember.tensor import functional as M

from .._context import Context
from .._errors import OnnxImportError
from .._ir import Node
from .._registry import converter

__all__ = ["resize", "upsample"]

Coeffs = Callable[[float, float], list[float]]


def _str(node: Node, name: str, default: str) -> str:
    v = node.attr(name, default)
    return v.decode() if isinstance(v, bytes) else str(v)


# ---------------------------------------------------------------------------------------------- kernels
def _nearest(rounding: str) -> Coeffs:
    def coeffs(ratio: float, scale: float) -> list[float]:
        if float(ratio).is_integer():
            return [0.0, 1.0]
        if rounding == "round_prefer_floor":
            up = ratio > 0.5
        elif rounding == "round_prefer_ceil":
            up = ratio >= 0.5
        elif rounding == "floor":
            up = False
        elif rounding == "ceil":
            up = True
        elif rounding == "simple":  # Resize-10 / Upsample (onnxruntime): ceil when downsampling, else floor
            up = scale < 1
        else:
            raise ValueError(rounding)
        return [0.0, 1.0] if up else [1.0, 0.0]

    return coeffs


def _linear(antialias: bool) -> Coeffs:
    def coeffs(ratio: float, scale: float) -> list[float]:
        if not antialias:
            return [1 - ratio, ratio]
        s = min(scale, 1.0)
        start = math.floor(-1 / s) + 1
        w = [min(1.0, max(0.0, 1 - abs((i - ratio) * s))) for i in range(start, 2 - start)]
        return [c / sum(w) for c in w]

    return coeffs


def _cubic(a: float, antialias: bool) -> Coeffs:
    def keys(x: float) -> float:  # Keys' cubic convolution kernel
        x = abs(x)
        if x <= 1:
            return (a + 2) * x**3 - (a + 3) * x**2 + 1
        if x < 2:
            return a * x**3 - 5 * a * x**2 + 8 * a * x - 4 * a
        return 0.0

    def coeffs(ratio: float, scale: float) -> list[float]:
        if not antialias:
            return [keys(ratio + 1), keys(ratio), keys(1 - ratio), keys(2 - ratio)]
        s = min(scale, 1.0)
        start = math.floor(-2 / s) + 1
        w = [keys(s * (i - ratio)) for i in range(start, 2 - start)]
        return [c / sum(w) for c in w]

    return coeffs


# ---------------------------------------------------------------------------------------------- one axis
class _Plan:
    """The resampling of one axis: ``idx[o]``/``w[o]`` neighbours and weights of output ``o``; ``outside[o]``
    marks ``tf_crop_and_resize`` outputs that take the extrapolation value."""

    __slots__ = ("idx", "w", "outside")

    def __init__(self) -> None:
        self.idx: list[list[int]] = []
        self.w: list[list[float]] = []
        self.outside: list[bool] = []


def _source(ctm: str, y: int, scale: float, n_in: int, n_out: int, roi: tuple[float, float]) -> float:
    out_f = scale * n_in
    if ctm == "align_corners":
        return 0.0 if out_f == 1 else y * (n_in - 1) / (out_f - 1)
    if ctm == "asymmetric":
        return y / scale
    if ctm == "tf_crop_and_resize":
        lo, hi = roi
        x = (hi - lo) * (n_in - 1) / 2 if out_f == 1 else y * (hi - lo) * (n_in - 1) / (out_f - 1)
        return x + lo * (n_in - 1)
    if ctm == "pytorch_half_pixel":
        return -0.5 if out_f == 1 else (y + 0.5) / scale - 0.5
    if ctm == "half_pixel":
        return (y + 0.5) / scale - 0.5
    if ctm == "half_pixel_symmetric":
        offset = n_in / 2 * (1 - n_out / out_f)
        return offset + (y + 0.5) / scale - 0.5
    raise ValueError(ctm)


def _plan(coeffs: Coeffs, ctm: str, n_in: int, n_out: int, scale: float, roi: tuple[float, float],
          exclude_outside: bool) -> _Plan:
    """Neighbours and weights per output (``_interpolate_1d_along_axis`` of the ONNX reference)."""
    plan = _Plan()
    for y in range(n_out):
        x = _source(ctm, y, scale, n_in, n_out, roi)
        xi = math.floor(x)
        w = coeffs(1.0 if x == xi else x - xi, scale)
        n = len(w)
        pad = -(-n // 2)
        p = math.floor(x + pad)
        frac = x + pad - p
        if n % 2 == 0:
            off = -(n // 2) if frac == 0 else -(n // 2) + 1
        else:
            off = -((n - 1) // 2) + (0 if frac <= 0.5 else 1)
        idx = [p + off + j - pad for j in range(n)]
        if exclude_outside:
            w = [0.0 if (i < 0 or i >= n_in) else c for i, c in zip(idx, w)]
            total = sum(w) or 1.0
            w = [c / total for c in w]
        plan.idx.append([min(max(i, 0), n_in - 1) for i in idx])
        plan.w.append(w)
        plan.outside.append(ctm == "tf_crop_and_resize" and (x < 0 or x > n_in - 1))
    return plan


def _apply(ctx: Context, x: Tensor, axis: int, plan: _Plan, extrapolation: float) -> Tensor:
    """``x`` resampled along ``axis`` by ``plan``."""
    shape = [1] * x.rank
    shape[axis] = len(plan.idx)
    if all(sum(1 for c in w if c != 0) == 1 and max(w) == 1 for w in plan.w):  # nearest: one neighbour each
        picks = [i[w.index(1.0)] for i, w in zip(plan.idx, plan.w)]
        y = x.take(axis, ctx.tensor(picks, DType.INT64, x.device))
    else:
        y = None
        for j in range(len(plan.w[0])):  # one gather per tap: no [..., n_out, taps, ...] intermediate
            g = x.take(axis, ctx.tensor([i[j] for i in plan.idx], DType.INT64, x.device))
            term = g * ctx.tensor([w[j] for w in plan.w], x.dtype, x.device).reshape(shape)
            y = term if y is None else y + term
    if any(plan.outside):
        mask = ctx.tensor(plan.outside, DType.BOOL, x.device).reshape(shape)
        y = y.mask_fill(mask, extrapolation)
    return y


# ---------------------------------------------------------------------------------------------- sizes
def _targets(node: Node, shape: Sequence[int], axes: list[int], scales: list[float] | None,
             sizes: list[int] | None, policy: str) -> tuple[list[float], list[int]]:
    """Per entry of ``axes``: the scale used by the coordinate transform and the output size."""
    n_in = [shape[a] for a in axes]
    if sizes is not None:
        if len(sizes) != len(axes):
            raise OnnxImportError(f"{node.where()}: sizes must have {len(axes)} values (one per resized axis), "
                                  f"got {sizes}.")
        sc = [o / n for o, n in zip(sizes, n_in)]
        if policy == "stretch":
            return sc, list(sizes)
        if policy not in ("not_larger", "not_smaller"):
            raise OnnxImportError(f"{node.where()}: keep_aspect_ratio_policy must be stretch, not_larger or "
                                  f"not_smaller, got {policy!r}.")
        s = min(sc) if policy == "not_larger" else max(sc)
        return [s] * len(axes), [int(s * n + 0.5) for n in n_in]
    if scales is None or len(scales) != len(axes):
        raise OnnxImportError(f"{node.where()}: expected scales with {len(axes)} values or sizes, got scales "
                              f"{scales} and no sizes; the model is malformed.")
    if any(s <= 0 for s in scales):
        raise OnnxImportError(f"{node.where()}: scales must be positive, got {scales}.")
    return list(scales), [int(s * n) for s, n in zip(scales, n_in)]


@dataclasses.dataclass(frozen=True)
class _Options:
    """How a node resamples: ``mode`` (nearest/linear/cubic), nearest ``rounding``, ``antialias``, cubic ``a``,
    the coordinate transform ``ctm``, ``roi`` (tf_crop_and_resize), ``exclude_outside``, ``extrapolation``."""

    mode: str
    rounding: str = "round_prefer_floor"
    antialias: bool = False
    a: float = -0.75
    ctm: str = "half_pixel"
    roi: list[float] | None = None
    exclude_outside: bool = False
    extrapolation: float = 0.0

    def coeffs(self) -> Coeffs:
        if self.mode == "nearest":
            return _nearest(self.rounding)
        return _linear(self.antialias) if self.mode == "linear" else _cubic(self.a, self.antialias)


_MODES = {"nearest": "nearest", "linear": "linear", "bilinear": "linear", "trilinear": "linear", "cubic": "cubic",
          "bicubic": "cubic"}


def _mode(node: Node) -> str:
    mode = _MODES.get(_str(node, "mode", "nearest"))
    if mode is None:
        raise OnnxImportError(f"{node.where()}: mode must be nearest, linear or cubic, got "
                              f"{_str(node, 'mode', '')!r}.")
    return mode


def _module_interpolate(x: Tensor, axes: list[int], scales: list[float], sizes: list[int],
                        opts: _Options) -> Tensor | None:
    """The resize as one :func:`ember.tensor.functional.interpolate` call (PyTorch's ``F.interpolate`` with a size)
    when its semantics are the node's: a 4-D Float input resized on its last two dims, linear or cubic (``A =
    -0.75``, no ``exclude_outside``), ``half_pixel``/``pytorch_half_pixel`` or ``align_corners``, scales equal
    to ``out / in``, no antialias when downsampling; else ``None``."""
    full = dict(zip(axes, zip(scales, sizes)))
    if x.rank != 4 or x.kind is not Float or opts.mode == "nearest" or opts.exclude_outside:
        return None
    if any(full.get(a, (1.0, x.shape[a])) != (1.0, x.shape[a]) for a in (0, 1)):
        return None
    hw = [full.get(a, (1.0, x.shape[a])) for a in (2, 3)]
    if any(s * n != o or o < 2 or (opts.antialias and s < 1) for (s, o), n in zip(hw, x.shape[2:])):
        return None
    if opts.ctm not in ("half_pixel", "pytorch_half_pixel", "align_corners") or (
            opts.mode == "cubic" and opts.a != -0.75):
        return None
    mode = M.InterpolateMode.BILINEAR if opts.mode == "linear" else M.InterpolateMode.BICUBIC
    return M.interpolate(x, [o for _, o in hw], M.InterpolateOptions(mode=mode,
                                                                     align_corners=opts.ctm == "align_corners"))


def _resample(ctx: Context, x: Tensor, axes: list[int], scales: list[float], sizes: list[int],
              opts: _Options) -> Tensor:
    fast = _module_interpolate(x, axes, scales, sizes, opts)
    if fast is not None:
        return fast
    coeffs = opts.coeffs()
    blend = x.kind is not Float and opts.mode != "nearest"
    y = x.float() if blend else x
    for k, a in enumerate(axes):
        n_in, n_out, s = x.shape[a], sizes[k], scales[k]
        pair = (0.0, 1.0) if opts.roi is None else (opts.roi[k], opts.roi[len(axes) + k])
        if n_out == n_in and math.isclose(s, 1.0) and (opts.ctm != "tf_crop_and_resize" or pair == (0.0, 1.0)):
            continue
        y = _apply(ctx, y, a, _plan(coeffs, opts.ctm, n_in, n_out, s, pair, opts.exclude_outside),
                   opts.extrapolation)
    if not blend:
        return y
    bits = x.dtype.itemsize * 8
    lo, hi = (0, 2**bits - 1) if x.dtype.value.startswith("uint") else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    return y.round().clamp(float(lo), float(hi)).int().cast(x.dtype)  # saturating, as the reference


def _legacy(ctx: Context, node: Node, x: Tensor, scales: list[float] | None) -> Tensor:
    """Resize-10 and Upsample: all-axes ``scales``, ``asymmetric`` transform, "simple" nearest rounding."""
    if scales is None or len(scales) != x.rank:
        raise OnnxImportError(f"{node.where()}: scales must have {x.rank} values (one per axis of input "
                              f"{list(x.shape)}), got {scales}.")
    axes = list(range(x.rank))
    sc, sizes = _targets(node, x.shape, axes, scales, None, "stretch")
    return _resample(ctx, x, axes, sc, sizes, _Options(_mode(node), rounding="simple", ctm="asymmetric"))


@converter("Upsample", since=7)
def upsample7(ctx: Context, node: Node, x: Tensor) -> Tensor:
    """``Upsample``-7: the ``scales`` attribute."""
    return _legacy(ctx, node, x, [float(s) for s in node.attr("scales")])


@converter("Upsample", since=9, static=(1,))
def upsample(ctx: Context, node: Node, x: Tensor, scales: Tensor) -> Tensor:
    """``Upsample``-9 (deprecated at 10): the ``scales`` input."""
    return _legacy(ctx, node, x, ctx.floats(scales))


@converter("Resize", since=10, static=(1,))
def resize10(ctx: Context, node: Node, x: Tensor, scales: Tensor) -> Tensor:
    """``Resize``-10: ``scales`` input, nearest or linear, asymmetric transform."""
    return _legacy(ctx, node, x, ctx.floats(scales))


@converter("Resize", since=11, static=(1, 2, 3))
def resize(ctx: Context, node: Node, x: Tensor, roi: Tensor | None = None, scales: Tensor | None = None,
           sizes: Tensor | None = None) -> Tensor:
    """``Resize``-11/13/18/19: ``roi``, ``scales`` or ``sizes`` (empty tensors count as absent), ``axes``,
    ``keep_aspect_ratio_policy``, ``antialias``, every transform and the nearest/linear/cubic modes."""
    axes_attr = node.attr("axes", None)
    axes = [int(a) % x.rank for a in axes_attr] if axes_attr is not None else list(range(x.rank))
    roi_v = ctx.floats(roi) or None
    sc_v = ctx.floats(scales) or None
    sz_v = ctx.ints(sizes) or None
    if sz_v is not None and sc_v is not None:
        raise OnnxImportError(f"{node.where()}: only one of scales and sizes may be given, got both.")
    sc, out = _targets(node, x.shape, axes, sc_v, sz_v, _str(node, "keep_aspect_ratio_policy", "stretch"))
    mode = _mode(node)
    ctm = _str(node, "coordinate_transformation_mode", "half_pixel")
    if ctm == "tf_crop_and_resize" and (roi_v is None or len(roi_v) != 2 * len(axes)):
        raise OnnxImportError(f"{node.where()}: tf_crop_and_resize needs roi with {2 * len(axes)} values, got "
                              f"{roi_v}.")
    opts = _Options(mode, rounding=_str(node, "nearest_mode", "round_prefer_floor"),
                    antialias=bool(node.attr("antialias", 0)) and mode != "nearest",
                    a=float(node.attr("cubic_coeff_a", -0.75)), ctm=ctm,
                    roi=roi_v if ctm == "tf_crop_and_resize" else None,
                    exclude_outside=bool(node.attr("exclude_outside", 0)),
                    extrapolation=float(node.attr("extrapolation_value", 0.0)))
    return _resample(ctx, x, axes, sc, out, opts)
