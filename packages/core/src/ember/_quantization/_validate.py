"""Checks of the parts of a quantized tensor: scheme, qparams, values (shapes, kinds, dtypes, devices, ranges)."""

from __future__ import annotations

from typing import Any

from .._dtype import DType
from .._kind import Float, Int
from ..tensor._base import TensorBase
from ._errors import QuantizationError
from ._layout import Layout, layout
from ._pack import packed_size
from ._scheme import QParams, QuantScheme

__all__ = ["check_qparams", "check_parts"]

#: qparams whose values were read and found valid, by the ids of their tensors and the integer range (Ember
#: tensors are immutable, so a tensor checked once stays valid): a static layer's calibrated qparams are read on
#: its first call only, not on every call (four host reads each). The entries hold the tensors, so an id is never
#: reused while it is listed.
_VALUES_OK: dict[tuple[int, int, int, int], tuple[Any, Any]] = {}
_MAX_VALUES_OK = 4096


def check_qparams(op: str, scheme: QuantScheme, qparams: Any, shape: tuple[int, ...], device: Any) -> Layout:
    """The layout of ``scheme`` on ``shape`` after checking that ``qparams`` fit it.

    Raises:
        QuantizationError: ``qparams`` not a QParams; scale not Float or of the wrong shape, device or type; a zero
            point where the value type is symmetric or none where it is affine, or of the wrong kind/shape; a
            scale that is not positive and finite or a zero point out of range (checked outside compiled steps).
    """
    lay = layout(op, scheme, shape)
    if not isinstance(qparams, QParams):
        raise QuantizationError(f"{op}: expected QParams(scale, zero_point), got {type(qparams).__name__}.")
    s, zp = qparams.scale, qparams.zero_point
    if not isinstance(s, TensorBase) or s.kind is not Float:
        raise QuantizationError(f"{op}: qparams.scale must be a Float tensor, got {type(s).__name__}.")
    if tuple(s.shape) != lay.scale_shape:
        raise QuantizationError(
            f"{op}: {scheme.level!r} on shape {list(shape)} needs scales of shape {list(lay.scale_shape)}, got "
            f"{list(s.shape)}; compute them with compute_qparams(scheme, *compute_range(scheme, x))."
        )
    if s.device is not device:
        raise QuantizationError(f"{op}: qparams.scale is on {s.device}, the tensor on {device}; move one of them.")
    if s.dtype is not scheme.param.dtype:
        raise QuantizationError(
            f"{op}: the scheme stores scales as {scheme.param.dtype}, qparams.scale is {s.dtype}; cast it or change "
            "the scheme's param."
        )
    qmin, qmax = scheme.value.range
    if scheme.value.symmetric:
        if zp is not None:
            raise QuantizationError(
                f"{op}: {scheme.value.name} is symmetric (no zero point) but qparams has one; use an affine value "
                "type (Q8F, Q4F) or drop the zero point."
            )
    else:
        if not isinstance(zp, TensorBase) or zp.kind is not Int:
            raise QuantizationError(
                f"{op}: {scheme.value.name} is affine and needs an Int zero_point tensor, got {type(zp).__name__}."
            )
        if tuple(zp.shape) != lay.scale_shape or zp.device is not device:
            raise QuantizationError(
                f"{op}: zero_point must have the scale's shape {list(lay.scale_shape)} on {device}, got "
                f"{list(zp.shape)} on {zp.device}."
            )
    backend = device.backend
    key = (id(s), id(zp), qmin, qmax)
    hit = _VALUES_OK.get(key)
    if hit is not None and hit[0] is s and hit[1] is zp:
        return lay
    if backend.is_concrete(s.inner().primitive):
        sf = s.float() if s.dtype is not DType.BFLOAT16 else s.cast(backend.float_dtype)
        ok = (sf > 0.0).bool().all().into_scalar() and sf.is_finite().all().into_scalar()
        if not ok:
            raise QuantizationError(
                f"{op}: every scale must be positive and finite; got {sf.min().into_scalar()} "
                "as the smallest. compute_qparams never gives such scales."
            )
        if zp is not None:
            lo, hi = int(zp.min().into_scalar()), int(zp.max().into_scalar())
            if lo < qmin or hi > qmax:
                raise QuantizationError(
                    f"{op}: zero points must lie in [{qmin}, {qmax}] for {scheme.value.name}, found [{lo}, {hi}]."
                )
        if len(_VALUES_OK) >= _MAX_VALUES_OK:
            _VALUES_OK.clear()
        _VALUES_OK[key] = (s, zp)
    return lay


def check_parts(values: Any, shape: tuple[int, ...], scheme: Any, qparams: Any) -> None:
    """Check the parts of a ``QuantizedTensor``.

    Raises:
        QuantizationError: values not an Int tensor of the storage type and shape the scheme needs, or qparams
            that do not fit (see :func:`check_qparams`).
    """
    op = "QuantizedTensor"
    if not isinstance(scheme, QuantScheme):
        raise QuantizationError(f"{op}: expected a QuantScheme, got {type(scheme).__name__}.")
    if not isinstance(values, TensorBase) or values.kind is not Int:
        raise QuantizationError(f"{op}: values must be an Int tensor, got {type(values).__name__}.")
    want = scheme.value.storage_dtype
    if values.dtype is not want:
        raise QuantizationError(f"{op}: {scheme.value.name} stores values as {want}, got {values.dtype}.")
    n = 1
    for d in shape:
        n *= d
    need = (packed_size(n),) if scheme.value.packed else tuple(shape)
    if tuple(values.shape) != need:
        raise QuantizationError(
            f"{op}: {scheme.value.name} values of a {list(shape)} tensor have shape {list(need)}, got "
            f"{list(values.shape)}."
        )
    check_qparams(op, scheme, qparams, tuple(shape), values.device)
