"""Quantization (Burn's ``burn_tensor::quantization``; PyTorch's ``torch.ao.quantization`` core): quantized tensors,
their schemes and parameters, the int8 kernels and fake quantization.

>>> import ember
>>> from ember.quantization import QuantScheme, QuantValue, QuantLevel
>>> dev = ember.device("numpy")
>>> x = ember.Tensor.from_floats([[0.5, -1.0], [0.25, 2.0]], dev)
>>> q = x.quantize_dynamic(QuantScheme(QuantValue.Q8S, QuantLevel.tensor()))
>>> q.values.tolist(), q.qparams.scale.tolist()   # scale = max|x| / 127
([[32, -64], [16, 127]], [0.015748031437397003])

**Schemes.** A :class:`QuantScheme` is a value type (:class:`QuantValue`: ``Q8S`` int8 symmetric in ``[-127, 127]``,
``Q8F`` int8 affine in ``[-128, 127]``, ``Q4S`` / ``Q4F`` the int4 pair, packed two per byte), a level
(:class:`QuantLevel`: one scale per tensor, per index of an axis, or per block of ``size`` along an axis) and the
scales' float type (:class:`QuantParam`). :class:`QParams` holds the scales and, for affine types, the int8 zero
points.

**Formulas.** ``quantize``: ``q = clamp(round_half_even(x / scale) + zero_point, qmin, qmax)``; ``dequantize``:
``(q - zero_point) * scale`` (ONNX ``QuantizeLinear`` / ``DequantizeLinear``,
https://onnx.ai/onnx/operators/onnx__QuantizeLinear.html, and Burn's ``QuantScheme``; Burn rounds half away from
zero, Ember rounds half to even as ONNX, numpy and PyTorch do). :func:`compute_qparams` follows PyTorch's
``MinMaxObserver`` and ONNX ``DynamicQuantizeLinear``: symmetric ``scale = max|x| / qmax``; affine over the range
widened to hold 0, ``scale = (max - min) / (qmax - qmin)``, ``zero_point = qmin - round(min / scale)``; a zero range
gets the smallest scale :func:`scale_eps` (float32's epsilon, as PyTorch). NaN or infinite input raises
:class:`QuantizationError`; values beyond the range saturate.

**Kernels.** The backend primitives (:class:`~ember.backend.contract.QuantOps`: ``quantize``, ``dequantize``,
``int_matmul``) have one kernel per backend. ``int_matmul`` (int8 x int8 -> int32, exact) is ``torch._int_mm`` on
torch (CPU, and CUDA for more than 16 rows and ``k``, ``n`` multiples of 8), XLA's integer ``dot_general`` with an
int32 result on jax, and on numpy, which has no integer BLAS (``np.matmul`` on ints is a plain loop, ~7x slower
than float32 BLAS here), a float32/float64 BLAS product of the int8 values, exact at these sizes, so it runs at
float speed. :func:`quantized_matmul` and :func:`quantized_linear` take the int8 kernel when the scales factor out
of the reduction (``a`` per tensor or per row, ``b`` symmetric per tensor or per column); other schemes take the
documented fallback, dequantize and multiply in float (the same numbers up to float rounding). Weight-only
:func:`quantized_linear` (no activation scheme) always dequantizes the weight and multiplies in float: it saves the
memory of the stored weight, not time.

``quantized_conv2d`` (int8 activations per tensor, affine or symmetric, x int8 weights symmetric per output channel
-> int32 accumulation -> float, or int8 requantized; ONNX ``QLinearConv``) is oneDNN's int8 convolution on torch
CPU (``torch.ops.onednn.qconv2d_pointwise``, the weight prepacked once and kept with the quantized weight), XLA's
integer convolution (``lax.conv_general_dilated`` with an int32 result) on jax, and on numpy the documented
fallback: the integer values convolve in float32 BLAS, which runs at float speed and gives nothing over
dequantizing (exact while ``channels_in / groups * kernel_h * kernel_w * 255 * 128 <= 2**24``, float32's rounding
of the sums beyond). The
:func:`quantized_conv2d` function takes the int8 kernel for those schemes and the float fallback for others; a
static :class:`QuantizedConv2d` / :class:`QuantizedConv1d` (calibrated input qparams) runs on it.

**Autodiff.** Quantized tensors carry no graph; under ``Autodiff`` the primitives run on the inner backend and the
results live on the autodiff device, untracked. :func:`fake_quantize` is the differentiable one: quantize then
dequantize, with the straight-through gradient (zero where the value saturates), for quantization-aware training.

**Modules and records.** A ``Param`` or ``RunningState`` may hold a :class:`QuantizedTensor` (moves, ``valid()``,
``fork`` and records follow it); records store its integers and scales as they are with every recorder
(``docs/record-format.md``, section 1.1). ``ember_jax.jit`` carries quantized tensors in and out of a compiled step,
as arguments or held by a ``Param`` (a ``RunningState`` holding one is not carried yet). The module-level
workflow (``Quantizer``, calibration observers, QAT, quantized layers) builds on this core.

**Layers.** The tensor-level core lives in the private ``ember._quantization`` (below ``ember.module``, which
imports it for parameters and records); this package re-exports it with the module-level workflow, which builds on
``ember.module`` and ``ember.nn``.

Every other tensor op on a :class:`QuantizedTensor` raises :class:`QuantizationError` telling to call
``.dequantize()`` first: no op silently computes on the integers.
"""


from __future__ import annotations

from .._quantization._conv import quantized_conv2d
from .._quantization._errors import QuantizationError
from .._quantization._fake import fake_quantize
from .._quantization._matmul import int_path_applies, quantized_linear, quantized_matmul
from .._quantization._pack import pack_int4, unpack_int4
from .._quantization._qtensor import QuantizedTensor
from .._quantization._quantize import dequantize, quantize, quantize_dynamic
from .._quantization._range import compute_qparams, compute_range, scale_eps
from .._quantization._scheme import QParams, QuantLevel, QuantParam, QuantScheme, QuantValue
from ._layers import InputQuant, QuantizedConv1d, QuantizedConv2d, QuantizedEmbedding, QuantizedLinear
from ._observed import FakeQuantized, Observed
from ._observers import Calibration, MinMaxObserver, MovingAverageObserver, Observer, PercentileObserver
from ._quantizer import Quantizer, calibrate
from ._swap import PathFilter, swap_modules

__all__ = [
    "QuantValue",
    "QuantLevel",
    "QuantParam",
    "QuantScheme",
    "QParams",
    "QuantizedTensor",
    "QuantizationError",
    "compute_range",
    "compute_qparams",
    "scale_eps",
    "quantize",
    "quantize_dynamic",
    "dequantize",
    "quantized_matmul",
    "quantized_linear",
    "int_path_applies",
    "quantized_conv2d",
    "fake_quantize",
    "pack_int4",
    "unpack_int4",
    "Calibration",
    "Observer",
    "MinMaxObserver",
    "MovingAverageObserver",
    "PercentileObserver",
    "Quantizer",
    "calibrate",
    "InputQuant",
    "QuantizedLinear",
    "QuantizedConv1d",
    "QuantizedConv2d",
    "QuantizedEmbedding",
    "Observed",
    "FakeQuantized",
    "PathFilter",
    "swap_modules",
]
