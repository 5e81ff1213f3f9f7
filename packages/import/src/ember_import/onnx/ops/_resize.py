"""Resampling: ``Resize`` (opsets 10, 11, 13, 18, 19) and ``Upsample`` (opsets 7 and 9).

Resizing is separable: each resized axis is resampled in turn. For one axis the output positions, their
source neighbours and weights are computed as float64 tensors on the host device (:mod:`._resize_taps`: Tensor-API
calls with masks for the value-dependent choices, so sizes, scales and ``roi`` read from graph inputs stay code
when ModelGen traces this converter), then the tensor is gathered with :meth:`Tensor.take` and the neighbours are
summed with their weights, so every mode runs on every backend and is differentiable. The coordinate
transforms, neighbour choice, nearest rounding, cubic (Keys) and antialiased kernels, ``exclude_outside``,
``tf_crop_and_resize`` extrapolation and ``keep_aspect_ratio_policy`` follow the ONNX reference implementation
(``onnx/reference/ops/op_resize.py``).

Opset differences: Resize-10 and Upsample take ``scales`` only, with the ``asymmetric`` transform and the
"simple" nearest rounding of onnxruntime (floor when upsampling, ceil when downsampling); Resize-11 adds
``roi``, ``sizes`` and the transform/cubic/nearest attributes; 13 makes ``roi``/``scales`` optional; 18 adds
``antialias``, ``axes`` and ``keep_aspect_ratio_policy``; 19 adds ``half_pixel_symmetric``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

from ember import DType, Float, Tensor
from ember.tensor import functional as M

from .._context import Context
from .._errors import OnnxImportError
from .._ir import Node
from .._registry import converter
from .._validate import validating
from ._resize_taps import Sampling, Taps, known, taps

__all__ = ["resize", "upsample"]


def _str(node: Node, name: str, default: str) -> str:
    v = node.attr(name, default)
    return v.decode() if isinstance(v, bytes) else str(v)


# ---------------------------------------------------------------------------------------------- one axis
def _apply(ctx: Context, x: Tensor, axis: int, t: Taps, n_out: Any, extrapolation: float) -> Tensor:
    """``x`` resampled along ``axis`` by the taps ``t`` (computed on the host: moved to ``x``'s device)."""
    def on_x(v: Tensor) -> Tensor:
        return v if v.device is x.device else ctx.to_main(v)

    shape: list[Any] = [1] * x.rank
    shape[axis] = n_out
    if t.w is None:  # nearest: one neighbour each
        y = x.take(axis, on_x(t.idx[0]))
    elif t.matrix is not None:  # every tap at once: [..., n_out, taps, ...], summed over the taps
        wide = [*x.shape[:axis], n_out, t.matrix, *x.shape[axis + 1:]]
        w = on_x(t.w[0].cast(x.dtype).reshape([*shape[:axis], n_out, t.matrix, *shape[axis + 1:]]))
        y = (x.take(axis, on_x(t.idx[0].reshape([-1]))).reshape(wide) * w).sum_dim(axis + 1).squeeze_dim(axis + 1)
    else:
        y = None
        for i, w in zip(t.idx, t.w):  # one gather per tap: no [..., n_out, taps, ...] intermediate
            term = x.take(axis, on_x(i)) * on_x(w.cast(x.dtype).reshape(shape))
            y = term if y is None else y + term
    if t.outside is not None:
        y = y.mask_fill(on_x(t.outside.reshape(shape)), extrapolation)
    return y


# ---------------------------------------------------------------------------------------------- sizes
def _extreme(ctx: Context, values: list[Any], largest: bool) -> Any:
    """``max(values)`` (``min`` unless ``largest``): computed with a tensor when the values are known only when
    the model runs (so that it stays code, not a Python branch)."""
    if known(*values):
        return max(values) if largest else min(values)
    t = ctx.tensor(values, DType.FLOAT64, ctx.host)
    return (t.max() if largest else t.min()).into_scalar()


def _targets(ctx: Context, node: Node, shape: Sequence[Any], axes: list[int], scales: list[Any] | None,
             sizes: list[Any] | None, policy: str) -> tuple[list[Any], list[Any]]:
    """Per entry of ``axes``: the scale used by the coordinate transform and the output size (``int(s * n)``
    truncated as the reference; ``keep_aspect_ratio_policy`` rounds half up). The values may be known only when
    the model runs: the sizes are then arithmetic on them (``math.trunc`` keeps that as code). A size comes
    first in a product (``n * s``): a dim known only when the model runs is an ``int`` subclass, which a plain
    float on the left would turn into a float of the trace's value."""
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
        s = _extreme(ctx, sc, largest=policy == "not_smaller")
        return [s] * len(axes), [math.trunc(n * s + 0.5) for n in n_in]
    if scales is None or len(scales) != len(axes):
        raise OnnxImportError(f"{node.where()}: expected scales with {len(axes)} values or sizes, got scales "
                              f"{scales} and no sizes; the model is malformed.")
    with validating():
        if any(s <= 0 for s in scales):
            raise OnnxImportError(f"{node.where()}: scales must be positive, got {scales}.")
    return list(scales), [math.trunc(n * s) for s, n in zip(scales, n_in)]


@dataclasses.dataclass(frozen=True)
class _Options:
    """How a node resamples: the :class:`Sampling` of each axis, ``roi`` (tf_crop_and_resize) and the
    ``extrapolation`` value."""

    sampling: Sampling
    roi: list[Any] | None = None
    extrapolation: float = 0.0


_MODES = {"nearest": "nearest", "linear": "linear", "bilinear": "linear", "trilinear": "linear", "cubic": "cubic",
          "bicubic": "cubic"}


def _mode(node: Node) -> str:
    mode = _MODES.get(_str(node, "mode", "nearest"))
    if mode is None:
        raise OnnxImportError(f"{node.where()}: mode must be nearest, linear or cubic, got "
                              f"{_str(node, 'mode', '')!r}.")
    return mode


def _kept(s: Any, o: Any, n: Any) -> bool:
    """Whether an axis of ``n`` elements resized to ``o`` with scale ``s`` keeps its size for every value the
    sizes can take: known and equal, or a known scale of exactly 1 (a known scale with sizes known only when the
    model runs comes from ``scales``, so ``o`` is ``trunc(1.0 * n)``: ``n``)."""
    return o == n if known(o, n) else known(s) and s == 1.0


def _whole_ratio(s: Any, o: Any, n: Any) -> bool:
    """Whether ``o == s * n`` and ``o >= 2`` for every value the sizes can take: known and so, or a known whole
    scale of at least 2 (``o`` is then ``trunc(s * n)``, ``s * n``, for every ``n >= 1``)."""
    if known(s, o, n):
        return s * n == o and o >= 2
    return known(s) and float(s).is_integer() and s >= 2


def _module_interpolate(x: Tensor, axes: list[int], scales: list[Any], sizes: list[Any],
                        opts: Sampling) -> Tensor | None:
    """The resize as one :func:`ember.tensor.functional.interpolate` call (PyTorch's ``F.interpolate`` with a size)
    when its semantics are the node's: a 4-D Float input resized on its last two dims, linear or cubic (``A =
    -0.75``, no ``exclude_outside``), ``half_pixel``/``pytorch_half_pixel`` or ``align_corners``, scales equal
    to ``out / in``, no antialias when downsampling, for every value of the sizes that are known only when the
    model runs; else ``None``."""
    full = dict(zip(axes, zip(scales, sizes)))
    if x.rank != 4 or x.kind is not Float or opts.mode == "nearest" or opts.exclude_outside:
        return None
    if any(a in full and not (known(full[a][0]) and full[a][0] == 1.0 and _kept(*full[a], x.shape[a]))
           for a in (0, 1)):
        return None
    hw = [full.get(a, (1.0, x.shape[a])) for a in (2, 3)]
    if any(not _whole_ratio(s, o, n) or (opts.antialias and s < 1) for (s, o), n in zip(hw, x.shape[2:])):
        return None
    if opts.ctm not in ("half_pixel", "pytorch_half_pixel", "align_corners") or (
            opts.mode == "cubic" and opts.a != -0.75):
        return None
    mode = M.InterpolateMode.BILINEAR if opts.mode == "linear" else M.InterpolateMode.BICUBIC
    return M.interpolate(x, [o for _, o in hw], M.InterpolateOptions(mode=mode,
                                                                     align_corners=opts.ctm == "align_corners"))


def _resample(ctx: Context, x: Tensor, axes: list[int], scales: list[Any], sizes: list[Any],
              opts: _Options) -> Tensor:
    fast = _module_interpolate(x, axes, scales, sizes, opts.sampling)
    if fast is not None:
        return fast
    blend = x.kind is not Float and opts.sampling.mode != "nearest"
    y = x.float() if blend else x
    for k, a in enumerate(axes):
        n_in, n_out, s = x.shape[a], sizes[k], scales[k]
        pair = (0.0, 1.0) if opts.roi is None else (opts.roi[k], opts.roi[len(axes) + k])
        if known(s, *pair) and math.isclose(s, 1.0) and _kept(s, n_out, n_in) and (
                opts.sampling.ctm != "tf_crop_and_resize" or pair == (0.0, 1.0)):
            continue
        y = _apply(ctx, y, a, taps(ctx, opts.sampling, n_in, n_out, s, pair, ctx.host), n_out, opts.extrapolation)
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
    sc, sizes = _targets(ctx, node, x.shape, axes, scales, None, "stretch")
    return _resample(ctx, x, axes, sc, sizes, _Options(Sampling(_mode(node), rounding="simple", ctm="asymmetric")))


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
    sc, out = _targets(ctx, node, x.shape, axes, sc_v, sz_v, _str(node, "keep_aspect_ratio_policy", "stretch"))
    mode = _mode(node)
    ctm = _str(node, "coordinate_transformation_mode", "half_pixel")
    if ctm == "tf_crop_and_resize" and (roi_v is None or len(roi_v) != 2 * len(axes)):
        raise OnnxImportError(f"{node.where()}: tf_crop_and_resize needs roi with {2 * len(axes)} values, got "
                              f"{roi_v}.")
    sampling = Sampling(mode, rounding=_str(node, "nearest_mode", "round_prefer_floor"),
                        antialias=bool(node.attr("antialias", 0)) and mode != "nearest",
                        a=float(node.attr("cubic_coeff_a", -0.75)), ctm=ctm,
                        exclude_outside=bool(node.attr("exclude_outside", 0)))
    if sampling.antialias:
        with validating():
            if any(s <= 0 for s in sc):
                raise OnnxImportError(f"{node.where()}: an antialiased resize needs positive scales (its kernel is "
                                      f"stretched by 1 / scale), got {sc}.")
    opts = _Options(sampling, roi=roi_v if ctm == "tf_crop_and_resize" else None,
                    extrapolation=float(node.attr("extrapolation_value", 0.0)))
    return _resample(ctx, x, axes, sc, out, opts)
