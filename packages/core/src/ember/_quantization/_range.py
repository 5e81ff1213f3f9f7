"""``compute_range`` and ``compute_qparams``: the min/max a scheme sees and the scales and zero points they give."""

from __future__ import annotations

import numpy as np

from .._kind import Float
from ..tensor._base import TensorBase, TensorT
from ._errors import QuantizationError
from ._layout import check_finite, layout
from ._scheme import QParams, QuantParam, QuantScheme

__all__ = ["compute_range", "compute_qparams", "qparams_of_range", "scale_eps"]


def scale_eps(param: QuantParam) -> float:
    """The smallest scale :func:`compute_qparams` gives: float32's machine epsilon (PyTorch's observers clamp the
    scale to ``torch.finfo(torch.float32).eps``), or float16's smallest normal number (6.1e-5) for float16
    scales, which could not hold a smaller one."""
    return float(np.finfo(np.float32).eps) if param is not QuantParam.F16 else float(np.finfo(np.float16).tiny)


def compute_range(scheme: QuantScheme, tensor: TensorT) -> tuple[TensorT, TensorT]:
    """The minimum and maximum of ``tensor`` per scale of ``scheme``'s level (Burn's ``compute_range``; what a
    min-max observer records).

    Args:
        scheme: the scheme (only its level is used).
        tensor: a Float tensor with finite values.

    Returns:
        ``(min, max)``: Float tensors (the tensor's float type, on its device, untracked) of the scale's shape:
        ``[1]`` (tensor level), ``[shape[axis]]`` (axis level), ``shape`` with dim ``axis`` divided by the block
        size (block level).

    Raises:
        QuantizationError: a non-Float or empty tensor, NaN/inf values, or a level that does not fit its shape.
    """
    if not isinstance(tensor, TensorBase) or tensor.kind is not Float:
        raise QuantizationError(f"compute_range: expected a Float tensor, got {_what(tensor)}.")
    if tensor.num_elements() == 0:
        raise QuantizationError(f"compute_range: the tensor of shape {list(tensor.shape)} is empty; nothing to range.")
    lay = layout("compute_range", scheme, tensor.shape)
    x = tensor.detach()
    if scheme.level.kind == "tensor":
        lo, hi = x.min(), x.max()
    else:
        x = x.reshape(lay.view)
        lo, hi = x, x
        for d in lay.reduce_dims:
            lo = lo.min_dim(d)
            hi = hi.max_dim(d)
        lo, hi = lo.reshape(lay.scale_shape), hi.reshape(lay.scale_shape)
    # min and max propagate NaN and reach +-inf whenever the tensor holds one: checking them (a few values, one
    # host read) checks every element
    ends = lo.cat([lo.reshape((-1,)), hi.reshape((-1,))], 0)
    if tensor.device.backend.is_concrete(ends.inner().primitive) and not bool(ends.is_finite().all().into_scalar()):
        check_finite("compute_range", tensor, "the tensor")  # raises, counting the bad values
    return lo, hi


def compute_qparams(scheme: QuantScheme, min: TensorT, max: TensorT) -> QParams[TensorT]:  # noqa: A002
    """The scales (and zero points) that map ``[min, max]`` onto the scheme's integer range ``[qmin, qmax]``.

    Formulas (PyTorch's ``MinMaxObserver._calculate_qparams``, ONNX ``DynamicQuantizeLinear``, Burn's
    ``compute_q_params``):

    - symmetric (``Q8S``, ``Q4S``): ``scale = max(|min|, |max|) / qmax``, no zero point;
    - affine (``Q8F``, ``Q4F``): the range is widened to hold 0 (``min = min(min, 0)``, ``max = max(max, 0)``, so
      zero is exact), ``scale = (max - min) / (qmax - qmin)``, ``zero_point = clamp(qmin - round(min / scale),
      qmin, qmax)`` (round half to even).

    A zero range gives the smallest scale :func:`scale_eps` (PyTorch's choice), so zeros quantize to the zero point
    and back to 0. The scale is then rounded to the scheme's :class:`QuantParam` type.

    Args:
        scheme: the scheme.
        min: Float tensor (from :func:`compute_range` or an observer), finite.
        max: Float tensor of ``min``'s shape, finite, ``min <= max``.

    Returns:
        :class:`QParams` on ``min``'s device: ``scale`` in the scheme's scale type, ``zero_point`` int8 or ``None``.

    Raises:
        QuantizationError: tensors of another kind or shape, NaN/inf, ``min > max`` anywhere, a scale that overflows
            float16, or bfloat16 scales on a backend without bfloat16 (numpy).
    """
    for name, t in (("min", min), ("max", max)):
        if not isinstance(t, TensorBase) or t.kind is not Float:
            raise QuantizationError(f"compute_qparams: {name} must be a Float tensor, got {_what(t)}.")
        check_finite("compute_qparams", t, name)
    if min.shape != max.shape:
        raise QuantizationError(
            f"compute_qparams: min has shape {list(min.shape)} and max {list(max.shape)}; they must match."
        )
    backend = min.device.backend
    lo, hi = min.detach(), max.detach()
    if backend.is_concrete(lo.inner().primitive) and bool((lo > hi).any().into_scalar()):
        raise QuantizationError("compute_qparams: min > max somewhere; pass the range as (min, max).")
    return qparams_of_range(scheme, lo, hi)


def qparams_of_range(scheme: QuantScheme, lo: TensorT, hi: TensorT) -> QParams[TensorT]:
    """:func:`compute_qparams` without the checks of its arguments (finite, ``min <= max``, matching shapes), for a
    range that :func:`compute_range` just computed."""
    param_dtype = scheme.param.dtype
    backend = lo.device.backend
    if param_dtype not in backend.supported_dtypes:
        raise QuantizationError(
            f"compute_qparams: scales of type {param_dtype} need a backend that holds it; {backend.name} does not. "
            "Use QuantParam.F32 or F16, or the torch or jax backend."
        )
    qmin, qmax = scheme.value.range
    eps = scale_eps(scheme.param)
    if scheme.value.symmetric:
        amax = lo.abs().max_pair(hi.abs())
        scale = (amax / float(qmax)).clamp_min(eps)
        zero_point = None
    else:
        lo = lo.clamp_max(0.0)
        hi = hi.clamp_min(0.0)
        scale = ((hi - lo) / float(qmax - qmin)).clamp_min(eps)
    limit = float(np.finfo(np.float16).max)
    if (
        scheme.param is QuantParam.F16
        and backend.is_concrete(scale.inner().primitive)
        and float(scale.max().into_scalar()) > limit
    ):
        raise QuantizationError(
            f"compute_qparams: the range needs scales beyond the largest {param_dtype} ({limit:.6g}); use "
            "QuantParam.F32."
        )
    scale = scale.cast(param_dtype)
    if not scheme.value.symmetric:
        zp = (float(qmin) - (lo / scale.cast(lo.dtype)).round()).clamp(float(qmin), float(qmax))
        zero_point = zp.int().cast("int8")
    return QParams(scale, zero_point)


def _what(x: object) -> str:
    if isinstance(x, TensorBase):
        return f"a {x.kind.name} tensor"
    return type(x).__name__
