"""PyTorch quantized tensors in a ``.pt`` pickle (``torch._utils._rebuild_qtensor``), read without torch.

``torch.save`` writes a quantized tensor (``torch.qint8`` / ``torch.quint8``, e.g. the weight inside a
``torch.ao.nn.quantized.dynamic.Linear``'s ``_packed_params._packed_params``) as
``_rebuild_qtensor(storage, storage_offset, size, stride, quantizer_params, requires_grad, backward_hooks)``
(``torch/_utils.py``) with ``quantizer_params`` one of

- ``(torch.per_tensor_affine, scale: float, zero_point: int)``;
- ``(torch.per_channel_affine, scales: Tensor[float64], zero_points: Tensor[int64], axis: int)`` (also
  ``per_channel_affine_float_qparams``, whose zero points are floats).

The safe unpickler maps that global to :func:`rebuild_qtensor`, which checks each part and returns a plain dict,
so a quantized tensor flattens to the keys ``<key>.int_repr`` (the stored integers: ``TensorData`` int8 for
``qint8``, uint8 for ``quint8``), ``<key>.scale``, ``<key>.zero_point`` (a number, or a tensor per channel),
``<key>.axis`` (per channel) and ``<key>.qscheme``; the real value is ``(int_repr - zero_point) * scale``
(``torch.dequantize``). Nothing is called on the file's behalf.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from ember import DType

from ._errors import ModelImportError
from ._frozen import Frozen
from ._limits import summary
from ._views import PendingTensor

__all__ = ["QScheme", "QSCHEMES", "rebuild_qtensor"]


class QScheme(Frozen):
    """Marker for ``torch.per_tensor_affine`` and the other ``torch.qscheme`` objects; never callable."""

    __slots__ = ("name",)
    name: str

    def __init__(self, name: str) -> None:
        object.__setattr__(self, "name", name)

    def __repr__(self) -> str:
        return f"torch.{self.name}"


#: the ``torch.<qscheme>`` globals a quantized state_dict names, mapped to their markers
QSCHEMES: dict[tuple[str, str], QScheme] = {
    ("torch", n): QScheme(n) for n in ("per_tensor_affine", "per_channel_affine", "per_channel_affine_float_qparams",
                                        "per_tensor_symmetric", "per_channel_symmetric")
}


def _number(v: Any, what: str, origin: str, integer: bool = False) -> float | int:
    ok = isinstance(v, int) if integer else isinstance(v, (int, float))
    if isinstance(v, bool) or not ok or (isinstance(v, float) and not math.isfinite(v)):
        raise ModelImportError(f"{origin}: a quantized tensor's {what} is {summary(v)}, expected a finite "
                               f"{'int' if integer else 'number'}.")
    return v


def rebuild_qtensor(view: Callable[..., PendingTensor], origin: str, storage: Any, storage_offset: Any, size: Any,
                    stride: Any, quantizer_params: Any, requires_grad: Any = False,
                    backward_hooks: Any = None) -> dict[str, Any]:
    """The parts of one quantized tensor (see the module docstring); ``view`` is the unpickler's checked
    ``_rebuild_tensor_v2`` (it counts the bytes against the load's budget).

    Raises:
        ModelImportError: a storage that is not ``QInt8Storage`` / ``QUInt8Storage``, an unknown or malformed
            ``quantizer_params``, a non-finite or non-positive scale, per-channel scales whose length is not the
            size of dim ``axis``.
    """
    name = getattr(storage, "name", None)
    values = view(storage, storage_offset, size, stride)
    if values.dtype not in (DType.INT8, DType.UINT8) or name is None:
        raise ModelImportError(f"{origin}: _rebuild_qtensor on a storage of {values.dtype}; Ember reads quantized "
                               "tensors stored as torch.qint8 or torch.quint8 only.")
    if not isinstance(quantizer_params, tuple) or not quantizer_params or not isinstance(quantizer_params[0],
                                                                                         QScheme):
        raise ModelImportError(f"{origin}: _rebuild_qtensor got quantizer parameters {summary(quantizer_params)}; "
                               "expected (torch.<qscheme>, scale, zero_point[, axis]).")
    scheme = quantizer_params[0].name
    if scheme == "per_tensor_affine" and len(quantizer_params) == 3:
        scale = _number(quantizer_params[1], "scale", origin)
        zero = _number(quantizer_params[2], "zero_point", origin, integer=True)
        if scale <= 0:
            raise ModelImportError(f"{origin}: a quantized tensor's scale is {scale}, expected a positive number.")
        return {"int_repr": values, "scale": float(scale), "zero_point": int(zero), "qscheme": scheme}
    if scheme in ("per_channel_affine", "per_channel_affine_float_qparams") and len(quantizer_params) == 4:
        _, scales, zeros, axis = quantizer_params
        axis = _number(axis, "axis", origin, integer=True)
        rank = len(values.shape)
        if not isinstance(scales, PendingTensor) or not isinstance(zeros, PendingTensor):
            raise ModelImportError(f"{origin}: per-channel quantizer parameters hold {type(scales).__name__} and "
                                   f"{type(zeros).__name__}, expected two tensors.")
        if not 0 <= int(axis) < rank or scales.shape != (values.shape[int(axis)],) or zeros.shape != scales.shape:
            raise ModelImportError(
                f"{origin}: a per-channel quantized tensor of size {list(values.shape)} has axis {axis} and "
                f"{list(scales.shape)} scales / {list(zeros.shape)} zero points; expected one per index of that axis."
            )
        return {"int_repr": values, "scale": scales, "zero_point": zeros, "axis": int(axis), "qscheme": scheme}
    raise ModelImportError(
        f"{origin}: a quantized tensor uses torch.{scheme} with {len(quantizer_params) - 1} parameters; Ember reads "
        "per_tensor_affine (scale, zero_point) and per_channel_affine (scales, zero_points, axis)."
    )
