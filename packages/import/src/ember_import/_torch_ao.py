"""PyTorch dynamically quantized ``Linear`` weights onto Ember's quantized layers.

A ``torch.ao.nn.quantized.dynamic.Linear`` (what ``torch.ao.quantization.quantize_dynamic`` puts in place of an
``nn.Linear``) saves, in its ``state_dict``, ``<prefix>._packed_params._packed_params = (weight, bias)`` with
``weight`` a ``torch.qint8`` tensor ``[out_features, in_features]`` (per tensor or per output channel) and
``bias`` float32 ``[out_features]`` or ``None``, plus ``<prefix>._packed_params.dtype``. Read through
:func:`~ember_import.pytorch.read_pytorch` (the safe unpickler: ``_pt_quantized.py``), the integers arrive as
``<prefix>._packed_params._packed_params.0.int_repr`` with their scale and zero point.

:func:`load_dynamic_linears` turns each such entry into an :class:`ember.quantization.QuantizedLinear` with
dynamic int8 input quantization, the weight transposed to Ember's ``[d_input, d_output]`` layout (integers are
copied exactly; per-channel scales then run along dim 1). The value type is ``Q8S`` when every zero point is 0
and no integer is -128 (PyTorch's ``per_tensor_symmetric`` weight observer can produce -128: such a weight is
``Q8F`` with a zero point of 0, exact too, and takes the float fallback of the int8 matmul).
"""

from __future__ import annotations

import os
from typing import Any, cast

import numpy as np

from ember import Int, Tensor
from ember.module import Param
from ember.quantization import (
    InputQuant,
    QParams,
    QuantizedLinear,
    QuantizedTensor,
    QuantLevel,
    QuantScheme,
    QuantValue,
)

from ._errors import ModelImportError
from ._imported import ImportedFile
from ._pt import read_pytorch

__all__ = ["load_dynamic_linears"]

_PACKED = "._packed_params._packed_params"


def load_dynamic_linears(source: str | os.PathLike[str] | ImportedFile, device: Any, *,
                         activation: QuantScheme | None = None) -> dict[str, QuantizedLinear]:
    """Every dynamically quantized Linear of a PyTorch ``state_dict`` file, by module prefix (``"0"``,
    ``"encoder.fc"``), as Ember :class:`~ember.quantization.QuantizedLinear` layers on ``device``.

    Args:
        source: a ``.pt`` file (read without torch, no code from it runs) or what
            :func:`~ember_import.pytorch.read_pytorch` returned.
        device: where the layers go.
        activation: the input scheme of the dynamic quantization (default ``Q8F`` per tensor; PyTorch's dynamic
            Linear uses ``quint8`` affine per tensor, the same integers shifted by 128).

    Returns:
        ``{prefix: QuantizedLinear}``; put each into the Ember model in place of its ``Linear`` (e.g.
        ``model.replace(fc=layers["fc"])``). Empty when the file holds no dynamically quantized Linear.

    Raises:
        ModelImportError: a packed entry whose parts are missing or malformed (names the key).
    """
    imported = source if isinstance(source, ImportedFile) else read_pytorch(source)
    values = imported.values
    tensors = imported.tensors
    act = activation if activation is not None else QuantScheme(QuantValue.Q8F, QuantLevel.tensor())
    out: dict[str, QuantizedLinear] = {}
    for key in tensors:
        if not key.endswith(_PACKED + ".0.int_repr"):
            continue
        prefix = key[: -len(_PACKED + ".0.int_repr")]
        base = prefix + _PACKED + ".0."
        q = np.asarray(tensors[key].to_numpy())
        if q.dtype != np.int8 or q.ndim != 2:
            raise ModelImportError(f"{imported.path}: '{key}' is {q.dtype} of rank {q.ndim}; a dynamic Linear's weight "
                                   "is a torch.qint8 matrix [out_features, in_features].")
        scheme_name = values.get(base + "qscheme")
        if scheme_name == "per_tensor_affine":
            scale = np.asarray([values[base + "scale"]], dtype=np.float32)
            zero = np.asarray([values[base + "zero_point"]], dtype=np.int64)
            level = QuantLevel.tensor()
        elif scheme_name in ("per_channel_affine", "per_channel_affine_float_qparams"):
            if values.get(base + "axis") != 0:
                raise ModelImportError(f"{imported.path}: '{prefix}' is quantized per channel along axis "
                                       f"{values.get(base + 'axis')}; a Linear weight's channels are axis 0.")
            scale = np.asarray(tensors[base + "scale"].to_numpy(), dtype=np.float32)
            zero = np.asarray(tensors[base + "zero_point"].to_numpy()).astype(np.int64)
            level = QuantLevel.axis(1)
        else:
            raise ModelImportError(f"{imported.path}: '{prefix}' has the quantization scheme {scheme_name!r}; "
                                   "expected per_tensor_affine or per_channel_affine.")
        if (scale <= 0).any() or not np.isfinite(scale).all() or (np.abs(zero) > 127).any():
            raise ModelImportError(f"{imported.path}: '{prefix}' has non-positive scales or zero points outside int8.")
        symmetric = not zero.any() and q.min() >= -127
        value = QuantValue.Q8S if symmetric else QuantValue.Q8F
        scheme = QuantScheme(value, level)
        dev = getattr(device, "inner", device)
        qp = QParams(Tensor.from_data(scale, dev),
                     None if symmetric else Tensor.from_data(zero.astype(np.int8), dev, Int).cast("int8"))
        weight = QuantizedTensor(Tensor.from_data(np.ascontiguousarray(q.T), dev, Int).cast("int8"),
                                 (q.shape[1], q.shape[0]), scheme, qp)
        bias_key = prefix + _PACKED + ".1"
        bias = None
        if bias_key in tensors:
            b = np.asarray(tensors[bias_key].to_numpy(), dtype=np.float32)
            if b.shape != (q.shape[0],):
                raise ModelImportError(f"{imported.path}: '{bias_key}' has shape {list(b.shape)}, expected "
                                       f"[{q.shape[0]}].")
            bias = Param(Tensor.from_data(b, dev))
        out[prefix] = QuantizedLinear(weight=Param(cast(Any, weight), require_grad=False), bias=bias,
                                      input=InputQuant(scheme=act))
    return out
